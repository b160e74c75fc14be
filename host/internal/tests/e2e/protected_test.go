package e2e

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// permissive is a workspace run under an operator configuration that
// allows everything it can: no approval asked, nothing denylisted, no
// read-only patterns. What it still refuses, the configuration cannot
// lift.
type permissive struct{ *workspace }

func newPermissive(t *testing.T) *permissive {
	t.Helper()
	return &permissive{newWorkspace(t).withConfig(t, `[tools.approval]
mode = "auto"
denylist = []

[tools.sandbox]
read_only_patterns = []
`)}
}

// call runs one tool call; these tests judge it by its result alone.
func (p *permissive) call(t *testing.T, tool, args string) result {
	t.Helper()
	r, _, _ := p.workspace.call(t, tool, args)
	return r
}

// wantViolation checks that r is a SandboxViolation whose message holds
// every one of want.
func wantViolation(t *testing.T, r result, want ...string) {
	t.Helper()
	if r.OK || r.Error == nil || r.Error.Kind != "SandboxViolation" {
		t.Fatalf("result %+v (error %+v), want a SandboxViolation", r, r.Error)
	}
	for _, w := range want {
		if !strings.Contains(r.Error.Message, w) {
			t.Errorf("message %q lacks %q", r.Error.Message, w)
		}
	}
}

// Under a configuration that approves every call
// and has no read-only patterns, a tool still cannot write toolhost's
// configuration file at any depth or git's internals of a nested
// repository; they stay readable.
func TestProtectedNamesThroughCLI(t *testing.T) {
	p := newPermissive(t)
	p.file(t, "sub/.git/config", "[core]\n")
	tests := []struct{ path, target string }{
		{"toolhost.toml", "toolhost.toml"},
		{"./././sub/toolhost.yaml", "sub/toolhost.yaml"},
		{"sub/.git/config", "sub/.git/config"},
		{"a/b/.git/hooks/pre-commit", "a/b/.git/hooks/pre-commit"},
	}
	for _, tt := range tests {
		t.Run(tt.path, func(t *testing.T) {
			r := p.call(t, "write_file", jsonArgs(t, map[string]any{
				"path": tt.path, "content": "[tools.approval]\nmode = \"auto\"\n[core]\nfsmonitor = \"touch PWNED\"\n", "create_dirs": true,
			}))
			wantViolation(t, r, tt.path)
			// Refused as a protected path: "Protected" from the sandbox,
			// or "ReadOnly" from the engine's check before the call runs.
			var d struct{ Reason string }
			json.Unmarshal(r.Error.Details, &d)
			if d.Reason != "Protected" && d.Reason != "ReadOnly" {
				t.Errorf("reason %q (details %s), want Protected", d.Reason, r.Error.Details)
			}
			got, err := os.ReadFile(filepath.Join(p.dir, tt.target))
			if tt.target == "sub/.git/config" {
				if string(got) != "[core]\n" {
					t.Errorf("%s = %q, %v", tt.target, got, err)
				}
			} else if !errors.Is(err, os.ErrNotExist) {
				t.Errorf("%s was written: %q, %v", tt.target, got, err)
			}
		})
	}
	if _, err := os.Lstat(filepath.Join(p.dir, "a")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("a directory of the refused write was made: %v", err)
	}
	r := p.call(t, "read_file", `{"path":"sub/.git/config"}`)
	if !r.OK || r.Content != "[core]\n" {
		t.Errorf("read sub/.git/config: %+v %+v (protected files stay readable)", r, r.Error)
	}
}

// One write_file cannot create a 20,000-level directory
// chain; the refusal names the limit and the key that sets it.
func TestPathLimitsThroughCLI(t *testing.T) {
	p := newPermissive(t)
	deep := strings.Repeat("d/", 20000) + "f.txt"
	r := p.call(t, "write_file", jsonArgs(t, map[string]any{"path": deep, "content": "x", "create_dirs": true}))
	wantViolation(t, r, "tools.sandbox.max_path_bytes", "4096", "40005 bytes")
	if len(r.Error.Message) > 2000 {
		t.Errorf("the message is %d bytes long; the path should be shortened in it", len(r.Error.Message))
	}
	r = p.call(t, "write_file", jsonArgs(t, map[string]any{"path": strings.Repeat("d/", 64) + "f.txt", "content": "x", "create_dirs": true}))
	wantViolation(t, r, "tools.sandbox.max_path_depth", "64", "65")
	if _, err := os.Lstat(filepath.Join(p.dir, "d")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("a directory was made: %v", err)
	}
}

// A path ending in a slash names a directory. Writing
// one does not create a file of that name, and reading a file through one
// is refused; listing a directory so named works.
func TestTrailingSlashThroughCLI(t *testing.T) {
	p := newPermissive(t)
	p.file(t, "file", "content\n")
	p.file(t, "dir/x.txt", "x\n")

	r := p.call(t, "write_file", `{"path":"newdir/","content":"x"}`)
	wantViolation(t, r, `"newdir/"`, "names a directory; to write a file give its name without the trailing slash")
	if _, err := os.Lstat(filepath.Join(p.dir, "newdir")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("newdir was created: %v", err)
	}

	r = p.call(t, "read_file", `{"path":"file/"}`)
	if r.OK || r.Error == nil || !strings.Contains(r.Error.Message, `"file/" ends in a slash, so it names a directory, but "file" is a file; drop the slash to read the file`) {
		t.Errorf("read_file file/: %+v %+v", r, r.Error)
	}
	if strings.Contains(r.Content, "content") {
		t.Errorf("read_file file/ read the file: %q", r.Content)
	}

	r = p.call(t, "list_directory", `{"path":"dir/"}`)
	if !r.OK || !strings.Contains(r.Content, "x.txt") {
		t.Errorf("list_directory dir/: %+v %+v", r, r.Error)
	}
}
