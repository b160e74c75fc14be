package e2e

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// permissive is a workspace run under an operator configuration that
// allows everything it can: no approval asked, nothing denylisted, no
// read-only patterns. What it still refuses, the configuration cannot
// lift. The user's directories are temporary, so no real configuration
// is read.
type permissive struct {
	*workspace
	config string
	env    []string
}

func newPermissive(t *testing.T) *permissive {
	t.Helper()
	w := newWorkspace(t)
	home, xdg := t.TempDir(), t.TempDir()
	config := filepath.Join(t.TempDir(), "operator.toml")
	const toml = `[tools.approval]
mode = "auto"
denylist = []

[tools.sandbox]
read_only_patterns = []
`
	if err := os.WriteFile(config, []byte(toml), 0o644); err != nil {
		t.Fatal(err)
	}
	// The compiled-code cache is the one the other tests use, so that
	// each call does not compile its plugin again.
	cache := os.Getenv("TOOLHOST_CACHE_DIR")
	if cache == "" {
		if dir, err := os.UserCacheDir(); err == nil {
			cache = filepath.Join(dir, "toolhost")
		}
	}
	var env []string
	for _, kv := range os.Environ() {
		name, _, _ := strings.Cut(kv, "=")
		switch name {
		case "HOME", "XDG_CONFIG_HOME", "XDG_STATE_HOME", "TOOLHOST_CONFIG", "TOOLHOST_STATE_DIR", "TOOLHOST_CACHE_DIR":
			continue
		}
		env = append(env, kv)
	}
	env = append(env, "HOME="+home, "XDG_CONFIG_HOME="+xdg, "XDG_STATE_HOME="+filepath.Join(home, "state"), "TOOLHOST_CACHE_DIR="+cache)
	return &permissive{workspace: w, config: config, env: env}
}

// call runs one tool call under the permissive configuration.
func (p *permissive) call(t *testing.T, tool, args string) result {
	t.Helper()
	cmd := exec.Command(toolhost, "--config", p.config, "--state-dir", p.state, "call", tool, "--args", args)
	cmd.Dir, cmd.Env = p.dir, p.env
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Run(); err != nil {
		var ee *exec.ExitError
		if !errors.As(err, &ee) {
			t.Fatal(err)
		}
	}
	var r result
	if err := json.Unmarshal(out.Bytes(), &r); err != nil {
		t.Fatalf("call %s %s: stdout is not a result (%v)\nstdout: %s\nstderr: %s", tool, args, err, out.String(), errb.String())
	}
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

func args(t *testing.T, m map[string]any) string {
	t.Helper()
	b, err := json.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// Issue 10 items 1 and 2: under a configuration that approves every call
// and has no read-only patterns, a tool still cannot write toolhost's
// configuration file at any depth or git's internals of a nested
// repository; they stay readable.
func TestProtectedNamesThroughCLI_Issue10Item1(t *testing.T) {
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
			r := p.call(t, "write_file", args(t, map[string]any{
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

// Issue 10 item 10: one write_file cannot create a 20,000-level directory
// chain; the refusal names the limit and the key that sets it.
func TestPathLimitsThroughCLI_Issue10Item10(t *testing.T) {
	p := newPermissive(t)
	deep := strings.Repeat("d/", 20000) + "f.txt"
	r := p.call(t, "write_file", args(t, map[string]any{"path": deep, "content": "x", "create_dirs": true}))
	wantViolation(t, r, "tools.sandbox.max_path_bytes", "4096", "40005 bytes")
	if len(r.Error.Message) > 2000 {
		t.Errorf("the message is %d bytes long; the path should be shortened in it", len(r.Error.Message))
	}
	r = p.call(t, "write_file", args(t, map[string]any{"path": strings.Repeat("d/", 64) + "f.txt", "content": "x", "create_dirs": true}))
	wantViolation(t, r, "tools.sandbox.max_path_depth", "64", "65")
	if _, err := os.Lstat(filepath.Join(p.dir, "d")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("a directory was made: %v", err)
	}
}

// Issue 10 item 11: a path ending in a slash names a directory. Writing
// one does not create a file of that name, and reading a file through one
// is refused; listing a directory so named works.
func TestTrailingSlashThroughCLI_Issue10Item11(t *testing.T) {
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
