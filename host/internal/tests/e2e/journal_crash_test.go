package e2e

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/toolhost/toolhost/host/internal/journal"
)

// Real crash tests of the journal through the toolhost binary ("Done when": IT-JRN-01 crash before anything ran, IT-JRN-02 crash mid-execution; FR-RES-04a/b/c, FR-RES-05, NFR-REL-01/04). The process
// running a batch, `toolhost batch` or `toolhost serve`, is killed with
// SIGKILL (a) after the batch is committed and before its first call runs,
// (b) while a run_command's child waits to write a marker, (c) between two
// calls; the next toolhost command recovers: the batch is there, nothing
// re-runs, the orphaned process group is gone, both recovery choices work,
// and the stale-file cache survives.

// apiJournalBatch is a batch as GET /v1/journal/batches/ID answers it.
type apiJournalBatch struct {
	BatchID string `json:"batch_id"`
	State   string `json:"state"`
	Calls   []struct {
		ID        string     `json:"id"`
		Name      string     `json:"name"`
		StartedAt *time.Time `json:"started_at"`
		Result    *struct {
			OK      bool   `json:"ok"`
			Content string `json:"content"`
			Error   *struct {
				Kind    string `json:"kind"`
				Message string `json:"message"`
			} `json:"error"`
		} `json:"result"`
		Processes []struct {
			PGID int `json:"pgid"`
		} `json:"processes"`
	} `json:"calls"`
}

// journalBatch asks the server's journal API for batch id.
func (s *httpServe) journalBatch(t *testing.T, id string) apiJournalBatch {
	t.Helper()
	status, out := s.api(t, "GET", "/v1/journal/batches/"+id, nil)
	var b apiJournalBatch
	if err := json.Unmarshal(out, &b); status != 200 || err != nil {
		t.Fatalf("GET /v1/journal/batches/%s: %d %s", id, status, out)
	}
	return b
}

// autoConfig lets the batch API run commands once approved.
const autoConfig = "[tools.approval]\nmode = \"auto\"\ndenylist = []\n"

// "Done when" (a), IT-JRN-01, FR-RES-04a/c: toolhost is killed
// while it asks for approval, after the batch is committed and before any
// call runs. After restart the batch is in the journal, interrupted, every
// call "not run" and never started, and nothing was executed.
func TestCrashBeforeFirstCall_IT_JRN_01(t *testing.T) {
	t.Run("toolhost batch at the approval prompt", func(t *testing.T) {
		w := newWorkspace(t).withConfig(t, promptConfig)
		marker := filepath.Join(w.dir, "ran")
		cmd := w.command(w.argv("batch", "--file", batchFile(t, "before-run",
			batchCall("w1", "write_file", map[string]any{"path": "new.txt", "content": "never written\n"}),
			batchCall("c2", "run_command", map[string]any{"command": "touch " + marker}),
		))...)
		term := startTerminalCommand(t, cmd)
		// The question is asked only once the batch is committed.
		term.waitFor("[y/N] ")
		crash(t, cmd)

		if stderr := recoverByCall(t, w); !strings.Contains(stderr, "a batch was interrupted by a crash") {
			t.Errorf("the next command did not say it recovered a batch:\n%s", stderr)
		}
		b := batchOf(t, w, "before-run")
		if b.State != journal.StateInterrupted || len(b.Calls) != 2 {
			t.Fatalf("batch after recovery: state %s, %d calls; want interrupted with both calls", b.State, len(b.Calls))
		}
		if b.Calls[0].Tool != "write_file" || b.Calls[1].Tool != "run_command" {
			t.Errorf("calls journaled as %s, %s", b.Calls[0].Tool, b.Calls[1].Tool)
		}
		for _, c := range b.Calls {
			wantNotRun(t, c)
		}
		wantAbsent(t, filepath.Join(w.dir, "new.txt"), "the write ran though nobody approved it")
		wantAbsent(t, marker, "the command ran though nobody approved it")
	})

	t.Run("toolhost serve awaiting a decision", func(t *testing.T) {
		w := newWorkspace(t).withConfig(t, promptConfig)
		w.file(t, "b.txt", "bee\n")
		s := serveHTTP(t, w)
		b := s.batch(t, "POST", "/v1/batches", map[string]any{"conversation_id": "before-run", "calls": []map[string]any{
			batchCall("r1", "read_file", map[string]any{"path": "b.txt"}),
			batchCall("w1", "write_file", map[string]any{"path": "new.txt", "content": "never written\n"}),
		}}, 201)
		if b.State != "awaiting_approval" {
			t.Fatalf("the batch is %s, want awaiting_approval", b.State)
		}
		// The answer asks for a decision: the batch must be committed
		// by now (FR-RES-04a), so the kill comes at once.
		crashServe(t, s)

		// toolhost serve recovers on start, too.
		again := serveHTTP(t, w)
		jb := again.journalBatch(t, b.BatchID)
		if jb.State != string(journal.StateInterrupted) || len(jb.Calls) != 2 {
			t.Fatalf("batch after recovery: %+v; want interrupted with both calls", jb)
		}
		for _, c := range jb.Calls {
			if c.StartedAt != nil || c.Result == nil || c.Result.OK || c.Result.Error == nil || c.Result.Error.Message != journal.NotRunMessage {
				t.Errorf("call %s after recovery: %+v; want never started and %q", c.ID, c, journal.NotRunMessage)
			}
		}
		wantAbsent(t, filepath.Join(w.dir, "new.txt"), "the write ran though nobody approved it")
	})
}

