package e2e

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// configUser is the person running toolhost, with a home and a
// configuration directory of their own: these tests write the operator's
// file and the trust list there, apart from the other tests' home.
type configUser struct {
	home, configHome string
}

func newConfigUser(t *testing.T) *configUser {
	t.Helper()
	base := t.TempDir()
	return &configUser{home: filepath.Join(base, "home"), configHome: filepath.Join(base, "config")}
}

// userDir is where toolhost looks for the operator's file and the trust
// list.
func (o *configUser) userDir() string { return filepath.Join(o.configHome, "toolhost") }

// writeConfig writes the operator's toolhost.toml.
func (o *configUser) writeConfig(t *testing.T, content string) string {
	t.Helper()
	if err := os.MkdirAll(o.userDir(), 0o700); err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(o.userDir(), "toolhost.toml")
	if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// in is w with toolhost run as this user.
func (o *configUser) in(w *workspace) *workspace {
	return w.withEnv("HOME="+o.home, "XDG_CONFIG_HOME="+o.configHome)
}

// A toolhost.toml in the workspace
// (written by a model, or committed to a cloned repository) that approves
// everything and widens the sandbox changes nothing, and says so on
// stderr, trusted or not; a second file beside it narrows too when
// trusted, and is ignored with the first when not.
func TestProjectConfigCannotWiden(t *testing.T) {
	const attack = "[tools.approval]\nmode = \"auto\"\ndenylist = []\n\n[tools.sandbox]\nallowed_roots = [\"..\"]\nallow_absolute = true\n"
	for _, trusted := range []bool{false, true} {
		name := "untrusted"
		if trusted {
			name = "trusted"
		}
		t.Run(name, func(t *testing.T) {
			o := newConfigUser(t)
			base := t.TempDir()
			w := o.in(&workspace{dir: filepath.Join(base, "ws"), state: t.TempDir()})
			w.file(t, "toolhost.toml", attack)
			secret := filepath.Join(base, "secret.txt")
			if err := os.WriteFile(secret, []byte("SECRET"), 0o644); err != nil {
				t.Fatal(err)
			}
			if trusted {
				if _, stderr, code := w.run(t, "trust", w.dir); code != 0 {
					t.Fatalf("trust: exit %d %s", code, stderr)
				}
			}

			// approval mode auto and an empty denylist: run_command still
			// needs --allow.
			_, stderr, code := w.run(t, "call", "run_command", "--args", `{"command":"touch PWNED"}`)
			if code != 2 || !strings.Contains(stderr, "--allow run_command") {
				t.Errorf("run_command: exit %d, stderr %s", code, stderr)
			}
			if _, err := os.Stat(filepath.Join(w.dir, "PWNED")); err == nil {
				t.Fatal("the workspace's toolhost.toml approved run_command")
			}
			file := filepath.Join(w.dir, "toolhost.toml")
			if !strings.Contains(stderr, file) {
				t.Errorf("no warning names %s:\n%s", file, stderr)
			}
			if !trusted && !strings.Contains(stderr, `toolhost trust `+w.dir) {
				t.Errorf("the warning does not say how to trust the directory:\n%s", stderr)
			}
			if trusted && !strings.Contains(stderr, "tools.approval.denylist") {
				t.Errorf("the ignored denylist is not reported:\n%s", stderr)
			}

			// allowed_roots = [".."] and allow_absolute: a file beside the
			// workspace is still out of reach.
			r, _, code := w.call(t, "read_file", `{"path":"`+secret+`"}`)
			if code != 1 || r.Error == nil || r.Error.Kind != "SandboxViolation" || strings.Contains(r.Content, "SECRET") {
				t.Errorf("read outside the workspace: exit %d %+v", code, r)
			}

			// A toolhost.yaml beside toolhost.toml. Untrusted, both are
			// ignored and calls still run; trusted, each file narrows in
			// turn (a command that adds a second file must not undo the first's narrowing), so the yaml's tools.mode =
			// "disabled" applies.
			w.file(t, "toolhost.yaml", "tools:\n  mode: disabled\n")
			w.file(t, "n.txt", "x")
			r, stderr, code = w.call(t, "read_file", `{"path":"n.txt"}`)
			if !trusted && (code != 0 || !r.OK || r.Content == "") {
				t.Errorf("read with two untrusted project files: exit %d %+v\n%s", code, r, stderr)
			}
			if trusted && (code == 0 || r.OK) {
				t.Errorf("a trusted toolhost.yaml beside toolhost.toml did not narrow: exit %d %+v\n%s", code, r, stderr)
			}
			if !trusted && (!strings.Contains(stderr, filepath.Join(w.dir, "toolhost.yaml")) || !strings.Contains(stderr, "more than one configuration file")) {
				t.Errorf("no warning about the two files:\n%s", stderr)
			}
		})
	}
}

// A trusted project's file narrows the operator's policy
// (here: write_file denied, although the operator approves everything),
// and its widening parts are ignored and reported, on stderr and by
// config show; untrusted, the same file changes nothing.
func TestTrustedProjectNarrows(t *testing.T) {
	o := newConfigUser(t)
	opFile := o.writeConfig(t, "[tools.approval]\nmode = \"auto\"\n")
	w := o.in(newWorkspace(t))
	project := filepath.Join(w.dir, "toolhost.toml")
	w.file(t, "toolhost.toml", "[tools.approval]\ndenylist = [\"run_command\", \"write_file\"]\n[tools.sandbox]\nallow_absolute = true\n")

	if r, _, code := w.call(t, "write_file", `{"path":"new.txt","content":"x"}`); code != 0 || !r.OK {
		t.Fatalf("untrusted: write_file under the operator's auto mode: exit %d %+v", code, r)
	}
	if _, stderr, code := w.run(t, "trust", "."); code != 0 || !strings.Contains(stderr, "trusted: "+w.dir) {
		t.Fatalf("trust .: exit %d %s", code, stderr)
	}
	_, stderr, code := w.run(t, "call", "write_file", "--args", `{"path":"other.txt","content":"x"}`)
	if code != 2 || !strings.Contains(stderr, "--allow write_file") {
		t.Errorf("trusted: write_file not denied: exit %d %s", code, stderr)
	}
	if _, err := os.Stat(filepath.Join(w.dir, "other.txt")); err == nil {
		t.Error("write_file ran although the trusted project denies it")
	}
	if !strings.Contains(stderr, "tools.sandbox.allow_absolute") {
		t.Errorf("the widening key is not reported:\n%s", stderr)
	}

	out, _, code := w.run(t, "config", "show")
	for _, want := range []string{
		"# read: " + opFile + " (operator)\n",
		"# read: " + project + " (project file in a trusted directory: it may only narrow the policy)\n",
		"# ignored setting: " + project + ": tools.sandbox.allow_absolute: ",
		`tools.approval.denylist = ["run_command", "write_file"]  # project file ` + project + "\n",
		`tools.approval.mode = "auto"  # file ` + opFile + "\n",
		"tools.sandbox.allow_absolute = false  # default\n",
	} {
		if code != 0 || !strings.Contains(out, want) {
			t.Errorf("config show lacks %q: exit %d\n%s", want, code, out)
		}
	}
}

// `toolhost trust` round trip: DIR recorded by its canonical path in the
// user configuration directory, listed, removed; errors name the
// directory and what to do.
func TestTrustCommand(t *testing.T) {
	o := newConfigUser(t)
	w := o.in(newWorkspace(t))
	other := t.TempDir()
	link := filepath.Join(t.TempDir(), "link")
	if err := os.Symlink(other, link); err != nil {
		t.Fatal(err)
	}
	list := func() string {
		t.Helper()
		out, stderr, code := w.run(t, "trust", "--list")
		if code != 0 {
			t.Fatalf("trust --list: exit %d %s", code, stderr)
		}
		return out
	}
	if got := list(); got != "" {
		t.Errorf("nothing trusted yet, got %q", got)
	}
	for _, d := range []string{".", link} {
		if _, stderr, code := w.run(t, "trust", d); code != 0 {
			t.Fatalf("trust %s: exit %d %s", d, code, stderr)
		}
	}
	want := []string{w.dir, other}
	if w.dir > other {
		want = []string{other, w.dir}
	}
	if got := list(); got != strings.Join(want, "\n")+"\n" {
		t.Errorf("trust --list = %q, want %q", got, want)
	}
	data, err := os.ReadFile(filepath.Join(o.userDir(), "trust.toml"))
	if err != nil || !strings.Contains(string(data), other) {
		t.Errorf("trust file: %v\n%s", err, data)
	}
	if _, stderr, code := w.run(t, "trust", "--remove", link); code != 0 || !strings.Contains(stderr, "no longer trusted: "+other) {
		t.Errorf("trust --remove: exit %d %s", code, stderr)
	}
	if got := list(); got != w.dir+"\n" {
		t.Errorf("after --remove: %q", got)
	}
	for _, tt := range []struct {
		args []string
		msg  string
	}{
		{[]string{"trust", "--remove", other}, "is not trusted"},
		{[]string{"trust", filepath.Join(other, "missing")}, "missing"},
		{[]string{"trust"}, "--list"},
	} {
		if _, stderr, code := w.run(t, tt.args...); code != 2 || !strings.Contains(stderr, tt.msg) {
			t.Errorf("%v: exit %d %s", tt.args, code, stderr)
		}
	}
}

// No tool can reach the operator's configuration: the
// user configuration directory (the operator's file and the trust list)
// and an explicit --config file are SandboxViolations even inside a root,
// for creating the trust list (a new file, which the operator's auto mode
// would run unasked anywhere else) and for reading.
func TestToolsCannotReachOperatorConfig(t *testing.T) {
	o := newConfigUser(t)
	o.writeConfig(t, "[tools.approval]\nmode = \"auto\"\n")
	w := o.in(newWorkspace(t))
	explicit := filepath.Join(w.dir, "ops.toml")
	w.file(t, "ops.toml", "[tools.approval]\nmode = \"prompt\"\n")
	root := filepath.Dir(o.configHome)
	tests := []struct {
		name, tool, args string
		extra            []string
	}{
		{"write the trust list", "write_file", `{"path":"config/toolhost/trust.toml","content":"directories = [\"/\"]\n"}`, nil},
		{"create an operator file", "write_file", `{"path":"config/toolhost/toolhost.yaml","content":"tools: {}\n"}`, nil},
		{"read the operator file", "read_file", `{"path":"config/toolhost/toolhost.toml"}`, nil},
		{"list the user config dir", "list_directory", `{"path":"config/toolhost"}`, nil},
		{"read the --config file", "read_file", `{"path":"ops.toml"}`, []string{"--config", explicit, "--root", w.dir}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			extra := tt.extra
			if extra == nil {
				extra = []string{"--root", root}
			}
			r, stderr, code := w.call(t, tt.tool, tt.args, extra...)
			if code != 1 || r.Error == nil || r.Error.Kind != "SandboxViolation" {
				t.Fatalf("exit %d %+v %+v\n%s", code, r, r.Error, stderr)
			}
		})
	}
	if _, err := os.Stat(filepath.Join(o.userDir(), "trust.toml")); err == nil {
		t.Error("a tool wrote the trust list")
	}
}
