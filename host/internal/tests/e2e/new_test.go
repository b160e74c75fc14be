package e2e

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/toolhost/toolhost/internal/testenv"
)

// `toolhost new demo` writes a plugin that a user builds
// with its own Makefile, calls through `toolhost call`, and that passes
// `toolhost test` (its conformance case included) without a change. The
// scaffold lives outside the repository, so its SDK comes from the checkout
// the binary was built from.
func TestNewScaffoldBuildsCallsAndPasses(t *testing.T) {
	w := newWorkspace(t)
	_, stderr, code := w.run(t, "new", "demo")
	if code != 0 {
		t.Fatalf("toolhost new demo: exit %d\n%s", code, stderr)
	}
	plugin := filepath.Join(w.dir, "demo")
	for _, f := range []string{"main.go", "go.mod", "Makefile", "README.md", ".gitignore", "conformance/count.json"} {
		if _, err := os.Stat(filepath.Join(plugin, f)); err != nil {
			t.Errorf("scaffold lacks %s: %v", f, err)
		}
	}
	makeIn(t, plugin)

	w.file(t, "notes.txt", "alpha beta\ngamma\n")
	r, stderr, code := w.call(t, "demo", `{"path":"notes.txt"}`, "--plugins", plugin)
	if code != 0 || !r.OK || r.Content != "2 lines, 3 words, 17 bytes" {
		t.Fatalf("call demo: exit %d, %+v\n%s", code, r, stderr)
	}
	r, _, code = w.call(t, "demo", `{"path":"../outside.txt"}`, "--plugins", plugin)
	if code != 1 || r.OK || r.Error.Kind != "SandboxViolation" {
		t.Fatalf("call demo on ../outside.txt: exit %d, %+v; want a SandboxViolation", code, r)
	}

	out, stderr, code := runCommand(t, makeCommand(plugin, "test"))
	if code != 0 {
		t.Fatalf("make test (toolhost test demo.wasm) in a fresh scaffold: exit %d\n%s\n%s", code, out, stderr)
	}
	if !strings.Contains(out, "case:count") {
		t.Errorf("toolhost test did not run the scaffold's conformance case:\n%s", out)
	}
}

// A scaffold inside a toolhost checkout takes the SDK by a
// relative replace, so the two move together; --sdk names another one.
func TestNewReplacePath(t *testing.T) {
	clone := fakeCheckout(t)
	w := newWorkspace(t)
	dir := filepath.Join(clone, "tools", "mine")
	if _, stderr, code := w.run(t, "new", "mine", "--dir", dir); code != 0 {
		t.Fatalf("new inside a checkout: exit %d\n%s", code, stderr)
	}
	if mod := textOf(t, filepath.Join(dir, "go.mod")); !strings.Contains(mod, "=> ../..\n") {
		t.Errorf("go.mod inside a checkout should replace with ../..:\n%s", mod)
	}

	outside := filepath.Join(t.TempDir(), "other")
	if _, stderr, code := w.run(t, "new", "other", "--dir", outside, "--sdk", clone); code != 0 {
		t.Fatalf("new --sdk: exit %d\n%s", code, stderr)
	}
	if mod := textOf(t, filepath.Join(outside, "go.mod")); !strings.Contains(mod, "=> "+filepath.ToSlash(clone)+"\n") {
		t.Errorf("go.mod with --sdk should replace with %s:\n%s", clone, mod)
	}
	if mod := textOf(t, filepath.Join(outside, "go.mod")); !strings.Contains(mod, "go 1.99.0\n") {
		t.Errorf("go.mod should take the checkout's go directive:\n%s", mod)
	}
}

