package engine

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// issue 10 item 2: a write that would lay out a git directory (git opens
// it as a bare repository and runs its core.fsmonitor) always asks a
// person, whatever the approval mode, allowlist or prompt_side_effects
// say; deny mode and the denylist still deny. What is on disk and what
// the batch's earlier calls write both count.
func TestGitLayoutAlwaysAsks_Issue10Item2(t *testing.T) {
	write := func(id, path string) Call {
		raw, _ := json.Marshal(map[string]string{"path": path, "content": "ref: refs/heads/main\n"})
		return call(id, "write_file", string(raw))
	}
	patch := func(id, path string) Call {
		raw, _ := json.Marshal(map[string]string{"patch": "LP1\nF " + path + "\nT\nref: refs/heads/main\n.\nEND\n"})
		return call(id, "apply_patch", string(raw))
	}
	const becomes = "vendor/ would become a git repository (HEAD beside objects/ and refs/): git run there could execute code from it"
	auto := func(p *Policy) { p.Approval = ApprovalAuto }
	tests := []struct {
		name   string
		disk   []string // directories made before planning
		policy func(*Policy)
		calls  []Call
		want   string
		reason string // the last call's confirmation reason or error message
	}{
		{"HEAD beside objects and refs, auto mode", []string{"vendor/objects", "vendor/refs"}, auto,
			[]Call{write("1", "vendor/HEAD")}, "confirm", becomes},
		{"HEAD, new-file auto-approval", []string{"vendor/objects", "vendor/refs"}, nil,
			[]Call{write("1", "vendor/HEAD")}, "confirm", becomes},
		{"HEAD, allowlisted", []string{"vendor/objects", "vendor/refs"}, func(p *Policy) { p.Allowlist = []string{"write_file"} },
			[]Call{write("1", "vendor/HEAD")}, "confirm", becomes},
		{"HEAD, prompt_side_effects off", []string{"vendor/objects", "vendor/refs"}, func(p *Policy) { p.SideEffectsUnprompted = true },
			[]Call{write("1", "vendor/HEAD")}, "confirm", becomes},
		{"HEAD, allowlisted in deny mode", []string{"vendor/objects", "vendor/refs"}, func(p *Policy) { p.Approval = ApprovalDeny; p.Allowlist = []string{"write_file"} },
			[]Call{write("1", "vendor/HEAD")}, "confirm", becomes},
		{"deny mode still denies", []string{"vendor/objects", "vendor/refs"}, func(p *Policy) { p.Approval = ApprovalDeny },
			[]Call{write("1", "vendor/HEAD")}, "pre_resolved:SandboxViolation", "approval mode is deny"},
		{"the denylist still denies", []string{"vendor/objects", "vendor/refs"}, func(p *Policy) { p.Approval = ApprovalAuto; p.Denylist = []string{"write_file"} },
			[]Call{write("1", "vendor/HEAD")}, "pre_resolved:SandboxViolation", "denied by policy"},
		{"HEAD in any case", []string{"vendor/objects", "vendor/refs"}, auto,
			[]Call{write("1", "vendor/head")}, "confirm", becomes},
		{"objects beside HEAD and refs", []string{"vendor/refs"}, auto,
			[]Call{write("1", "vendor/HEAD"), write("2", "vendor/objects/info/alternates")}, "execute,confirm", becomes},
		{"refs completing the layout in one batch", nil, auto,
			[]Call{write("1", "vendor/HEAD"), write("2", "vendor/objects/x"), write("3", "vendor/refs/heads/main")}, "execute,execute,confirm", becomes},
		{"config beside objects and refs", []string{"vendor/objects", "vendor/refs"}, auto,
			[]Call{write("1", "vendor/config")}, "confirm", "vendor/ would hold a git config beside objects/ and refs/"},
		{"the root itself", []string{"objects", "refs"}, auto,
			[]Call{write("1", "HEAD")}, "confirm", "the root directory would become a git repository"},
		{"apply_patch names the file", []string{"vendor/objects", "vendor/refs"}, auto,
			[]Call{patch("1", "vendor/HEAD")}, "confirm", becomes},
		{"apply_patch's write counts for a later call", []string{"vendor/refs"}, auto,
			[]Call{patch("1", "vendor/HEAD"), write("2", "vendor/objects/x")}, "execute,confirm", becomes},
		{"a refused call counts for nothing", []string{"vendor/refs"}, auto,
			[]Call{write("1", "../vendor/HEAD"), write("2", "vendor/objects/x")}, "pre_resolved:SandboxViolation,execute", ""},
		{"no refs: not a git directory", []string{"vendor/objects"}, nil,
			[]Call{write("1", "vendor/HEAD")}, "execute", ""},
		{"a directory named HEAD is not one", []string{"vendor/objects", "vendor/refs"}, nil,
			[]Call{write("1", "vendor/HEAD/x")}, "execute", ""},
		{"elsewhere", []string{"vendor/objects", "vendor/refs"}, nil,
			[]Call{write("1", "vendor/README")}, "execute", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			pol := DefaultPolicy()
			if tt.policy != nil {
				tt.policy(&pol)
			}
			f := policyFixture(t, pol)
			for _, d := range tt.disk {
				if err := os.MkdirAll(filepath.Join(f.root, d), 0o755); err != nil {
					t.Fatal(err)
				}
			}
			p := f.eng.Plan(context.Background(), batch(tt.calls...))
			if got := dispositions(p); got != tt.want {
				t.Fatalf("dispositions %s, want %s (%+v)", got, tt.want, p.Calls[len(p.Calls)-1].Result)
			}
			last := p.Calls[len(p.Calls)-1]
			switch {
			case last.Confirmation != nil:
				if last.Confirmation.Reason != tt.reason && !strings.Contains(last.Confirmation.Reason, tt.reason) {
					t.Errorf("reason %q, want %q", last.Confirmation.Reason, tt.reason)
				}
				if !last.Confirmation.AlwaysAsk {
					t.Error("the confirmation is not marked always_ask")
				}
			case last.Result != nil && !strings.Contains(last.Result.Error.Message, tt.reason):
				t.Errorf("message %q, want %q", last.Result.Error.Message, tt.reason)
			}
		})
	}
}

