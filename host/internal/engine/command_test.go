package engine

import (
	"context"
	"encoding/json"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/toolhost/toolhost/abi"
	"github.com/toolhost/toolhost/host/internal/confine"
	"github.com/toolhost/toolhost/host/internal/hostfn"
)

func commandArgs(t *testing.T, command, cwd string) string {
	t.Helper()
	m := map[string]string{"command": command}
	if cwd != "" {
		m["cwd"] = cwd
	}
	b, err := json.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// SRD 3.6.10 output semantics, FR-EXE-06 environment.
func TestRunCommand(t *testing.T) {
	t.Setenv("TOOLHOST_TEST_API_KEY", "sk-secret")
	t.Setenv("TOOLHOST_TEST_EXTRA", "extra-secret")
	t.Setenv("TOOLHOST_TEST_PLAIN", "visible")
	tests := []struct {
		name    string
		command string
		cwd     string
		ok      bool
		want    string // content, or error message
		details string // for failures: a substring of the details
	}{
		{"stdout", "echo hello", "", true, "hello\n", ""},
		{"stderr appended", "echo out; echo err >&2", "", true, "out\n\n\n[stderr]\nerr\n", ""},
		{"only stderr", "echo err >&2", "", true, "\n\n[stderr]\nerr\n", ""},
		{"no output", "true", "", true, "", ""},
		{"exit code", "echo partial; exit 3", "", false, "run_command failed: exit code 3", `"exit_code":3,`},
		{"cwd", "pwd", "sub", true, "/sub\n", ""},
		{"stdin closed", "cat; echo done", "", true, "done\n", ""},
		{"environment sanitized", "env | grep TOOLHOST_TEST_ | sort", "", true, "TOOLHOST_TEST_PLAIN=visible\n", ""},
		{"control codes sanitized", `printf 'a\033[2Jb\n'`, "", true, "ab\n", ""},
		{"control codes sanitized in details", `printf 'a\033[2Jb\n'; exit 1`, "", false, "exit code 1", `"output":"ab\n"`},
	}
	f := newCommandFixture(t, Timeouts{}, []string{"TOOLHOST_TEST_EXTRA"})
	f.write(t, "sub/keep", "")
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := f.call(t, "run_command", commandArgs(t, tt.command, tt.cwd))
			switch {
			case tt.ok && (!r.OK || !strings.HasSuffix(r.Content, tt.want) || (tt.cwd == "" && r.Content != tt.want)):
				t.Fatalf("result %+v (error %+v), want content %q", r, r.Error, tt.want)
			case !tt.ok:
				wantError(t, r, abi.KindExecutionFailed, tt.want)
				if !strings.Contains(string(r.Error.Details), tt.details) {
					t.Errorf("details %s, want %s", r.Error.Details, tt.details)
				}
			}
		})
	}
}

func TestRunCommandErrors(t *testing.T) {
	f := newCommandFixture(t, Timeouts{}, nil)
	f.write(t, "file.txt", "x")
	wantError(t, f.call(t, "run_command", commandArgs(t, "pwd", "../")), abi.KindSandboxViolation, "cwd")
	wantError(t, f.call(t, "run_command", commandArgs(t, "pwd", "file.txt")), abi.KindBadArgs, "not a directory")
	wantError(t, f.call(t, "run_command", commandArgs(t, "pwd", "missing")), abi.KindExecutionFailed, "missing")
	wantError(t, f.call(t, "run_command", `{"command":""}`), abi.KindBadArgs, "command")
}

// Output beyond the limit is cut, with a note of how much, but every byte
// streams (FR-OUT-01, FR-OUT-04).
func TestRunCommandLargeOutputStreams(t *testing.T) {
	f := newCommandFixture(t, Timeouts{}, nil)
	var mu sync.Mutex
	var streamed strings.Builder
	var kinds []uint32
	opts := callOptions{Conversation: "c", Emit: func(_ context.Context, ev hostfn.Event) error {
		mu.Lock()
		defer mu.Unlock()
		streamed.Write(ev.Data)
		if ev.CallID != "call_1" {
			t.Errorf("event for call %q", ev.CallID)
		}
		kinds = append(kinds, ev.Kind)
		return nil
	}}
	r := f.eng.execute(context.Background(), Call{ID: "call_1", Name: "run_command",
		Arguments: json.RawMessage(commandArgs(t, "seq 1 100000", ""))}, opts)
	if !r.OK {
		t.Fatal(r.Error)
	}
	var want strings.Builder
	for i := 1; i <= 100000; i++ {
		want.WriteString(strconv.Itoa(i) + "\n")
	}
	if streamed.String() != want.String() {
		t.Errorf("streamed %d bytes, want %d, in order", streamed.Len(), want.Len())
	}
	for _, k := range kinds {
		if k != abi.EventStdout {
			t.Errorf("event kind %d, want stdout", k)
		}
	}
	if len(r.Content) > 64<<10 || !strings.HasPrefix(r.Content, "1\n2\n") || !strings.Contains(r.Content, "bytes of stdout omitted ...]") || !strings.HasSuffix(r.Content, "\n99999\n100000\n") {
		t.Errorf("content of %d bytes, tail %q", len(r.Content), r.Content[max(0, len(r.Content)-200):])
	}
}

