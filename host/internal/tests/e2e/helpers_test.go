package e2e

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// workspace is a temporary project directory with its own state dir, and
// how toolhost runs there: the operator's configuration file passed with
// --config, variables added to the environment TestMain isolated, and what
// stdin holds. The with* methods return a changed copy, so one run can
// differ without changing the others.
type workspace struct {
	dir, state string
	config     string   // passed with --config when set
	env        []string // added to the test process's environment; the last value of a name wins
	stdin      string   // none when ""
}

func newWorkspace(t *testing.T) *workspace {
	t.Helper()
	return &workspace{dir: t.TempDir(), state: t.TempDir()}
}

// withConfig writes text, even empty, as the operator's configuration
// file, outside the workspace, and passes it with --config.
func (w *workspace) withConfig(t *testing.T, text string) *workspace {
	t.Helper()
	c := *w
	c.config = filepath.Join(t.TempDir(), "operator.toml")
	if err := os.WriteFile(c.config, []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
	return &c
}

// withEnv adds variables (NAME=value) to toolhost's environment.
func (w *workspace) withEnv(kv ...string) *workspace {
	c := *w
	c.env = append(slices.Clip(w.env), kv...)
	return &c
}

// withStdin gives toolhost s on its standard input.
func (w *workspace) withStdin(s string) *workspace {
	c := *w
	c.stdin = s
	return &c
}

func (w *workspace) file(t *testing.T, name, content string) {
	t.Helper()
	p := filepath.Join(w.dir, name)
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

// argv is toolhost's command line for args: the binary, the workspace's
// state dir and configuration file, then args.
func (w *workspace) argv(args ...string) []string {
	argv := []string{toolhost, "--state-dir", w.state}
	if w.config != "" {
		argv = append(argv, "--config", w.config)
	}
	return append(argv, args...)
}

// command is the process running argv (toolhost's command line, or a
// shell wrapping it) in the workspace with its environment and stdin.
// Stdin is left unset when there is none, so a pseudo-terminal can take it.
func (w *workspace) command(argv ...string) *exec.Cmd {
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Dir = w.dir
	if len(w.env) > 0 {
		cmd.Env = append(os.Environ(), w.env...)
	}
	if w.stdin != "" {
		cmd.Stdin = strings.NewReader(w.stdin)
	}
	return cmd
}

// run runs toolhost with args in the workspace and returns stdout, stderr
// and the exit code.
func (w *workspace) run(t *testing.T, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	return runCommand(t, w.command(w.argv(args...)...))
}

// call runs `toolhost call tool --args args extra...` and decodes its
// result; stderr is returned for what a test expects there.
func (w *workspace) call(t *testing.T, tool, args string, extra ...string) (r result, stderr string, code int) {
	t.Helper()
	out, stderr, code := w.run(t, callArgs(tool, args, extra...)...)
	return decodeResult(t, tool, out, stderr), stderr, code
}

func callArgs(tool, args string, extra ...string) []string {
	return append([]string{"call", tool, "--args", args}, extra...)
}

// runCommand runs cmd to its end and returns its output and exit code.
func runCommand(t *testing.T, cmd *exec.Cmd) (stdout, stderr string, code int) {
	t.Helper()
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	code = exitCode(t, cmd.Run())
	return out.String(), errb.String(), code
}

// exitCode is the code of a process that ended with err; an error other
// than an exit status (the binary did not start) ends the test.
func exitCode(t *testing.T, err error) int {
	t.Helper()
	var ee *exec.ExitError
	switch {
	case errors.As(err, &ee):
		return ee.ExitCode()
	case err != nil:
		t.Fatal(err)
	}
	return 0
}

type result struct {
	ID      string `json:"id"`
	Name    string `json:"name"`
	OK      bool   `json:"ok"`
	Content string `json:"content"`
	// Structured is the result's JSON object, when the tool gave one.
	Structured json.RawMessage `json:"structured"`
	Error      *struct {
		Kind    string          `json:"kind"`
		Message string          `json:"message"`
		Details json.RawMessage `json:"details"`
	} `json:"error"`
}

// decodeResult reads the result of a call of tool from its stdout; stderr
// is shown when stdout holds none.
func decodeResult(t *testing.T, tool, stdout, stderr string) result {
	t.Helper()
	var r result
	if err := json.Unmarshal([]byte(stdout), &r); err != nil {
		t.Fatalf("call %s: stdout is not a result (%v)\nstdout: %s\nstderr: %s", tool, err, stdout, stderr)
	}
	if r.Name != tool || r.ID == "" {
		t.Fatalf("result names %q/%q, want tool %q", r.ID, r.Name, tool)
	}
	return r
}

// jsonArgs is m as a call's JSON arguments.
func jsonArgs(t *testing.T, m map[string]any) string {
	t.Helper()
	b, err := json.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}
