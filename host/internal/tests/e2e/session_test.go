//go:build linux

package e2e

import (
	"bytes"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/toolhost/toolhost/internal/testenv"
)

// FR-EXE-05: a child of run_command that makes a process
// group of its own dies with the call, whether the call times out or the
// shell exits first, and although the toolhost process itself exits right
// after. The command writes the shell's pid (its session id) and the
// child's pid to files in the workspace once the child is in its own
// group, so the group kill alone cannot get it.
//
// The session kill is what stops an unconfined command's processes, so
// the commands run with sandbox = "off" (confined, the PID namespace dies with the call: host/internal/tests/confine's TestNothingOutlivesTheCall).
// Each command also writes its PID namespace, so that a command that ran
// confined after all, whose pids are its namespace's numbers, fails the
// test before any of them is signalled on the host.
func TestRunCommandKillsSession(t *testing.T) {
	tests := []struct {
		name     string
		command  string
		timeout  string // tools.timeouts.shell_commands_seconds; "" for the default
		wantKind string // "" when the call succeeds
	}{
		{
			name:     "bash set -m, timeout",
			command:  `echo $$ > shell.pid; bash -c 'set -m; sleep 30 & echo $! > child.pid'; sleep 30`,
			timeout:  "2",
			wantKind: "Timeout",
		},
		{
			name:    "timeout child, shell exits",
			command: `echo $$ > shell.pid; timeout 10 sh -c 'echo $$ > child.pid; exec sleep 30' & while [ ! -s child.pid ]; do sleep 0.01; done`,
		},
		{
			name:    "python process_group, shell exits",
			command: `echo $$ > shell.pid; python3 -c 'import subprocess; print(subprocess.Popen(["sleep", "30"], process_group=0).pid)' > child.pid`,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if strings.Contains(tt.command, "python3") {
				testenv.LookPath(t, "python3", "apt-get install python3 (as root)")
			}
			w := newWorkspace(t).unconfined()
			var env []string
			if tt.timeout != "" {
				env = append(env, "TOOLHOST_TOOLS_TIMEOUTS_SHELL_COMMANDS_SECONDS="+tt.timeout)
			}
			args := `{"command":` + strconv.Quote(`readlink /proc/$$/ns/pid > pidns; `+tt.command) + `}`
			r, stderr, code := w.withEnv(env...).call(t, "run_command", args, "--allow", "run_command")
			switch {
			case tt.wantKind == "" && (code != 0 || !r.OK):
				t.Fatalf("exit %d, %+v\nstderr: %s", code, r.Error, stderr)
			case tt.wantKind != "" && (code != 1 || r.Error == nil || r.Error.Kind != tt.wantKind):
				t.Fatalf("exit %d, %+v, want a %s error\nstderr: %s", code, r.Error, tt.wantKind, stderr)
			}
			wantHostPIDNamespace(t, filepath.Join(w.dir, "pidns"))
			sid, child := readPidFile(t, w.dir, "shell.pid"), readPidFile(t, w.dir, "child.pid")
			waitNoSession(t, sid)
			// A pid of a child that is gone may be reused by then: only
			// one running in the workspace is the command's.
			if !processGone(child) && runsIn(child, w.dir) {
				syscall.Kill(child, syscall.SIGKILL)
				t.Errorf("child %d still runs after the call", child)
			}
		})
	}
}

// wantHostPIDNamespace stops the test unless the PID namespace a command
// wrote to file (readlink /proc/$$/ns/pid) is the test's own, so the
// pids it wrote are the host's.
func wantHostPIDNamespace(t *testing.T, file string) {
	t.Helper()
	got, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	own, err := os.Readlink("/proc/self/ns/pid")
	if err != nil {
		t.Fatal(err)
	}
	if strings.TrimSpace(string(got)) != own {
		t.Fatalf("the command ran in PID namespace %q, not the host's %q (confined?): its pids are not the host's, and this test signals none of them; run it unconfined (workspace.unconfined)", bytes.TrimSpace(got), own)
	}
}

func readPidFile(t *testing.T, dir, name string) int {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, name))
	if err != nil {
		t.Fatal(err)
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	return pid
}

// waitNoSession waits up to two seconds for session sid to have no live
// process; before failing it kills those left, in rounds, as they may
// fork.
func waitNoSession(t *testing.T, sid int) {
	t.Helper()
	for end := time.Now().Add(2 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		left := sessionMembers(t, sid)
		if len(left) == 0 {
			return
		}
		if time.Now().After(end) {
			t.Errorf("processes %v of the command's session %d still run after the call", left, sid)
			for range 100 {
				for _, pid := range sessionMembers(t, sid) {
					syscall.Kill(pid, syscall.SIGKILL)
				}
				time.Sleep(10 * time.Millisecond)
			}
			t.FailNow()
		}
	}
}

// sessionMembers lists the live processes of session sid: field 6 of
// /proc/PID/stat, after the command name, which may hold spaces and
// parentheses. Zombies run nothing, and a container's init may never
// reap them.
func sessionMembers(t *testing.T, sid int) []int {
	t.Helper()
	entries, err := os.ReadDir("/proc")
	if err != nil {
		t.Fatal(err)
	}
	var pids []int
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		if state, s, ok := procStat(pid); ok && s == sid && state != "Z" && state != "X" {
			pids = append(pids, pid)
		}
	}
	return pids
}

func processGone(pid int) bool {
	state, _, ok := procStat(pid)
	return !ok || state == "Z" || state == "X"
}

// procStat returns the state and session id of pid.
func procStat(pid int) (state string, sid int, ok bool) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return "", 0, false
	}
	f := strings.Fields(string(b[bytes.LastIndexByte(b, ')')+1:]))
	if len(f) < 4 {
		return "", 0, false
	}
	sid, err = strconv.Atoi(f[3])
	return f[0], sid, err == nil
}