// FR-EXE-05: on timeout the whole process group dies, a background
// grandchild included, and the call returns Timeout promptly (T-TMO-01).
func TestRunCommandTimeoutKillsGroup_FR_EXE_05(t *testing.T) {
	f := newCommandFixture(t, Timeouts{ShellCommands: 500 * time.Millisecond}, nil)
	pidFile := filepath.Join(f.root, "pid")
	start := time.Now()
	r := f.call(t, "run_command", commandArgs(t, "sleep 1000 & echo $! > pid; sleep 1000", ""))
	if elapsed := time.Since(start); elapsed > 10*time.Second {
		t.Errorf("timeout took %v", elapsed)
	}
	wantError(t, r, abi.KindTimeout, "timed out")
	b, err := os.ReadFile(pidFile)
	if err != nil {
		t.Fatal(err)
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil {
		t.Fatal(err)
	}
	waitGone(t, pid)
}

func TestRunCommandCancelled(t *testing.T) {
	f := newCommandFixture(t, Timeouts{}, nil)
	ctx, cancel := context.WithCancel(context.Background())
	time.AfterFunc(300*time.Millisecond, cancel)
	r := f.eng.execute(ctx, Call{ID: "c1", Name: "run_command", Arguments: json.RawMessage(commandArgs(t, "sleep 1000", ""))}, callOptions{})
	wantError(t, r, abi.KindCancelled, "Cancelled by user")
}

// waitGone waits until pid no longer runs (a zombie awaiting its reaper
// counts as gone: it runs nothing).
func waitGone(t *testing.T, pid int) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for time.Now().Before(deadline) {
		if errors.Is(syscall.Kill(pid, 0), syscall.ESRCH) {
			return
		}
		if stat, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat"); err == nil {
			if fields := strings.Fields(string(stat[strings.LastIndexByte(string(stat), ')')+1:])); len(fields) > 0 && fields[0] == "Z" {
				return
			}
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Errorf("process %d still runs", pid)
}

func newCommandFixture(t *testing.T, timeouts Timeouts, envDeny []string) *fixture {
	return configFixture(t, Config{Timeouts: timeouts, EnvDenylist: envDeny})
}

// CFG-ENV-01, FR-EXE-06 beyond the SRD's globs: with the default denylist,
// a real run_command does not see secrets whose names only contain a
// secret word, nor URL credentials (removed from the value, the rest
// kept); tools.environment.keep brings back
// what a command needs.
func TestRunCommandSecretsHidden_CFG_ENV_01(t *testing.T) {
	secrets := map[string]string{
		"PGPASSWORD":   "pg-s3cret",
		"GH_PAT":       "ghp-s3cret",
		"NPM_AUTH":     "npm-s3cret",
		"DATABASE_URL": "postgres://u:pw-s3cret@h/db",
	}
	for name, value := range secrets {
		t.Setenv(name, value)
	}
	t.Setenv("SSH_AUTH_SOCK", "/run/agent.sock")
	t.Setenv("TOOLHOST_TEST_PLAIN", "visible")
	pol := withPolicy(func(p *Policy) { p.Denylist = nil })
	for _, keep := range [][]string{nil, {"SSH_AUTH_SOCK"}} {
		f := configFixture(t, Config{Policy: pol, EnvKeep: keep})
		calls := []Call{call("env", "run_command", commandArgs(t, "env", ""))}
		_, results := f.eng.Process(context.Background(), batch(calls...), answer(ApproveAll("tester")), RunOptions{})
		checkResults(t, calls, results)
		out := results[0].Content
		if !results[0].OK || !strings.Contains(out, "TOOLHOST_TEST_PLAIN=visible\n") {
			t.Fatalf("keep %v: %+v", keep, results[0])
		}
		for name := range secrets {
			if strings.Contains(out, "s3cret") || (name != "DATABASE_URL" && strings.Contains(out, name+"=")) {
				t.Errorf("keep %v: the command saw %s", keep, name)
			}
		}
		// URL credentials are removed from the value, the rest kept.
		if !strings.Contains(out, "DATABASE_URL=postgres://h/db\n") {
			t.Errorf("keep %v: the command does not see DATABASE_URL without its credentials:\n%s", keep, out)
		}
		if sees := strings.Contains(out, "SSH_AUTH_SOCK=/run/agent.sock\n"); sees != (keep != nil) {
			t.Errorf("keep %v: the command sees SSH_AUTH_SOCK: %v", keep, sees)
		}
	}
}

// A command never runs unconfined by accident: an engine without a
// confiner, or one whose kernel lacks what the sandbox needs, refuses it
// and says why, and nothing of it ran.
func TestRunCommandFailsClosed(t *testing.T) {
	tests := []struct {
		name     string
		confiner *confine.Confiner
		want     string
	}{
		{"no confiner", nil, "no sandbox for commands"},
		{"probe without Landlock", confine.NewConfiner(
			confine.Settings{Mode: confine.ModeWorkspaceWrite, Network: confine.NetworkOff},
			confine.Support{LandlockABI: 0}, "/proc/self/exe", nil), "Landlock"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := configFixture(t, Config{Confiner: tt.confiner})
			if tt.confiner == nil {
				f.eng.cfg.Confiner = nil
			}
			r := f.call(t, "run_command", commandArgs(t, "echo ran > ran.txt", ""))
			wantError(t, r, abi.KindExecutionFailed, tt.want)
			if !strings.Contains(r.Error.Message, "did not run") {
				t.Errorf("message %q does not say the command did not run", r.Error.Message)
			}
			if _, err := os.Stat(filepath.Join(f.root, "ran.txt")); !errors.Is(err, fs.ErrNotExist) {
				t.Errorf("the command ran: ran.txt: %v", err)
			}
		})
	}
}