// What `toolhost new` refuses, each with a usage error
// naming the argument and what to do, and nothing written.
func TestNewRefuses(t *testing.T) {
	w := newWorkspace(t)
	w.file(t, "taken/keep.txt", "mine")
	// A link to an empty directory elsewhere, and a plugin directory.
	elsewhere := t.TempDir()
	if err := os.Symlink(elsewhere, filepath.Join(w.dir, "link")); err != nil {
		t.Fatal(err)
	}
	plugins := filepath.Join(w.dir, "plugins")
	if err := os.Mkdir(plugins, 0o755); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		args []string
		want []string
	}{
		{"upper case", []string{"new", "Demo"}, []string{`"Demo" is not a tool name`, "lower-case"}},
		{"leading digit", []string{"new", "1tool"}, []string{`"1tool" is not a tool name`}},
		{"too long", []string{"new", "a" + strings.Repeat("b", 64)}, []string{"is not a tool name", "1 to 64"}},
		{"path as name", []string{"new", "../x"}, []string{`"../x" is not a tool name`}},
		{"non-empty dir", []string{"new", "taken"}, []string{"taken exists and is not empty", "--dir"}},
		{"not a checkout", []string{"new", "x", "--dir", "fresh", "--sdk", "taken"}, []string{"--sdk taken", "not a toolhost checkout"}},
		{"symlink as the directory", []string{"new", "x", "--dir", "link"}, []string{"link is a symbolic link", elsewhere, "--dir"}},
		{"inside the plugin directory", []string{"new", "x", "--plugins", plugins, "--dir", filepath.Join(plugins, "x")}, []string{"inside the plugin directory", "--dir"}},
		{"inside the plugin directory by a link", []string{"new", "x", "--plugins", "link", "--dir", filepath.Join(elsewhere, "x")}, []string{"inside the plugin directory"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, stderr, code := w.run(t, tt.args...)
			if code != 2 {
				t.Fatalf("exit %d, want 2 (usage)\n%s", code, stderr)
			}
			for _, s := range tt.want {
				if !strings.Contains(stderr, s) {
					t.Errorf("stderr %q does not say %q", stderr, s)
				}
			}
		})
	}
	if got := textOf(t, filepath.Join(w.dir, "taken", "keep.txt")); got != "mine" {
		t.Errorf("refused scaffold changed an existing file: %q", got)
	}
	if entries, _ := os.ReadDir(elsewhere); len(entries) > 0 {
		t.Errorf("a scaffold went through a symbolic link into %s", elsewhere)
	}
	for _, d := range []string{"Demo", "1tool", "fresh", "plugins/x"} {
		if _, err := os.Stat(filepath.Join(w.dir, d)); err == nil {
			t.Errorf("refused scaffold created %s", d)
		}
	}
}

// fakeCheckout is the least a directory needs to be taken for a toolhost
// checkout: its go.mod and the SDK.
func fakeCheckout(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	if err := os.MkdirAll(filepath.Join(dir, "sdk"), 0o755); err != nil {
		t.Fatal(err)
	}
	for name, content := range map[string]string{
		"go.mod":      "module github.com/toolhost/toolhost\n\ngo 1.99.0\n",
		"sdk/tool.go": "package sdk\n",
	} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

func textOf(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// makeIn runs make in dir, as the plugin's author would; without make
// the test skips, or fails where make is required (testenv).
func makeIn(t *testing.T, dir string) {
	t.Helper()
	testenv.LookPath(t, "make", "apt-get install make (as root)")
	if out, stderr, code := runCommand(t, makeCommand(dir)); code != 0 {
		t.Fatalf("make in %s: exit %d\n%s\n%s", dir, code, out, stderr)
	}
}

// makeCommand is make with targets in dir. TOOLHOST is the binary under
// test, whatever the Makefile recorded.
func makeCommand(dir string, targets ...string) *exec.Cmd {
	cmd := exec.Command("make", append([]string{"-C", dir, "TOOLHOST=" + toolhost}, targets...)...)
	return cmd
}

// A toolhost checkout whose path holds a space
// gives a go.mod that Go still reads (the replace path quoted).
func TestNewOddCheckoutPath(t *testing.T) {
	clone := fakeCheckout(t)
	odd := filepath.Join(t.TempDir(), "my tools $HOME #1")
	if err := os.Symlink(clone, odd); err != nil {
		t.Fatal(err)
	}
	w := newWorkspace(t)
	dir := filepath.Join(t.TempDir(), "odd")
	if _, stderr, code := w.run(t, "new", "odd", "--dir", dir, "--sdk", odd); code != 0 {
		t.Fatalf("new --sdk %q: exit %d\n%s", odd, code, stderr)
	}
	cmd := exec.Command("go", "mod", "edit", "-json")
	cmd.Dir = dir
	out, err := cmd.CombinedOutput()
	if err != nil || !strings.Contains(string(out), odd) {
		t.Fatalf("go.mod does not parse, or lost the path %q: %v\n%s\n%s", odd, err, out, textOf(t, filepath.Join(dir, "go.mod")))
	}
}