// issue 10 item 2: a call writing a path that makes tools run code
// (tools.approval.code_patterns) is never auto-approved as only creating
// a new file, and the reason names the pattern; other new files still
// run unasked.
func TestCodePathsNotAutoApproved_Issue10Item2(t *testing.T) {
	tests := []struct {
		name   string
		policy func(*Policy)
		path   string
		want   string
		reason string
	}{
		{"envrc", nil, ".envrc", "confirm", "write_file writes .envrc, which matches **/.envrc (tools.approval.code_patterns): tools run code from such files"},
		{"nested envrc", nil, "sub/.envrc", "confirm", "**/.envrc"},
		{"editor tasks", nil, ".vscode/tasks.json", "confirm", "**/.vscode/**"},
		{"workflow", nil, ".github/workflows/ci.yml", "confirm", "**/.github/workflows/**"},
		{"shell rc", nil, "home/.bashrc", "confirm", "**/.bashrc"},
		{"case ignored", nil, ".VSCode/settings.json", "confirm", "**/.vscode/**"},
		{"a plain new file", nil, "notes.txt", "execute", ""},
		{"the operator emptied the list", func(p *Policy) { p.CodePatterns = []string{} }, ".envrc", "execute", ""},
		{"a pattern of the operator's", func(p *Policy) { p.CodePatterns = []string{"tools/*.sh"} }, "tools/x.sh", "confirm", "tools/*.sh"},
		{"auto mode runs it", func(p *Policy) { p.Approval = ApprovalAuto }, ".envrc", "execute", ""},
		{"allowlisted runs it", func(p *Policy) { p.Allowlist = []string{"write_file"} }, ".envrc", "execute", ""},
		{"no new-file auto-approval", func(p *Policy) { p.AutoApproveNewFiles = false }, ".envrc", "confirm", "has side effects"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			pol := DefaultPolicy()
			if tt.policy != nil {
				tt.policy(&pol)
			}
			f := policyFixture(t, pol)
			raw, _ := json.Marshal(map[string]string{"path": tt.path, "content": "echo hi\n"})
			p := f.eng.Plan(context.Background(), batch(call("1", "write_file", string(raw))))
			if got := dispositions(p); got != tt.want {
				t.Fatalf("dispositions %s, want %s (%+v)", got, tt.want, p.Calls[0].Result)
			}
			if c := p.Calls[0].Confirmation; c != nil && !strings.Contains(c.Reason, tt.reason) {
				t.Errorf("reason %q, want %q", c.Reason, tt.reason)
			}
		})
	}
}
