package e2e

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// The configuration from a user's side: config init writes every default,
// config show names each value's source, the file and the environment
// change what runs, and a misspelled key stops toolhost with its name.
func TestConfigCommands(t *testing.T) {
	w := newWorkspace(t)
	if _, stderr, code := w.run(t, "config", "init"); code != 0 {
		t.Fatalf("config init: exit %d %s", code, stderr)
	}
	if _, stderr, code := w.run(t, "config", "init"); code != 2 || !strings.Contains(stderr, "--force") {
		t.Errorf("second init: exit %d %s", code, stderr)
	}
	toml := filepath.Join(w.dir, "toolhost.toml")
	data, err := os.ReadFile(toml)
	if err != nil {
		t.Fatal(err)
	}
	data = []byte(strings.Replace(string(data), `mode = "prompt"`, `mode = "auto"`, 1))
	if err := os.WriteFile(toml, data, 0o644); err != nil {
		t.Fatal(err)
	}
	out, _, code := w.run(t, "config", "show")
	if code != 0 || !strings.Contains(out, `tools.approval.mode = "auto"  # file `+toml) {
		t.Fatalf("config show: exit %d\n%s", code, out)
	}

	// approval mode auto (from the file): a side-effecting call runs unasked.
	w.file(t, "n.txt", "x")
	if r, code := w.call(t, "read_file", `{"path":"n.txt"}`); code != 0 || !r.OK {
		t.Fatalf("read: %+v", r)
	}
	if r, code := w.call(t, "write_file", `{"path":"n.txt","content":"y"}`); code != 0 || !r.OK {
		t.Fatalf("write under approval mode auto: exit %d %+v", code, r.Error)
	}

	// The environment beats the file.
	cmd := exec.Command(toolhost, "--state-dir", w.state, "tools")
	cmd.Dir, cmd.Env = w.dir, append(os.Environ(), "TOOLHOST_TOOLS_MODE=disabled")
	if out, err := cmd.Output(); err != nil || strings.TrimSpace(string(out)) != "[]" {
		t.Errorf("tools with TOOLHOST_TOOLS_MODE=disabled: %v %s", err, out)
	}

	w.file(t, "toolhost.toml", "[tools.approval]\nmod = \"auto\"\n")
	if _, stderr, code := w.run(t, "tools"); code != 2 || !strings.Contains(stderr, `tools.approval.mod: unknown key; did you mean "tools.approval.mode"?`) {
		t.Errorf("misspelled key: exit %d %s", code, stderr)
	}
}
