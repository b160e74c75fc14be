package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/toolhost/toolhost/host/internal/journal"
)

// What the crash and fault tests of the journal (IT-JRN-01/02)
// share: starting toolhost and killing it with SIGKILL, reading the
// journal it left, and watching the process groups its commands made.

// unconfined runs toolhost's commands with sandbox = "off" (network "on"
// with it, as the configuration requires), set by the operator through
// the environment. The journal's crash recovery and proc's session kill
// are what stop an unconfined command's processes, so their tests run
// commands that way: confined (the default), $$ is a number of
// the command's own PID namespace, which a test must never signal on the
// host, and its /tmp is private, so a file it writes in a t.TempDir
// never appears. That the default sandbox leaves nothing alive after
// toolhost is killed with SIGKILL is host/internal/tests/confine's
// TestNothingOutlivesTheCall ("toolhost is killed").
func (w *workspace) unconfined() *workspace {
	return w.withEnv("TOOLHOST_TOOLS_RUN_COMMAND_SANDBOX=off", "TOOLHOST_TOOLS_RUN_COMMAND_NETWORK=on")
}

// wantWorkspaceProcess stops the test unless pid, read from a command,
// is a live host process running in the workspace w.dir, as the shell
// of an unconfined run_command is: a test signals no pid it cannot tie
// to its own command (a confined command's $$ is its PID namespace's number, which on the host may be any process).
func wantWorkspaceProcess(t *testing.T, w *workspace, pid int) {
	t.Helper()
	if !runsIn(pid, w.dir) {
		cwd, err := os.Readlink(fmt.Sprintf("/proc/%d/cwd", pid))
		t.Fatalf("pid %d read from the command is not a process running in the workspace %s (cwd %q, %v): "+
			"did the command run confined, in a PID namespace of its own? This test needs it unconfined (workspace.unconfined) "+
			"and signals no pid it cannot tie to the command", pid, w.dir, cwd, err)
	}
}

// runsIn reports whether pid is a host process whose working directory
// is dir.
func runsIn(pid int, dir string) bool {
	dir, err := filepath.EvalSymlinks(dir)
	if err != nil {
		return false
	}
	cwd, err := os.Readlink(fmt.Sprintf("/proc/%d/cwd", pid))
	return err == nil && cwd == dir
}

// journalPath is where toolhost keeps the workspace's journal.
func (w *workspace) journalPath() string { return filepath.Join(w.state, "journal.db") }

// openJournal opens the workspace's journal as a reader beside toolhost:
// several processes may share it, and this one begins no batch, so a
// recovery in toolhost never takes it for a crashed owner.
func openJournal(t *testing.T, w *workspace) *journal.Journal {
	t.Helper()
	j, err := journal.Open(context.Background(), w.journalPath(), journal.Options{})
	if err != nil {
		t.Fatalf("opening the journal %s: %v", w.journalPath(), err)
	}
	t.Cleanup(func() { j.Close() })
	return j
}

