package config

import (
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
)

// Every scalar key has a narrowing rule: a key added without one would be
// left as the operator set it, which is safe, but a project could not
// narrow it either, and the omission should be a decision.
func TestNarrowRulesCoverEveryKey(t *testing.T) {
	var ruled []string
	for _, r := range narrowRules {
		ruled = append(ruled, r.key)
	}
	for key := range keyKinds() {
		if !slices.Contains(ruled, key) {
			t.Errorf("%s has no narrowing rule", key)
		}
	}
}

// Stricter wins on every key; what would widen is kept as
// the operator had it and reported with the key's name.
func TestNarrowedBy(t *testing.T) {
	root, sub := t.TempDir(), ""
	sub = filepath.Join(root, "sub")
	if err := os.Mkdir(sub, 0o755); err != nil {
		t.Fatal(err)
	}
	outside := t.TempDir()
	link := filepath.Join(root, "link")
	if err := os.Symlink(outside, link); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name    string
		project func(*Tools)
		want    func(*Tools) // the narrowed configuration, from the operator's
		ignored string       // the key named in the one ignored entry; "" for none
	}{
		{"CFG-TOOLS-01 lower mode", func(p *Tools) { p.Mode = ModeParseOnly }, func(c *Tools) { c.Mode = ModeParseOnly }, ""},
		{"CFG-TOOLS-01 disabled", func(p *Tools) { p.Mode = ModeDisabled }, func(c *Tools) { c.Mode = ModeDisabled }, ""},
		{"CFG-APR-01 approval auto", func(p *Tools) { p.Approval.Mode = ApprovalAuto }, nil, "tools.approval.mode"},
		{"CFG-APR-01 approval deny", func(p *Tools) { p.Approval.Mode = ApprovalDeny }, func(c *Tools) { c.Approval.Mode = ApprovalDeny }, ""},
		{"CFG-APR-01 denylist emptied", func(p *Tools) { p.Approval.Denylist = []string{} }, nil, "tools.approval.denylist"},
		{"CFG-APR-01 denylist grown", func(p *Tools) { p.Approval.Denylist = []string{"run_command", "write_file"} },
			func(c *Tools) { c.Approval.Denylist = []string{"run_command", "write_file"} }, ""},
		{"CFG-APR-01 allowlist grown", func(p *Tools) { p.Approval.Allowlist = []string{"read_file", "run_command"} }, nil, "tools.approval.allowlist"},
		{"CFG-APR-01 allowlist emptied", func(p *Tools) { p.Approval.Allowlist = nil }, func(c *Tools) { c.Approval.Allowlist = []string{} }, ""},
		{"CFG-APR-01 approvals off", func(p *Tools) { p.Approval.Enabled = false }, func(c *Tools) { c.Approval.Enabled = false }, ""},
		{"CFG-APR-01 no prompts for side effects", func(p *Tools) { p.Approval.PromptSideEffects = false }, nil, "tools.approval.prompt_side_effects"},
		{"CFG-APR-01 no auto-approved new files", func(p *Tools) { p.Approval.AutoApproveNewFiles = false },
			func(c *Tools) { c.Approval.AutoApproveNewFiles = false }, ""},
		{"CFG-APR-01 code patterns dropped", func(p *Tools) { p.Approval.CodePatterns = nil }, nil, "tools.approval.code_patterns"},
		{"CFG-SBX-01 absolute paths", func(p *Tools) { p.Sandbox.AllowAbsolute = true }, nil, "tools.sandbox.allow_absolute"},
		{"CFG-SBX-01 no default denies", func(p *Tools) { p.Sandbox.IncludeDefaultDenies = false }, nil, "tools.sandbox.include_default_denies"},
		{"CFG-SBX-01 more denied patterns", func(p *Tools) { p.Sandbox.DeniedPatterns = []string{"secrets/**"} },
			func(c *Tools) { c.Sandbox.DeniedPatterns = []string{"secrets/**"} }, ""},
		{"CFG-SBX-01 read-only dropped", func(p *Tools) { p.Sandbox.ReadOnlyPatterns = []string{"**/.git"} }, nil, "tools.sandbox.read_only_patterns"},
		{"CFG-SBX-01 root inside", func(p *Tools) { p.Sandbox.AllowedRoots = []string{sub} }, func(c *Tools) { c.Sandbox.AllowedRoots = []string{sub} }, ""},
		{"CFG-SBX-01 root above", func(p *Tools) { p.Sandbox.AllowedRoots = []string{filepath.Dir(root)} }, nil, "tools.sandbox.allowed_roots"},
		{"CFG-SBX-01 root through a link", func(p *Tools) { p.Sandbox.AllowedRoots = []string{link} }, nil, "tools.sandbox.allowed_roots"},
		{"CFG-SBX-01 one root of two outside", func(p *Tools) { p.Sandbox.AllowedRoots = []string{sub, outside} },
			func(c *Tools) { c.Sandbox.AllowedRoots = []string{sub} }, "tools.sandbox.allowed_roots"},
		{"CFG-SBX-01 longer paths", func(p *Tools) { p.Sandbox.MaxPathDepth = 1000 }, nil, "tools.sandbox.max_path_depth"},
		{"CFG-TMO-01 shorter timeout", func(p *Tools) { p.Timeouts.ShellCommandsSeconds = 5 }, func(c *Tools) { c.Timeouts.ShellCommandsSeconds = 5 }, ""},
		{"CFG-TMO-01 longer timeout", func(p *Tools) { p.Timeouts.DefaultSeconds = 3600 }, nil, "tools.timeouts.default_seconds"},
		{"CFG-OUT-01 more output", func(p *Tools) { p.Output.MaxBytes = 1 << 30 }, nil, "tools.output.max_bytes"},
		{"CFG-READ-01 smaller reads", func(p *Tools) { p.ReadFile.MaxFileReadBytes = 10 }, func(c *Tools) { c.ReadFile.MaxFileReadBytes = 10 }, ""},
		{"CFG-PATCH-01 more files", func(p *Tools) { p.ApplyPatch.MaxFiles = 1 << 20 }, nil, "tools.apply_patch.max_files"},
		{"CFG-ENV-01 keep a secret", func(p *Tools) { p.Environment.Keep = []string{"SSH_AUTH_SOCK", "GITHUB_TOKEN"} }, nil, "tools.environment.keep"},
		{"CFG-ENV-01 hide more", func(p *Tools) { p.Environment.Denylist = []string{"CORP_*"} }, func(c *Tools) { c.Environment.Denylist = []string{"CORP_*"} }, ""},
		{"CFG-TOOLS-01 parallel", func(p *Tools) { p.AllowParallel = true }, nil, "tools.allow_parallel"},
		{"CFG-TOOLS-01 bigger batches", func(p *Tools) { p.MaxToolCallsPerBatch = 100 }, nil, "tools.max_tool_calls_per_batch"},
		{"override denied", func(p *Tools) { p.Overrides["write_file"] = Override{Denied: new(true)} },
			func(c *Tools) { c.Overrides["write_file"] = Override{Denied: new(true)} }, ""},
		{"override lifts approval", func(p *Tools) { p.Overrides["run_command"] = Override{RequiresApproval: new(false)} }, nil, "tools.overrides.run_command.requires_approval"},
		{"override undenies", func(p *Tools) { p.Overrides["run_command"] = Override{Denied: new(false)} }, nil, "tools.overrides.run_command.denied"},
		{"override short timeout", func(p *Tools) { p.Overrides["read_file"] = Override{TimeoutSeconds: new(3)} },
			func(c *Tools) { c.Overrides["read_file"] = Override{TimeoutSeconds: new(3)} }, ""},
		{"override long timeout", func(p *Tools) { p.Overrides["read_file"] = Override{TimeoutSeconds: new(31)} }, nil, "tools.overrides.read_file.timeout_seconds"},
		{"CFG-TOOLS-02 definitions", func(p *Tools) {
			p.Definitions = []Definition{{Name: "x", Parameters: map[string]any{"type": "object"}}}
		}, nil, "tools.definitions"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			operator := withRoots(root)
			p := operator.clone()
			tt.project(&p.Tools)
			want := operator.clone()
			if tt.want != nil {
				tt.want(&want.Tools)
			}
			before := operator.clone()
			got, ignored := operator.NarrowedBy(p)
			if !reflect.DeepEqual(got, want) {
				t.Errorf("narrowed\n got %+v\nwant %+v", got.Tools, want.Tools)
			}
			if !reflect.DeepEqual(operator, before) {
				t.Errorf("NarrowedBy changed the operator's configuration")
			}
			switch {
			case tt.ignored == "" && len(ignored) > 0:
				t.Errorf("ignored %q, want nothing", ignored)
			case tt.ignored != "" && (len(ignored) != 1 || !strings.HasPrefix(ignored[0], tt.ignored+": ")):
				t.Errorf("ignored %q, want one entry for %s", ignored, tt.ignored)
			}
		})
	}
}

