package e2e

import (
	"bytes"
	"encoding/json"
	"errors"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// cliEnv is the whole environment of a toolhost process in these tests:
// PATH, a HOME and XDG_CONFIG_HOME of its own (so no user configuration
// applies), and extra.
func cliEnv(t *testing.T, extra ...string) []string {
	t.Helper()
	home := t.TempDir()
	return append([]string{
		"PATH=" + os.Getenv("PATH"),
		"HOME=" + home,
		"XDG_CONFIG_HOME=" + filepath.Join(home, ".config"),
	}, extra...)
}

// callWithEnv runs toolhost call in the workspace with exactly env as its
// environment, and returns the result, the exit code and stderr.
func (w *workspace) callWithEnv(t *testing.T, env []string, tool, args string, extra ...string) (result, int, string) {
	t.Helper()
	argv := append([]string{"--state-dir", w.state, "call", tool, "--args", args}, extra...)
	cmd := exec.Command(toolhost, argv...)
	cmd.Dir, cmd.Env = w.dir, env
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	code := 0
	var ee *exec.ExitError
	switch err := cmd.Run(); {
	case errors.As(err, &ee):
		code = ee.ExitCode()
	case err != nil:
		t.Fatal(err)
	}
	var r result
	if err := json.Unmarshal(out.Bytes(), &r); err != nil {
		t.Fatalf("call %s %s: stdout is not a result (%v)\nstdout: %s\nstderr: %s", tool, args, err, out.String(), errb.String())
	}
	return r, code, errb.String()
}

// commandEnv runs env through run_command with the CLI's environment
// holding extra, and returns the variables the command saw.
func commandEnv(t *testing.T, extra ...string) map[string]string {
	t.Helper()
	w := newWorkspace(t)
	r, code, stderr := w.callWithEnv(t, cliEnv(t, extra...), "run_command", `{"command":"env"}`, "--allow", "run_command")
	if code != 0 || !r.OK {
		t.Fatalf("run_command env: exit %d, %+v\nstderr: %s", code, r.Error, stderr)
	}
	seen := map[string]string{}
	for _, line := range strings.Split(r.Content, "\n") {
		if name, value, ok := strings.Cut(line, "="); ok {
			seen[name] = value
		}
	}
	return seen
}

// The secrets of issue 10 item 12, in the case and shape the red team
// used.
var item12Env = []string{
	"aws_secret_access_key=x",
	"my_api_key=y",
	"Github_Token=z",
	"HTTPS_PROXY=http://u:p@proxy.example:8080",
	"http_proxy=http://tok@proxy",
	"ALL_PROXY=socks5://u:p@h",
	"LANG=C.UTF-8",
	"NO_PROXY=localhost",
}

// issue 10 item 12, CFG-ENV-01: the denylist matches names whatever their
// case, credentials in proxy URLs never reach a command, and harmless
// variables do.
func TestRunCommandEnvHidesSecretsAnyCase(t *testing.T) {
	seen := commandEnv(t, item12Env...)
	for _, name := range []string{"aws_secret_access_key", "my_api_key", "Github_Token"} {
		if v, ok := seen[name]; ok {
			t.Errorf("the command saw %s=%s", name, v)
		}
	}
	for name, value := range seen {
		if strings.Contains(value, "u:p@") {
			t.Errorf("the command saw the proxy password in %s=%s", name, value)
		}
	}
	for _, kv := range []string{"LANG=C.UTF-8", "NO_PROXY=localhost"} {
		name, value, _ := strings.Cut(kv, "=")
		if seen[name] != value {
			t.Errorf("%s = %q, want %q", name, seen[name], value)
		}
	}
	for _, name := range []string{"PATH", "HOME"} {
		if seen[name] == "" {
			t.Errorf("the command did not see %s", name)
		}
	}
}

// issue 10 item 12: credentials are stripped from proxy URLs rather than
// the variable hidden, so commands still go through the proxy (hiding it
// would send them straight out, around a proxy the network may require)
// without the secret. In a proxy variable every user is a credential,
// a short one (tok@) too.
func TestRunCommandEnvStripsProxyCredentials(t *testing.T) {
	seen := commandEnv(t, item12Env...)
	want := map[string]string{
		"HTTPS_PROXY": "http://proxy.example:8080",
		"http_proxy":  "http://proxy",
		"ALL_PROXY":   "socks5://h",
		"NO_PROXY":    "localhost",
		"LANG":        "C.UTF-8",
	}
	for _, name := range slices.Sorted(maps.Keys(want)) {
		if got, ok := seen[name]; !ok || got != want[name] {
			t.Errorf("%s = %q (present %v), want %q", name, got, ok, want[name])
		}
	}
}
