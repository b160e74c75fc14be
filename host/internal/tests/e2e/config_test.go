package e2e

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// The configuration from a user's side: config init writes every default
// into the user configuration directory, config show names the files read
// and each value's source, the file and the environment change what runs,
// and a misspelled key stops toolhost with its name.
func TestConfigCommands(t *testing.T) {
	o := newConfigUser(t)
	w := o.in(newWorkspace(t))
	if _, stderr, code := w.run(t, "config", "init"); code != 0 {
		t.Fatalf("config init: exit %d %s", code, stderr)
	}
	if _, stderr, code := w.run(t, "config", "init"); code != 2 || !strings.Contains(stderr, "--force") {
		t.Errorf("second init: exit %d %s", code, stderr)
	}
	if fi, err := os.Stat(o.userDir()); err != nil || fi.Mode().Perm() != 0o700 {
		t.Fatalf("user configuration directory: %v", err)
	}
	if _, err := os.Stat(filepath.Join(w.dir, "toolhost.toml")); err == nil {
		t.Error("config init wrote into the working directory")
	}
	toml := filepath.Join(o.userDir(), "toolhost.toml")
	// The file may come to hold the server's bearer token ([server] token).
	if fi, err := os.Stat(toml); err != nil || fi.Mode().Perm() != 0o600 {
		t.Errorf("config init's file: %v, mode %v; want 0600", err, fi.Mode().Perm())
	}
	data, err := os.ReadFile(toml)
	if err != nil {
		t.Fatal(err)
	}
	// The file speaks to an operator: words, not the ids of the
	// requirements or of the work that added each key.
	if ids := regexp.MustCompile(`\b(N?FR|CFG|IT)-[A-Z]+-[0-9]+|[Ii]ssue [0-9]+`).FindAllString(string(data), -1); len(ids) > 0 {
		t.Errorf("config init's file cites internal ids %q; explain each key in words", ids)
	}
	data = []byte(strings.Replace(string(data), `mode = "prompt"`, `mode = "auto"`, 1))
	if err := os.WriteFile(toml, data, 0o644); err != nil {
		t.Fatal(err)
	}
	out, _, code := w.run(t, "config", "show")
	for _, want := range []string{
		"# read: " + toml + " (operator)\n",
		`tools.approval.mode = "auto"  # file ` + toml + "\n",
		// allowed_roots = ["."] in the user's file is the working
		// directory, not the configuration directory.
		`tools.sandbox.allowed_roots = ["` + w.dir + `"]  # file ` + toml + "\n",
	} {
		if code != 0 || !strings.Contains(out, want) {
			t.Errorf("config show lacks %q: exit %d\n%s", want, code, out)
		}
	}

	// approval mode auto (from the file): a side-effecting call runs unasked.
	w.file(t, "n.txt", "x")
	if r, _, code := w.call(t, "read_file", `{"path":"n.txt"}`); code != 0 || !r.OK {
		t.Fatalf("read: %+v", r)
	}
	if r, _, code := w.call(t, "write_file", `{"path":"n.txt","content":"y"}`); code != 0 || !r.OK {
		t.Fatalf("write under approval mode auto: exit %d %+v", code, r.Error)
	}

	// The environment beats the file.
	if out, _, code := w.withEnv("TOOLHOST_TOOLS_MODE=disabled").run(t, "tools"); code != 0 || strings.TrimSpace(out) != "[]" {
		t.Errorf("tools with TOOLHOST_TOOLS_MODE=disabled: exit %d %s", code, out)
	}

	// --config and $TOOLHOST_CONFIG name the operator's file instead; the
	// user directory's is then not read, and config show says so.
	explicit := filepath.Join(t.TempDir(), "ops.toml")
	if _, stderr, code := w.run(t, "config", "init", explicit); code != 0 {
		t.Fatalf("config init FILE: exit %d %s", code, stderr)
	}
	for _, how := range [][2][]string{{nil, {"--config", explicit}}, {{"TOOLHOST_CONFIG=" + explicit}, nil}} {
		out, stderr, code := w.withEnv(how[0]...).run(t, append(how[1], "config", "show")...)
		for _, want := range []string{
			"# read: " + explicit + " (operator)\n",
			"# ignored: " + toml + " (--config or $TOOLHOST_CONFIG names another file)\n",
			`tools.approval.mode = "prompt"  # file ` + explicit + "\n",
		} {
			if code != 0 || !strings.Contains(out, want) {
				t.Errorf("%v config show lacks %q: exit %d\n%s%s", how, want, code, out, stderr)
			}
		}
	}

	w.file(t, "ops.toml", "[tools.approval]\nmod = \"auto\"\n")
	if _, stderr, code := w.run(t, "--config", "ops.toml", "tools"); code != 2 || !strings.Contains(stderr, `tools.approval.mod: unknown key; did you mean "tools.approval.mode"?`) {
		t.Errorf("misspelled key: exit %d %s", code, stderr)
	}
}

// Config show lists every file found, read or ignored and
// why; two files in the operator's directory are the operator's to fix,
// two in a project directory stop nothing.
func TestConfigShowFiles(t *testing.T) {
	o := newConfigUser(t)
	opFile := o.writeConfig(t, "[tools]\nallow_parallel = true\n")
	w := o.in(newWorkspace(t))
	project := filepath.Join(w.dir, "toolhost.toml")
	w.file(t, "toolhost.toml", "[tools.approval]\nmode = \"auto\"\n")
	out, stderr, code := w.run(t, "config", "show")
	for _, want := range []string{
		"# read: " + opFile + " (operator)\n",
		"# ignored: " + project + ` (project file in an untrusted directory; run "toolhost trust ` + w.dir + `" to let it narrow the policy, or pass it with --config to apply it in full)` + "\n",
		"tools.allow_parallel = true  # file " + opFile + "\n",
		`tools.approval.mode = "prompt"  # default` + "\n",
	} {
		if code != 0 || !strings.Contains(out, want) {
			t.Errorf("config show lacks %q: exit %d\n%s", want, code, out)
		}
	}
	if !strings.Contains(stderr, "configuration file ignored") || !strings.Contains(stderr, project) {
		t.Errorf("no warning on stderr: %s", stderr)
	}

	if err := os.WriteFile(filepath.Join(o.userDir(), "toolhost.yaml"), []byte("tools: {}\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, stderr, code := w.run(t, "tools"); code != 2 || !strings.Contains(stderr, "keep one configuration file") {
		t.Errorf("two operator files: exit %d %s", code, stderr)
	}
}
