package e2e

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/toolhost/toolhost/host/internal/journal"
)

// IT-JRN-01 (FR-RES-04a/b/c): `toolhost batch` is
// killed with SIGKILL while the second of three calls, a run_command, is
// running. The next toolhost command that opens the host finds the batch
// in the journal, marks it interrupted, keeps the first call's result,
// gives the running call "interrupted by crash; not re-run" and the third
// "not run", and re-runs nothing. The command's process group is journaled
// and killed by recovery: the test checks it is gone. The command runs
// unconfined, whose groups recovery is for: confined, the journal holds
// the launcher's group and the command dies with toolhost (see workspace.unconfined).
func TestCrashDuringBatchIsRecovered_IT_JRN_01(t *testing.T) {
	w := newWorkspace(t).unconfined()
	started := filepath.Join(w.dir, "started")
	ran := filepath.Join(w.dir, "third-ran")
	batch := map[string]any{"conversation_id": "crash", "calls": []map[string]any{
		{"id": "c1", "name": "list_directory", "arguments": map[string]any{"path": "."}},
		{"id": "c2", "name": "run_command", "arguments": map[string]any{"command": "echo $$ > " + started + ".tmp && mv " + started + ".tmp " + started + " && sleep 60"}},
		{"id": "c3", "name": "run_command", "arguments": map[string]any{"command": "touch " + ran}},
	}}
	data, err := json.Marshal(batch)
	if err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(t.TempDir(), "batch.json")
	if err := os.WriteFile(file, data, 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := w.command(w.argv("batch", "--file", file, "--allow", "run_command")...)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	pgid := waitForPID(t, w, started, 20*time.Second)
	// The shell leads its own session and group: it outlives toolhost's
	// SIGKILL, until recovery kills it. The cleanup is for a failed run.
	t.Cleanup(func() { syscall.Kill(-pgid, syscall.SIGKILL) })
	// toolhost journals the group just after the shell starts, and an
	// unconfined shell can write its pid first: the crash this test is
	// about comes once the journal holds it.
	waitProcessJournaled(t, w, "crash", "c2", pgid)

	if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	cmd.Wait()

	// Any command that opens the host recovers.
	if _, stderr, code := w.run(t, "call", "list_directory", "--args", `{}`); code != 0 {
		t.Fatalf("toolhost after the crash: exit %d\n%s", code, stderr)
	}
	j, err := journal.Open(context.Background(), filepath.Join(w.state, "journal.db"), journal.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer j.Close()
	list, err := j.ListBatches(context.Background(), journal.Filter{Conversation: "crash"})
	if err != nil || len(list) != 1 {
		t.Fatalf("journal lists %+v, %v; want the one batch", list, err)
	}
	b, err := j.Batch(context.Background(), list[0].ID)
	if err != nil {
		t.Fatal(err)
	}
	if b.State != journal.StateInterrupted || len(b.Calls) != 3 {
		t.Fatalf("batch after recovery: %+v, want interrupted with three calls", b)
	}
	c1, c2, c3 := b.Calls[0], b.Calls[1], b.Calls[2]
	if c1.Result == nil || !c1.Result.OK {
		t.Errorf("the first call's result was lost: %+v", c1.Result)
	}
	if c2.Started.IsZero() || c2.Result == nil || c2.Result.OK || c2.Result.ErrorMessage != journal.InterruptedMessage {
		t.Errorf("the running call after recovery: started %v, result %+v; want %q", c2.Started, c2.Result, journal.InterruptedMessage)
	}
	if !c3.Started.IsZero() || c3.Result == nil || c3.Result.ErrorMessage != journal.NotRunMessage {
		t.Errorf("the call that had not started: started %v, result %+v; want %q", c3.Started, c3.Result, journal.NotRunMessage)
	}
	if _, err := os.Stat(ran); err == nil {
		t.Errorf("the third call ran: nothing may be re-run after a crash")
	}
	if len(c2.Processes) != 1 || c2.Processes[0].PGID != pgid {
		t.Errorf("the running call's process groups %+v, want the shell's %d", c2.Processes, pgid)
	}
	deadline := time.Now().Add(10 * time.Second)
	for syscall.Kill(-pgid, 0) == nil {
		if time.Now().After(deadline) {
			t.Fatalf("process group %d still runs after recovery", pgid)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// waitForPID waits for path to hold a pid, written by a command of w
// once it runs, and checks that it is the command's shell on the host
// before any test signals it.
func waitForPID(t *testing.T, w *workspace, path string, limit time.Duration) int {
	t.Helper()
	deadline := time.Now().Add(limit)
	for time.Now().Before(deadline) {
		if data, err := os.ReadFile(path); err == nil {
			if pid, err := strconv.Atoi(strings.TrimSpace(string(data))); err == nil && pid > 0 {
				wantWorkspaceProcess(t, w, pid)
				return pid
			}
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Fatalf("the command did not start within %s", limit)
	return 0
}