// "Done when" (b), IT-JRN-02, FR-RES-04c, NFR-REL-04: toolhost
// is killed while a run_command runs a child that would write a marker
// later. The command's process group, journaled as soon as its shell
// started, outlives toolhost; the next toolhost command kills it, so the
// marker never appears, and the call gets "interrupted by crash; not
// re-run". The command runs unconfined, whose groups recovery is for
// (see workspace.unconfined).
func TestCrashKillsOrphanedProcessGroup_IT_JRN_02(t *testing.T) {
	t.Run("toolhost batch", func(t *testing.T) {
		w := newWorkspace(t).unconfined()
		tmp := t.TempDir()
		started, goFile, marker := filepath.Join(tmp, "started"), filepath.Join(tmp, "go"), filepath.Join(tmp, "marker")
		cmd := startBatch(t, w, "orphan", []map[string]any{
			batchCall("c1", "run_command", map[string]any{"command": markerCommand(started, goFile, marker)}),
		}, "--allow", "run_command")
		pgid := waitForPID(t, w, started, 30*time.Second)
		killGroupAtCleanup(t, pgid)
		waitProcessJournaled(t, w, "orphan", "c1", pgid)
		crash(t, cmd)
		if len(groupMembers(pgid)) == 0 {
			t.Fatalf("process group %d ended with toolhost: the test proves nothing", pgid)
		}

		stderr := recoverByCall(t, w)
		if !strings.Contains(stderr, "stopped a process group left running by a crash") {
			t.Errorf("the next command did not say it stopped the group:\n%s", stderr)
		}
		waitGroupGone(t, pgid, 10*time.Second)
		proveNoMarker(t, goFile, marker)
		b := batchOf(t, w, "orphan")
		if b.State != journal.StateInterrupted || len(b.Calls) != 1 {
			t.Fatalf("batch after recovery: state %s, %d calls", b.State, len(b.Calls))
		}
		wantInterrupted(t, b.Calls[0])
		if !slices.ContainsFunc(b.Calls[0].Processes, func(p journal.Process) bool { return p.PGID == pgid && p.StartTime != 0 }) {
			t.Errorf("the call's processes %+v do not hold group %d with its start time", b.Calls[0].Processes, pgid)
		}
	})

	t.Run("toolhost serve", func(t *testing.T) {
		w := newWorkspace(t).withConfig(t, autoConfig).unconfined()
		tmp := t.TempDir()
		started, goFile, marker := filepath.Join(tmp, "started"), filepath.Join(tmp, "go"), filepath.Join(tmp, "marker")
		s := serveHTTP(t, w)
		b := s.batch(t, "POST", "/v1/batches", map[string]any{"conversation_id": "orphan", "calls": []map[string]any{
			batchCall("c1", "run_command", map[string]any{"command": markerCommand(started, goFile, marker)}),
		}}, 201)
		s.batch(t, "POST", "/v1/batches/"+b.BatchID+"/decision", map[string]any{"decision": "approve_all"}, 200)
		pgid := waitForPID(t, w, started, 30*time.Second)
		killGroupAtCleanup(t, pgid)
		waitProcessJournaled(t, w, "orphan", "c1", pgid)
		crashServe(t, s)
		if len(groupMembers(pgid)) == 0 {
			t.Fatalf("process group %d ended with toolhost serve: the test proves nothing", pgid)
		}

		again := serveHTTP(t, w)
		waitGroupGone(t, pgid, 10*time.Second)
		proveNoMarker(t, goFile, marker)
		jb := again.journalBatch(t, b.BatchID)
		if jb.State != string(journal.StateInterrupted) || len(jb.Calls) != 1 {
			t.Fatalf("batch after recovery: %+v", jb)
		}
		c := jb.Calls[0]
		if c.StartedAt == nil || c.Result == nil || c.Result.OK || c.Result.Error == nil || c.Result.Error.Message != journal.InterruptedMessage {
			t.Errorf("the command after recovery: %+v; want started and %q", c, journal.InterruptedMessage)
		}
	})
}

