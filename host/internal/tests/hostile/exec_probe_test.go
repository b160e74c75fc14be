package hostile_test

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/toolhost/toolhost/abi"
	"github.com/toolhost/toolhost/internal/testplugin"
)

// execProbeResult is `toolhost call exec_probe`'s answer.
type execProbeResult struct {
	OK      bool            `json:"ok"`
	Content string          `json:"content"`
	Error   json.RawMessage `json:"error"`
}

// execProbeCall runs one proc_exec request through the built binary,
// confined as the default configuration has it, in root, the request
// being what a model's arguments would make of it.
func execProbeCall(t *testing.T, bin, plugins, root string, req map[string]any) (execProbeResult, abi.ExecResult) {
	t.Helper()
	home := t.TempDir()
	cfg := filepath.Join(home, "operator.toml")
	mustWrite(t, cfg, "[tools.approval]\nmode = \"auto\"\ndenylist = []\n")
	args, err := json.Marshal(req)
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, "--state-dir", filepath.Join(home, "state"), "--config", cfg, "--plugins", plugins,
		"call", "exec_probe", "--allow", "exec_probe", "--args", string(args))
	cmd.Dir = root
	cmd.Env = append(os.Environ(), "HOME="+home, "XDG_CONFIG_HOME="+filepath.Join(home, ".config"),
		"XDG_STATE_HOME="+filepath.Join(home, ".state"), "TOOLHOST_CACHE_DIR="+testplugin.CacheDir(t),
		"GITHUB_TOKEN=ghp_execProbeHostToken0123456789abcdefABCD")
	out, _ := cmd.Output()
	var r execProbeResult
	if err := json.Unmarshal(out, &r); err != nil {
		t.Fatalf("toolhost call exec_probe %s: %v\n%s", args, err, out)
	}
	var res abi.ExecResult
	if r.OK {
		if err := json.Unmarshal([]byte(r.Content), &res); err != nil {
			t.Fatalf("exec_probe's content %q: %v", r.Content, err)
		}
	}
	return r, res
}

// TestExecProbeThroughBinary: a model's run_command arguments reach
// proc_exec as they are. Through the real binary, confined, the host
// must refuse the variables that would run code unseen or bring back a
// secret the filter hid (LD_PRELOAD, BASH_ENV, TOOLHOST_*, GITHUB_TOKEN),
// naming why; stop a command at its timeout_ms and still return its
// output; run pipelines with pipefail; feed stdin; and never read a file
// of the host's through a report file the command swapped for a link.
func TestExecProbeThroughBinary(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("run_command's confinement is Linux only")
	}
	bin := toolhostBinary(t)
	plugins := pluginDir(t, "execprobe")
	root := t.TempDir()

	for _, name := range []string{"LD_PRELOAD", "BASH_ENV", "TOOLHOST_REPORT", "GITHUB_TOKEN", "BASH_FUNC_ls%%"} {
		r, _ := execProbeCall(t, bin, plugins, root, map[string]any{"command": "true", "env": map[string]string{name: "/tmp/x"}})
		if r.OK || !strings.Contains(string(r.Error), name) || !strings.Contains(string(r.Error), "BadArgs") {
			t.Errorf("env %s: ok %v error %s; want BadArgs naming it", name, r.OK, r.Error)
		}
	}
	// The secret the filter hid from toolhost's environment is not there
	// either way.
	if r, res := execProbeCall(t, bin, plugins, root, map[string]any{"command": `echo "[${GITHUB_TOKEN-}] $CI"`}); !r.OK || res.Stdout != "[] 1\n" {
		t.Errorf("GITHUB_TOKEN or CI: %+v %s", res, r.Error)
	}

	began := time.Now()
	r, res := execProbeCall(t, bin, plugins, root, map[string]any{"command": "echo begun; sleep 10", "timeout_ms": 500})
	if !r.OK || res.Killed != abi.KilledTimeout || res.ExitCode != -1 || res.Stdout != "begun\n" || time.Since(began) > 8*time.Second {
		t.Errorf("timeout: ok %v %+v %s after %v", r.OK, res, r.Error, time.Since(began))
	}

	if _, err := os.Stat("/bin/bash"); err == nil {
		if r, res := execProbeCall(t, bin, plugins, root, map[string]any{"command": "false | true"}); !r.OK || res.ExitCode != 1 || !res.Pipefail {
			t.Errorf("pipefail: %+v %s", res, r.Error)
		}
	}
	if r, res := execProbeCall(t, bin, plugins, root, map[string]any{"command": "tr a-z A-Z", "stdin": "fed\n"}); !r.OK || res.Stdout != "FED\n" {
		t.Errorf("stdin: %+v %s", res, r.Error)
	}

	secret := filepath.Join(t.TempDir(), "host-secret")
	mustWrite(t, secret, "the host's secret\n")
	r, res = execProbeCall(t, bin, plugins, root, map[string]any{"command": `ln -sf ` + secret + ` "$TOOLHOST_REPORT"; echo '<ok/>' > /tmp/other`, "report": true})
	if !r.OK || strings.Contains(res.Report, "secret") {
		t.Errorf("a report swapped for a link: %+v %s", res, r.Error)
	}
	if r, res := execProbeCall(t, bin, plugins, root, map[string]any{"command": `echo '<testsuite/>' > "$TOOLHOST_REPORT"`, "report": true}); !r.OK || res.Report != "<testsuite/>\n" {
		t.Errorf("report: %+v %s", res, r.Error)
	}
	if entries, _ := os.ReadDir(root); len(entries) != 0 {
		t.Errorf("the workspace holds %v after the calls: reports and stdin belong outside it", entries)
	}
}