// Keys a project leaves alone change nothing, even where the operator
// chose values less strict than the defaults; what the operator already
// narrowed a project cannot widen back.
func TestNarrowedByUnchanged(t *testing.T) {
	c := withRoots(t.TempDir())
	c.Tools.Mode = ModeParseOnly
	c.Tools.Approval.Mode = ApprovalAuto
	c.Tools.Timeouts.ShellCommandsSeconds = 3600
	c.Tools.Overrides["run_command"] = Override{RequiresApproval: new(false)}
	got, ignored := c.NarrowedBy(c.clone())
	if !reflect.DeepEqual(got, c) || len(ignored) > 0 {
		t.Errorf("narrowed by itself: %+v, ignored %q", got.Tools, ignored)
	}
	p := c.clone()
	p.Tools.Mode = ModeEnabled
	if got, ignored := c.NarrowedBy(p); got.Tools.Mode != ModeParseOnly || len(ignored) != 1 || !strings.HasPrefix(ignored[0], "tools.mode: ") {
		t.Errorf("mode enabled over parse_only: %q, ignored %q", got.Tools.Mode, ignored)
	}
}

// A project file cannot move the journal, and can only
// keep less of it.
func TestNarrowedByJournal(t *testing.T) {
	tests := []struct {
		name    string
		project func(*Journal)
		want    func(*Journal)
		ignored string
	}{
		{"move the journal", func(p *Journal) { p.Path = "journal.db" }, nil, "journal.path"},
		{"journal in memory", func(p *Journal) { p.Path = ":memory:" }, nil, "journal.path"},
		{"smaller pre-images", func(p *Journal) { p.MaxPreimageBytes = 1024 }, func(c *Journal) { c.MaxPreimageBytes = 1024 }, ""},
		{"bigger pre-images", func(p *Journal) { p.MaxPreimageBytes = 1 << 30 }, nil, "journal.max_preimage_bytes"},
		{"shorter retention", func(p *Journal) { p.RetentionDays = 1 }, func(c *Journal) { c.RetentionDays = 1 }, ""},
		{"longer retention", func(p *Journal) { p.RetentionDays = 3650 }, nil, "journal.retention_days"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			operator := Default()
			operator.Journal.Path = "/var/lib/toolhost/journal.db"
			p := operator.clone()
			tt.project(&p.Journal)
			want := operator.clone()
			if tt.want != nil {
				tt.want(&want.Journal)
			}
			got, ignored := operator.NarrowedBy(p)
			if !reflect.DeepEqual(got.Journal, want.Journal) {
				t.Errorf("narrowed %+v, want %+v", got.Journal, want.Journal)
			}
			switch {
			case tt.ignored == "" && len(ignored) > 0:
				t.Errorf("ignored %q, want nothing", ignored)
			case tt.ignored != "" && (len(ignored) != 1 || !strings.HasPrefix(ignored[0], tt.ignored+": ")):
				t.Errorf("ignored %q, want one entry for %s", ignored, tt.ignored)
			}
		})
	}
}