// crashBetweenCalls runs, in conversation, a batch whose first call
// appends a line to counter and whose second blocks, and kills toolhost
// once the second has started and its process group is journaled. It
// returns the second command's process group.
func crashBetweenCalls(t *testing.T, w *workspace, conversation, counter string) int {
	t.Helper()
	started := filepath.Join(t.TempDir(), "started")
	cmd := startBatch(t, w, conversation, []map[string]any{
		batchCall("c1", "run_command", map[string]any{"command": "echo x >> " + counter}),
		batchCall("c2", "run_command", map[string]any{"command": "echo $$ > " + started + ".tmp && mv " + started + ".tmp " + started + " && sleep 60"}),
	}, "--allow", "run_command")
	pgid := waitForPID(t, w, started, 30*time.Second)
	killGroupAtCleanup(t, pgid)
	waitProcessJournaled(t, w, conversation, "c2", pgid)
	crash(t, cmd)
	return pgid
}

// IT-JRN-02, FR-RES-04b/c, FR-RES-05, NFR-REL-01:
// toolhost is killed between two calls: the first appended a line to a
// counter, the second blocks. After restart the first call's result is
// there and OK, the counter holds exactly one line (nothing re-ran), the
// second call is interrupted. Of two such batches, one is resumed (its
// partial results kept) and the other discarded (its results marked
// failed, its calls still listed); neither choice runs anything. The
// commands run unconfined (see workspace.unconfined).
func TestCrashBetweenCalls_IT_JRN_02(t *testing.T) {
	w := newWorkspace(t).unconfined()
	tmp := t.TempDir()
	counters := map[string]string{"resume-me": filepath.Join(tmp, "resume-counter"), "discard-me": filepath.Join(tmp, "discard-counter")}

	first := crashBetweenCalls(t, w, "resume-me", counters["resume-me"])
	// The next toolhost batch recovers the first crash before it runs
	// its own calls; it is killed in turn.
	second := crashBetweenCalls(t, w, "discard-me", counters["discard-me"])
	// And toolhost serve recovers the second.
	s := serveHTTP(t, w)
	waitGroupGone(t, first, 10*time.Second)
	waitGroupGone(t, second, 10*time.Second)

	ids := map[string]string{}
	for conv, counter := range counters {
		b := batchOf(t, w, conv)
		ids[conv] = b.ID
		if b.State != journal.StateInterrupted || len(b.Calls) != 2 {
			t.Fatalf("%s after recovery: state %s, %d calls", conv, b.State, len(b.Calls))
		}
		if r := b.Calls[0].Result; r == nil || !r.OK || b.Calls[0].Started.IsZero() {
			t.Errorf("%s: the first call's result was lost: started %v, %+v", conv, b.Calls[0].Started, r)
		}
		wantInterrupted(t, b.Calls[1])
		if n := lines(t, counter); n != 1 {
			t.Errorf("%s: the counter holds %d lines, want 1: a call ran again", conv, n)
		}
	}

	resumed := s.recoverChoice(t, ids["resume-me"], "resume", 200)
	if resumed.State != string(journal.StateResumed) || len(resumed.Calls) != 2 {
		t.Fatalf("resumed: %+v", resumed)
	}
	if r := resumed.Calls[0].Result; r == nil || !r.OK {
		t.Errorf("resume lost the first call's result: %+v", r)
	}
	if r := resumed.Calls[1].Result; r == nil || r.OK || r.Error == nil || r.Error.Message != journal.InterruptedMessage {
		t.Errorf("resume changed the interrupted call's result: %+v", r)
	}

	discarded := s.recoverChoice(t, ids["discard-me"], "discard", 200)
	if discarded.State != string(journal.StateDiscarded) || len(discarded.Calls) != 2 {
		t.Fatalf("discarded: %+v; want both calls still listed", discarded)
	}
	for _, c := range discarded.Calls {
		if c.Result == nil || c.Result.OK || c.Result.Error == nil || c.Result.Error.Message != journal.DiscardedMessage {
			t.Errorf("discarded call %s: %+v; want failed with %q", c.ID, c.Result, journal.DiscardedMessage)
		}
	}
	// A choice is made once.
	for conv, id := range ids {
		if status, out := s.api(t, "POST", "/v1/journal/batches/"+id+"/recover", map[string]any{"choice": "resume"}); status != 409 {
			t.Errorf("%s: a second choice answered %d %s, want 409", conv, status, out)
		}
	}
	// The journal's own view agrees, and nothing ran again.
	for conv, want := range map[string]journal.State{"resume-me": journal.StateResumed, "discard-me": journal.StateDiscarded} {
		if b := batchOf(t, w, conv); b.State != want || len(b.Calls) != 2 {
			t.Errorf("%s in the journal: state %s, %d calls; want %s with both calls", conv, b.State, len(b.Calls), want)
		}
		if n := lines(t, counters[conv]); n != 1 {
			t.Errorf("%s: the counter holds %d lines after the choice, want 1", conv, n)
		}
	}
}