// onlyBatch returns the one batch the journal holds for conversation.
func onlyBatch(t *testing.T, j *journal.Journal, conversation string) *journal.Batch {
	t.Helper()
	list, err := j.ListBatches(context.Background(), journal.Filter{Conversation: conversation})
	if err != nil || len(list) != 1 {
		t.Fatalf("the journal lists %+v, %v for conversation %q; want one batch", list, err, conversation)
	}
	b, err := j.Batch(context.Background(), list[0].ID)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// batchOf reads the workspace's journal once toolhost is gone and
// returns the one batch of conversation.
func batchOf(t *testing.T, w *workspace, conversation string) *journal.Batch {
	t.Helper()
	j, err := journal.Open(context.Background(), w.journalPath(), journal.Options{})
	if err != nil {
		t.Fatalf("opening the journal %s: %v", w.journalPath(), err)
	}
	defer j.Close()
	return onlyBatch(t, j, conversation)
}

// waitProcessJournaled waits until the journal holds, for the call callID
// of conversation's batch, the process group pgid: the moment from which
// recovery knows what to kill. The shell may write its pid before
// toolhost commits the group, so a test kills toolhost only after this.
func waitProcessJournaled(t *testing.T, w *workspace, conversation, callID string, pgid int) *journal.Batch {
	t.Helper()
	j := openJournal(t, w)
	deadline := time.Now().Add(30 * time.Second)
	for {
		if list, err := j.ListBatches(context.Background(), journal.Filter{Conversation: conversation}); err == nil && len(list) == 1 {
			if b, err := j.Batch(context.Background(), list[0].ID); err == nil {
				for _, c := range b.Calls {
					for _, p := range c.Processes {
						if c.ID == callID && p.PGID == pgid {
							return b
						}
					}
				}
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("the journal never recorded process group %d of call %s (conversation %q) within 30s", pgid, callID, conversation)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// batchFile writes a batch of calls for conversation as `toolhost batch
// --file` reads it, and returns its path.
func batchFile(t *testing.T, conversation string, calls ...map[string]any) string {
	t.Helper()
	data, err := json.Marshal(map[string]any{"conversation_id": conversation, "calls": calls})
	if err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(t.TempDir(), "batch.json")
	if err := os.WriteFile(file, data, 0o644); err != nil {
		t.Fatal(err)
	}
	return file
}

// batchCall is one call of a batch.
func batchCall(id, name string, args map[string]any) map[string]any {
	return map[string]any{"id": id, "name": name, "arguments": args}
}

// startBatch starts `toolhost batch --file FILE extra...` for calls in
// conversation, and kills it at cleanup if it still runs.
func startBatch(t *testing.T, w *workspace, conversation string, calls []map[string]any, extra ...string) *exec.Cmd {
	t.Helper()
	file := batchFile(t, conversation, calls...)
	cmd := w.command(w.argv(append([]string{"batch", "--file", file}, extra...)...)...)
	var stderr lockedBuffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cmd.Process.Kill()
		cmd.Wait()
		if t.Failed() {
			t.Logf("toolhost batch (%s) stderr:\n%s", conversation, stderr.String())
		}
	})
	return cmd
}

// crash kills cmd with SIGKILL, as a crash or the OOM killer would, and
// reaps it, so that recovery sees its owner gone.
func crash(t *testing.T, cmd *exec.Cmd) {
	t.Helper()
	if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatalf("kill -9 toolhost: %v", err)
	}
	cmd.Wait()
}

// crashServe kills a toolhost serve with SIGKILL and waits for it to be
// reaped. The exit is put back for serveHTTP's cleanup.
func crashServe(t *testing.T, s *httpServe) {
	t.Helper()
	if err := s.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatalf("kill -9 toolhost serve: %v", err)
	}
	select {
	case err := <-s.exited:
		s.exited <- err
	case <-time.After(30 * time.Second):
		t.Fatal("toolhost serve outlived SIGKILL by 30s")
	}
}

// recoverByCall runs a `toolhost call` that opens the host, which
// recovers what a crash left, and returns its stderr, where recovery
// says what it did.
func recoverByCall(t *testing.T, w *workspace) string {
	t.Helper()
	_, stderr, code := w.run(t, "call", "list_directory", "--args", `{}`, "--conversation", "after-the-crash")
	if code != 0 {
		t.Fatalf("toolhost call after the crash: exit %d\n%s", code, stderr)
	}
	return stderr
}

// killGroupAtCleanup stops process group pgid when the test ends, in
// case recovery did not: no test leaves a command behind.
func killGroupAtCleanup(t *testing.T, pgid int) {
	t.Cleanup(func() { syscall.Kill(-pgid, syscall.SIGKILL) })
}

// groupMembers lists the live (not zombie) processes of process group
// pgid.
func groupMembers(pgid int) []int {
	stats, _ := filepath.Glob("/proc/[0-9]*/stat")
	var pids []int
	for _, s := range stats {
		b, err := os.ReadFile(s)
		if err != nil {
			continue
		}
		i := bytes.LastIndexByte(b, ')')
		if i < 0 {
			continue
		}
		f := bytes.Fields(b[i+1:]) // f[0] is field 3, the state
		if len(f) < 3 || string(f[0]) == "Z" || string(f[0]) == "X" {
			continue
		}
		if g, err := strconv.Atoi(string(f[2])); err == nil && g == pgid {
			pid, _ := strconv.Atoi(filepath.Base(filepath.Dir(s)))
			pids = append(pids, pid)
		}
	}
	return pids
}

// waitGroupGone waits until process group pgid has no live member.
func waitGroupGone(t *testing.T, pgid int, limit time.Duration) {
	t.Helper()
	deadline := time.Now().Add(limit)
	for {
		m := groupMembers(pgid)
		if len(m) == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("process group %d still runs %v %s after recovery; the journal recorded it, so recovery had to kill it", pgid, m, limit)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// markerCommand is a run_command's command that writes its shell's pid
// (its process group) to started, then leaves a child that touches
// marker once go exists (giving up after 30s), and sleeps. The child
// acts when the test says so rather than after a fixed delay, so the
// test proves the child was killed however slowly a loaded machine
// starts the next toolhost.
func markerCommand(started, goFile, marker string) string {
	return "echo $$ > " + started + ".tmp && mv " + started + ".tmp " + started +
		"; (i=0; while [ ! -e " + goFile + " ] && [ $i -lt 300 ]; do sleep 0.1; i=$((i+1)); done; touch " + marker + ") & sleep 60"
}

// proveNoMarker lets an orphaned child go on, if it still lived, and
// checks that it did nothing.
func proveNoMarker(t *testing.T, goFile, marker string) {
	t.Helper()
	if err := os.WriteFile(goFile, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	// The child polls every 0.1s: 3s is thirty chances to act.
	for deadline := time.Now().Add(3 * time.Second); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		if _, err := os.Stat(marker); err == nil {
			t.Fatal("the command's child wrote its marker after the crash: recovery did not kill the process group")
		}
	}
}

// wantNotRun checks that call c of a recovered batch never started and
// was given "not run".
func wantNotRun(t *testing.T, c journal.Call) {
	t.Helper()
	if !c.Started.IsZero() || c.Result == nil || c.Result.OK || c.Result.ErrorKind != journal.KindNotRun || c.Result.ErrorMessage != journal.NotRunMessage {
		t.Errorf("call %s after recovery: started %v, result %+v; want never started and %q", c.ID, c.Started, c.Result, journal.NotRunMessage)
	}
}

// wantInterrupted checks that call c of a recovered batch had started and
// was given "interrupted by crash; not re-run".
func wantInterrupted(t *testing.T, c journal.Call) {
	t.Helper()
	if c.Started.IsZero() || c.Result == nil || c.Result.OK || c.Result.ErrorKind != journal.KindInterrupted || c.Result.ErrorMessage != journal.InterruptedMessage {
		t.Errorf("call %s after recovery: started %v, result %+v; want started and %q", c.ID, c.Started, c.Result, journal.InterruptedMessage)
	}
}

// wantAbsent checks that path was never created.
func wantAbsent(t *testing.T, path, why string) {
	t.Helper()
	if _, err := os.Stat(path); err == nil {
		t.Errorf("%s exists: %s", path, why)
	}
}

// lines counts the lines of a file.
func lines(t *testing.T, path string) int {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return strings.Count(string(b), "\n")
}
