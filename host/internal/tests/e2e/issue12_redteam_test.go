package e2e

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// Through the binary: what recovery kills, and what the
// history commands print to a person's terminal.

// reusePID makes a new process group whose leader gets pid pid and then
// exits, leaving a child in the group, as a daemon that double-forks (or
// any shell job whose leader ended) does: the kernel gives a pid back
// once nothing uses it, and pid_max is often 32768. It steers the next
// pid through /proc/sys/kernel/ns_last_pid and retries a bounded number
// of times when another process takes the pid first; it skips the test
// where the pid cannot be steered.
func reusePID(t *testing.T, pid int) {
	t.Helper()
	for range 50 {
		if err := os.WriteFile("/proc/sys/kernel/ns_last_pid", []byte(fmt.Sprint(pid-1)), 0); err != nil {
			t.Skipf("cannot steer the next pid (%v): pid reuse cannot be staged here", err)
		}
		cmd := exec.Command("sh", "-c", "sleep 120 & exit 0")
		cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		got := cmd.Process.Pid
		cmd.Wait()
		if got == pid {
			killGroupAtCleanup(t, pid)
			return
		}
		syscall.Kill(-got, syscall.SIGKILL)
	}
	t.Skipf("pid %d was taken by other processes 50 times", pid)
}

// Attack (pid reuse, FR-RES-04c): toolhost is killed
// while run_command runs; the command then ends on its own, and its pid,
// which was its process group's id, is given to a new, unrelated process
// group whose leader has exited but whose child lives on (a daemon, a
// backgrounded job). The next toolhost start recovers the batch and asks
// GroupAlive whether the recorded group still runs: the leader pid is
// gone, so it scans for members of group PGID and takes any whose start
// time is at or after the recorded leader's for the same group, which
// every process of a newer group is.
//
// Expected: recovery leaves the unrelated group alone ("checked by start
// time, so a reused pid is never killed").
// Actual (before a fix): recovery SIGKILLs the unrelated group.
//
// The command runs unconfined, whose groups recovery is for (see workspace.unconfined).
func TestRecoveryKillsUnrelatedGroupThatReusedThePGID(t *testing.T) {
	w := newWorkspace(t).unconfined()
	started := filepath.Join(t.TempDir(), "started")
	cmd := startBatch(t, w, "reuse", []map[string]any{
		batchCall("c1", "run_command", map[string]any{"command": "echo $$ > " + started + ".tmp && mv " + started + ".tmp " + started + " && exec sleep 60"}),
	}, "--allow", "run_command")
	pgid := waitForPID(t, w, started, 30*time.Second)
	killGroupAtCleanup(t, pgid)
	waitProcessJournaled(t, w, "reuse", "c1", pgid)
	crash(t, cmd)

	// The command ends after the crash, on its own.
	syscall.Kill(-pgid, syscall.SIGKILL)
	waitGroupGone(t, pgid, 10*time.Second)
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		if _, err := os.Stat(fmt.Sprintf("/proc/%d", pgid)); os.IsNotExist(err) {
			break
		}
	}
	reusePID(t, pgid)
	victims := groupMembers(pgid)
	if len(victims) == 0 {
		t.Fatalf("the unrelated group %d has no member: the test proves nothing", pgid)
	}

	stderr := recoverByCall(t, w)
	time.Sleep(500 * time.Millisecond)
	if now := groupMembers(pgid); len(now) == 0 {
		t.Errorf("recovery killed process group %d %v, an unrelated group that reused the crashed command's pgid after it ended; "+
			"want it left alone (a reused pid is never killed)\nrecovery said:\n%s", pgid, victims, stderr)
	}
}

// Attack (model): call ids, tool names and file paths
// come from the model, and the history commands print them to a
// person's terminal as they are. A call id holding an OSC title and
// clear-screen sequence, an unknown tool's name with colour codes, and a
// file created with an escape in its name reach `toolhost journal list`,
// `journal show` and `toolhost undo`.
//
// Expected: no terminal control reaches stdout or stderr (it is escaped
// or refused, as results and error messages already are).
// Actual (before a fix): the raw ESC/BEL bytes are printed.
func TestHistoryPrintsModelControlsToTerminal(t *testing.T) {
	w := newWorkspace(t)
	evilID := "c\x1b]0;pwned\x07\x1b[2J"
	file := batchFile(t, "esc", batchCall(evilID, "write_file", map[string]any{"path": "new.txt", "content": "x\n"}),
		batchCall("u2", "no\x1b[31mtool", map[string]any{}),
		batchCall("u3", "write_file", map[string]any{"path": "e\x1b[2Jvil.txt", "content": "y\n"}))
	out, stderr, code := w.run(t, "batch", "--file", file, "--allow", "write_file")
	var res struct {
		BatchID string `json:"batch_id"`
	}
	if err := json.Unmarshal([]byte(out), &res); err != nil || res.BatchID == "" {
		t.Fatalf("toolhost batch: exit %d, %v\nstdout: %s\nstderr: %s", code, err, out, stderr)
	}
	for _, args := range [][]string{
		{"journal", "show", res.BatchID},
		{"journal", "show", evilID},
		{"journal", "list"},
		{"undo", "--dry-run", evilID},
		{"undo", "--dry-run", res.BatchID},
	} {
		o, e, _ := w.run(t, args...)
		if c := controls(o + e); len(c) > 0 {
			t.Errorf("toolhost %s printed terminal controls near %q", strings.Join(args, " "), c)
		}
	}
}