// recoverChoice records a choice for an interrupted batch through the
// server's journal API.
func (s *httpServe) recoverChoice(t *testing.T, id, choice string, want int) apiJournalBatch {
	t.Helper()
	status, out := s.api(t, "POST", "/v1/journal/batches/"+id+"/recover", map[string]any{"choice": choice})
	var b apiJournalBatch
	if err := json.Unmarshal(out, &b); status != want || err != nil {
		t.Fatalf("recover %s with %s: %d %s, want %d", id, choice, status, out, want)
	}
	return b
}

// "Done when" (stale-file cache), IT-JRN-02, FR-RES-04: a file
// read in a batch that is then killed stays read: after restart, the same
// conversation may overwrite it without being refused as never read,
// while another conversation still is. Each read is saved to the journal
// as it is recorded, not when its batch ends. The command runs unconfined
// (see workspace.unconfined).
func TestCrashKeepsReadCache_IT_JRN_02(t *testing.T) {
	w := newWorkspace(t).unconfined()
	w.file(t, "notes.txt", "alpha\nbeta\n")
	started := filepath.Join(t.TempDir(), "started")
	cmd := startBatch(t, w, "reader", []map[string]any{
		batchCall("r1", "read_file", map[string]any{"path": "notes.txt"}),
		batchCall("c2", "run_command", map[string]any{"command": "echo $$ > " + started + ".tmp && mv " + started + ".tmp " + started + " && sleep 60"}),
	}, "--allow", "run_command")
	pgid := waitForPID(t, w, started, 30*time.Second)
	killGroupAtCleanup(t, pgid)
	waitProcessJournaled(t, w, "reader", "c2", pgid)
	crash(t, cmd)

	r, _, code := w.call(t, "write_file", `{"path":"notes.txt","content":"other\n"}`, "--conversation", "stranger", "--allow", "write_file")
	if code != 1 || r.Error == nil || r.Error.Kind != "StaleFile" {
		t.Fatalf("a conversation that never read notes.txt overwrote it: exit %d %+v", code, r)
	}
	// That call recovered the crash.
	if b := batchOf(t, w, "reader"); b.State != journal.StateInterrupted || b.Calls[0].Result == nil || !b.Calls[0].Result.OK {
		t.Errorf("the reading batch after recovery: state %s, first result %+v", b.State, b.Calls[0].Result)
	}
	r, stderr, code := w.call(t, "write_file", `{"path":"notes.txt","content":"alpha\nBETA\n"}`, "--conversation", "reader", "--allow", "write_file")
	if code != 0 || !r.OK {
		t.Fatalf("the read before the crash was forgotten: the overwrite is refused: exit %d %+v\n%s", code, r.Error, stderr)
	}
	if b, _ := os.ReadFile(filepath.Join(w.dir, "notes.txt")); string(b) != "alpha\nBETA\n" {
		t.Errorf("notes.txt holds %q", b)
	}
}
