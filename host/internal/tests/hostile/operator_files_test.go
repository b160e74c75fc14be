package hostile_test

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/toolhost/toolhost/internal/testplugin"
)

// opfToken is the bearer token the operator's configuration holds: no
// command may print it.
const opfToken = "opfTOKEN0123456789abcdefghijklmnopqrstuvwxyz"

// opfMarker is echoed by a first call, so the journal holds it; the
// probe greps for it as opf-marker-[X]YZ, a pattern that does not match
// its own text in the journal.
const opfMarker = "opf-marker-XYZ"

// opfResult is the part of a `toolhost call` result the tests read.
type opfResult struct {
	OK      bool   `json:"ok"`
	Content string `json:"content"`
	Error   *struct {
		Kind    string `json:"kind"`
		Message string `json:"message"`
	} `json:"error"`
}

// opfCall runs `toolhost call run_command` in dir with the given global
// flags, the command allowed, and returns its result.
func opfCall(t *testing.T, bin, dir string, env []string, flags []string, command string) opfResult {
	t.Helper()
	args := append(append([]string(nil), flags...), "--plugins", realPlugins(t), "call", "run_command", "--allow", "run_command",
		"--args", fmt.Sprintf(`{"command":%q}`, command))
	cmd := exec.Command(bin, args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "TOOLHOST_CACHE_DIR="+testplugin.CacheDir(t))
	cmd.Env = append(cmd.Env, env...)
	out, err := cmd.Output()
	var r opfResult
	if jerr := json.Unmarshal(out, &r); jerr != nil {
		t.Fatalf("toolhost %s: %v (%v)\n%s", strings.Join(args, " "), err, jerr, out)
	}
	if !r.OK {
		t.Fatalf("run_command %q failed: %+v", command, r.Error)
	}
	return r
}

// TestOperatorFilesHiddenFromCommands runs, confined, commands that read
// the operator's configuration file (holding the HTTP token) and the
// journal when both lie inside the root: read_file refuses them, and a
// command must not read them either. Each place they may be configured
// is tried: --config, the user's configuration directory, [journal]
// path outside the state directory; in both sandbox modes.
func TestOperatorFilesHiddenFromCommands(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("run_command's confinement is Linux only")
	}
	bin := toolhostBinary(t)
	for _, mode := range []string{"workspace-write", "read-only"} {
		for _, where := range []string{"flag", "user-dir"} {
			t.Run(mode+"/"+where, func(t *testing.T) {
				root := t.TempDir()
				home := t.TempDir()
				journal := filepath.Join(root, "jr", "j.db")
				cfg := fmt.Sprintf("[tools.approval]\nmode = \"auto\"\ndenylist = []\n[tools.run_command]\nsandbox = %q\n[server]\ntoken = %q\n[journal]\npath = %q\n",
					mode, opfToken, journal)
				env := []string{"HOME=" + home, "XDG_STATE_HOME=" + filepath.Join(home, ".state")}
				flags := []string{"--state-dir", filepath.Join(home, "state")}
				var cfgPath string
				switch where {
				case "flag":
					cfgPath = filepath.Join(root, "operator.toml")
					flags = append(flags, "--config", cfgPath)
					env = append(env, "XDG_CONFIG_HOME="+filepath.Join(home, ".config"))
				case "user-dir":
					// The default location, inside the root.
					cfgPath = filepath.Join(root, "cfg", "toolhost", "toolhost.toml")
					env = append(env, "XDG_CONFIG_HOME="+filepath.Join(root, "cfg"))
					// Kept in git, as dotfiles often are: the protection of
					// nested repositories must not mount inside the hidden
					// directory (the command could not run).
					mustWrite(t, filepath.Join(root, "cfg", "toolhost", ".git", "HEAD"), "ref: refs/heads/main\n")
					mustWrite(t, filepath.Join(root, "cfg", "toolhost", ".git", "config"), "[core]\n")
					os.MkdirAll(filepath.Join(root, "cfg", "toolhost", ".git", "hooks"), 0o755)
				}
				mustWrite(t, cfgPath, cfg)
				os.MkdirAll(filepath.Dir(journal), 0o755)
				opfCall(t, bin, root, env, flags, "echo "+opfMarker)
				if b, err := os.ReadFile(cfgPath); err != nil || !strings.Contains(string(b), opfToken) {
					t.Fatalf("the configuration does not hold the token: %v", err)
				}

				rel, _ := filepath.Rel(root, cfgPath)
				probe := fmt.Sprintf("cat %s; echo; echo journal-hits:$(cat jr/j.db jr/j.db-wal jr/j.db.logs/* 2>/dev/null | grep -ac 'opf-marker-[X]YZ')", rel)
				r := opfCall(t, bin, root, env, flags, probe)
				if strings.Contains(r.Content, opfToken) {
					t.Errorf("a command printed the operator's configuration %s with its token:\n%s", rel, r.Content)
				}
				if !strings.Contains(r.Content, "journal-hits:0\n") {
					t.Errorf("a command read the journal %s (journal-hits counts the lines holding what an earlier call ran):\n%s", journal, r.Content)
				}
			})
		}
	}
}
