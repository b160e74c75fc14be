package hostile_test

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/toolhost/toolhost/internal/testenv"
	"github.com/toolhost/toolhost/internal/testplugin"
)

// gceToken is the credential a CI job hands git through its environment
// (actions/checkout writes one like it): it must never reach a command.
const gceToken = "gceOpaqueToken0123456789abcdefXYZ"

// gceRun runs command through the binary, confined, in root, with extra
// in toolhost's environment, and returns what the command printed.
func gceRun(t *testing.T, bin, root, command string, extra []string) string {
	t.Helper()
	home := t.TempDir()
	cfg := filepath.Join(home, "operator.toml")
	mustWrite(t, cfg, "[tools.approval]\nmode = \"auto\"\ndenylist = []\n")
	args, err := json.Marshal(map[string]string{"command": command})
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, "--state-dir", filepath.Join(home, "state"), "--config", cfg, "--plugins", realPlugins(t),
		"call", "run_command", "--allow", "run_command", "--args", string(args))
	cmd.Dir = root
	cmd.Env = append(gceBaseEnv(home), "TOOLHOST_CACHE_DIR="+testplugin.CacheDir(t))
	cmd.Env = append(cmd.Env, extra...)
	out, err := cmd.Output()
	var r struct {
		OK      bool            `json:"ok"`
		Content string          `json:"content"`
		Error   json.RawMessage `json:"error"`
	}
	if jerr := json.Unmarshal(out, &r); jerr != nil || !r.OK {
		t.Fatalf("toolhost call run_command %q: %v %v %s\n%s", command, err, jerr, r.Error, out)
	}
	return r.Content
}

// gceBaseEnv is toolhost's environment less any git configuration the
// test's own environment carries, in a home of the test's.
func gceBaseEnv(home string) []string {
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "GIT_CONFIG") {
			env = append(env, kv)
		}
	}
	return append(env, "HOME="+home, "XDG_CONFIG_HOME="+filepath.Join(home, ".config"),
		"XDG_STATE_HOME="+filepath.Join(home, ".state"), "GIT_CONFIG_NOSYSTEM=1")
}

// gceCommand prints what git reads of core.abbrev, whether git works in
// the repository root, and the environment.
const gceCommand = `printf 'abbrev=%s\n' "$(git config --get core.abbrev)"; ` +
	`git rev-parse --is-inside-work-tree && echo gce-git-works; env`

// TestGitConfigEnvPairs: a CI job gives git an Authorization header
// through GIT_CONFIG_COUNT and GIT_CONFIG_KEY_n/GIT_CONFIG_VALUE_n, with a
// harmless setting beside it. Hiding GIT_CONFIG_KEY_0 for the word KEY
// in its name broke every git in the sandbox ("missing config key") and
// still showed the token in GIT_CONFIG_VALUE_0. The pair holding the
// credential must go, the rest renumbered, so git works, reads the
// harmless setting, and env shows no token (FR-EXE-06, CFG-ENV-01). The
// same holds for GIT_CONFIG_PARAMETERS, what `git -c` passes on.
func TestGitConfigEnvPairs(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("run_command's confinement is Linux only")
	}
	testenv.LookPath(t, "git", "apt-get install git (as root)")
	bin := toolhostBinary(t)
	tests := []struct {
		name  string
		extra []string
	}{
		{"count, keys and values", []string{
			"GIT_CONFIG_COUNT=2",
			"GIT_CONFIG_KEY_0=http.extraheader", "GIT_CONFIG_VALUE_0=Authorization: Bearer " + gceToken,
			"GIT_CONFIG_KEY_1=core.abbrev", "GIT_CONFIG_VALUE_1=12",
		}},
		{"credential pair last", []string{
			"GIT_CONFIG_COUNT=2",
			"GIT_CONFIG_KEY_0=core.abbrev", "GIT_CONFIG_VALUE_0=12",
			"GIT_CONFIG_KEY_1=http.https://example.com/.extraheader", "GIT_CONFIG_VALUE_1=AUTHORIZATION: basic " + gceToken,
		}},
		{"git -c parameters", []string{
			"GIT_CONFIG_PARAMETERS='http.extraheader'='Authorization: Bearer " + gceToken + "' 'core.abbrev'='12'",
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			root := t.TempDir()
			if out, err := exec.Command("git", "init", "-q", root).CombinedOutput(); err != nil {
				t.Fatalf("git init %s: %v\n%s", root, err, out)
			}
			got := gceRun(t, bin, root, gceCommand, tt.extra)
			if strings.Contains(got, gceToken) {
				t.Errorf("the token reached the command:\n%s", got)
			}
			if !strings.Contains(got, "abbrev=12\n") {
				t.Errorf("git in the sandbox did not read core.abbrev=12:\n%s", got)
			}
			if !strings.Contains(got, "gce-git-works\n") || strings.Contains(got, "missing config") {
				t.Errorf("git does not work in the sandbox:\n%s", got)
			}
		})
	}
}

// TestGitConfigEnvShown: `toolhost config show` names the git variables
// it drops and why, never the token.
func TestGitConfigEnvShown(t *testing.T) {
	bin := toolhostBinary(t)
	home := t.TempDir()
	cmd := exec.Command(bin, "config", "show")
	cmd.Dir = t.TempDir()
	cmd.Env = append(gceBaseEnv(home), "GIT_CONFIG_COUNT=2",
		"GIT_CONFIG_KEY_0=http.extraheader", "GIT_CONFIG_VALUE_0=Authorization: Bearer "+gceToken,
		"GIT_CONFIG_KEY_1=core.abbrev", "GIT_CONFIG_VALUE_1=12")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("toolhost config show: %v\n%s", err, out)
	}
	text := string(out)
	for _, name := range []string{"GIT_CONFIG_KEY_0", "GIT_CONFIG_VALUE_0"} {
		if !svListed(text, name) {
			t.Errorf("config show does not say %s is dropped:\n%s", name, text)
		}
	}
	if svListed(text, "GIT_CONFIG_KEY_1") || svListed(text, "GIT_CONFIG_VALUE_1") {
		t.Errorf("config show says the harmless pair is dropped:\n%s", text)
	}
	if !strings.Contains(text, "Authorization") {
		t.Errorf("config show does not list the Authorization header shape:\n%s", text)
	}
	if strings.Contains(text, gceToken) {
		t.Errorf("config show printed the token:\n%s", text)
	}
}
