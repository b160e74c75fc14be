package e2e

import (
	"maps"
	"slices"
	"strings"
	"testing"
)

// commandEnv runs env through run_command with the CLI's environment
// holding extra, and returns the variables the command saw.
func commandEnv(t *testing.T, extra ...string) map[string]string {
	t.Helper()
	w := newWorkspace(t).withEnv(extra...)
	r, stderr, code := w.call(t, "run_command", `{"command":"env"}`, "--allow", "run_command")
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

// Secrets in the case and shape the red team
// used.
var redTeamSecrets = []string{
	"aws_secret_access_key=x",
	"my_api_key=y",
	"Github_Token=z",
	"HTTPS_PROXY=http://u:p@proxy.example:8080",
	"http_proxy=http://tok@proxy",
	"ALL_PROXY=socks5://u:p@h",
	"LANG=C.UTF-8",
	"NO_PROXY=localhost",
}

// CFG-ENV-01: the denylist matches names whatever their
// case, credentials in proxy URLs never reach a command, and harmless
// variables do.
func TestRunCommandEnvHidesSecretsAnyCase(t *testing.T) {
	seen := commandEnv(t, redTeamSecrets...)
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

// Credentials are stripped from proxy URLs rather than
// the variable hidden, so commands still go through the proxy (hiding it
// would send them straight out, around a proxy the network may require)
// without the secret. In a proxy variable every user is a credential,
// a short one (tok@) too.
func TestRunCommandEnvStripsProxyCredentials(t *testing.T) {
	seen := commandEnv(t, redTeamSecrets...)
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
