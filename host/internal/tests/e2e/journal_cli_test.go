package e2e

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/toolhost/toolhost/host/internal/journal"
)

// journalList is `toolhost journal list --format json`.
type journalList struct {
	Batches []struct {
		BatchID        string `json:"batch_id"`
		ConversationID string `json:"conversation_id"`
		State          string `json:"state"`
		Calls          int    `json:"calls"`
		Failed         int    `json:"failed"`
		Unfinished     int    `json:"unfinished"`
	} `json:"batches"`
}

// journalBatch is `toolhost journal show --format json`.
type journalBatch struct {
	BatchID string `json:"batch_id"`
	State   string `json:"state"`
	Calls   []struct {
		ID        string          `json:"id"`
		Name      string          `json:"name"`
		Arguments json.RawMessage `json:"arguments"`
		StartedAt *time.Time      `json:"started_at"`
		Result    *struct {
			OK      bool   `json:"ok"`
			Content string `json:"content"`
			Error   *struct {
				Kind    string `json:"kind"`
				Message string `json:"message"`
			} `json:"error"`
		} `json:"result"`
	} `json:"calls"`
}

// writeBatchFile writes a batch for toolhost batch --file.
func writeBatchFile(t *testing.T, conversation string, calls []map[string]any) string {
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

// runOK runs toolhost and ends the test unless it exits 0.
func (w *workspace) runOK(t *testing.T, args ...string) string {
	t.Helper()
	out, stderr, code := w.run(t, args...)
	if code != 0 {
		t.Fatalf("toolhost %s: exit %d\nstdout: %s\nstderr: %s", strings.Join(args, " "), code, out, stderr)
	}
	return out
}

// jsonOut runs toolhost, which must exit 0, and decodes its stdout.
func jsonOut[T any](t *testing.T, w *workspace, args ...string) T {
	t.Helper()
	out := w.runOK(t, args...)
	var v T
	if err := json.Unmarshal([]byte(out), &v); err != nil {
		t.Fatalf("toolhost %s: %v in %s", strings.Join(args, " "), err, out)
	}
	return v
}

// TestJournalHistory: after a `toolhost batch`, journal
// list shows it as a table and as JSON, filtered by conversation, state
// and --since; journal show prints every call with its arguments and
// result, cutting a long result unless --full, and finds a call by its
// id; journal export writes one tool.call and one tool.result event per
// call, to stdout or whole to a file.
func TestJournalHistory(t *testing.T) {
	w := newWorkspace(t)
	var long strings.Builder
	for i := range 30 {
		fmt.Fprintf(&long, "line %02d\n", i)
	}
	w.file(t, "long.txt", long.String())
	file := writeBatchFile(t, "hist", []map[string]any{
		{"id": "r1", "name": "read_file", "arguments": map[string]any{"path": "long.txt"}},
		{"id": "w1", "name": "write_file", "arguments": map[string]any{"path": "new.txt", "content": "new\n"}},
		{"id": "x1", "name": "no_such_tool", "arguments": map[string]any{}},
	})
	var ran struct {
		BatchID string `json:"batch_id"`
	}
	out, stderr, code := w.run(t, "batch", "--file", file, "--allow", "write_file")
	if err := json.Unmarshal([]byte(out), &ran); err != nil || ran.BatchID == "" || code != 1 {
		t.Fatalf("toolhost batch: exit %d, %v\n%s\n%s", code, err, out, stderr)
	}
	id := ran.BatchID

	table := w.runOK(t, "journal", "list")
	row := regexp.MustCompile(`(?m)^` + id + `\s+\S+\s+done\s+read_file \+2\s+long\.txt\s+hist\s+3\s+1\s+0\s*$`)
	if !strings.HasPrefix(table, "BATCH ") || !row.MatchString(table) {
		t.Errorf("journal list:\n%s\nwant a header and the row %s … done read_file +2 long.txt hist 3 1 0", table, id)
	}
	list := jsonOut[journalList](t, w, "journal", "list", "--format", "json")
	if len(list.Batches) != 1 || list.Batches[0].BatchID != id || list.Batches[0].Calls != 3 || list.Batches[0].Failed != 1 {
		t.Errorf("journal list --format json: %+v, want batch %s with 3 calls, 1 failed", list, id)
	}
	for _, tc := range []struct {
		args []string
		want int
	}{
		{[]string{"--conversation", "hist"}, 1},
		{[]string{"--conversation", "other"}, 0},
		{[]string{"--state", "done"}, 1},
		{[]string{"--state", "interrupted"}, 0},
		{[]string{"--since", "1h"}, 1},
		{[]string{"--since", "7d"}, 1},
		{[]string{"--since", time.Now().Add(time.Hour).Format(time.RFC3339)}, 0},
	} {
		got := jsonOut[journalList](t, w, append([]string{"journal", "list", "--format", "json"}, tc.args...)...)
		if len(got.Batches) != tc.want {
			t.Errorf("journal list %v: %d batches, want %d", tc.args, len(got.Batches), tc.want)
		}
	}

	show := w.runOK(t, "journal", "show", id)
	for _, want := range []string{
		"batch " + id + "  done", "call " + id + ".1  read_file\n  client's id   r1", "call " + id + ".2  write_file\n  client's id   w1",
		"call " + id + ".3  no_such_tool\n  client's id   x1",
		`{"content":"new\n","path":"new.txt"}`, "| line 00", "| line 19", "10 more lines", "--full",
		"error UnknownTool", "started       never",
	} {
		if !strings.Contains(show, want) {
			t.Errorf("journal show %s lacks %q:\n%s", id, want, show)
		}
	}
	if strings.Contains(show, "line 20") {
		t.Errorf("journal show cut nothing of a 30-line result:\n%s", show)
	}
	if full := w.runOK(t, "journal", "show", id, "--full"); !strings.Contains(full, "| line 29") || strings.Contains(full, "more lines") {
		t.Errorf("journal show --full cut the result:\n%s", full)
	}
	byCall := w.runOK(t, "journal", "show", "w1")
	if !strings.Contains(byCall, "call "+id+".2 of batch "+id) || !strings.Contains(byCall, "call "+id+".2  write_file") || strings.Contains(byCall, "call "+id+".1") {
		t.Errorf("journal show w1 (a call id):\n%s\nwant only call w1, saying which batch", byCall)
	}
	shown := jsonOut[journalBatch](t, w, "journal", "show", id, "--format", "json")
	if len(shown.Calls) != 3 || shown.Calls[0].Result == nil || len(shown.Calls[0].Result.Content) != long.Len() {
		t.Errorf("journal show --format json: %+v, want 3 calls with the whole result", shown)
	}

	export := w.runOK(t, "journal", "export", "--since", "1h")
	var types []string
	sc := bufio.NewScanner(strings.NewReader(export))
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		var ev journal.Event
		if err := json.Unmarshal(sc.Bytes(), &ev); err != nil {
			t.Fatalf("export line %q: %v", sc.Text(), err)
		}
		if ev.BatchID != id {
			t.Errorf("export event of batch %s, want %s", ev.BatchID, id)
		}
		types = append(types, ev.Type+" "+ev.CallID)
	}
	slices.Sort(types)
	want := []string{"tool.call r1", "tool.call w1", "tool.call x1", "tool.result r1", "tool.result w1", "tool.result x1"}
	if !slices.Equal(types, want) {
		t.Errorf("journal export events %v, want %v", types, want)
	}
	outDir := t.TempDir()
	outFile := filepath.Join(outDir, "history.ndjson")
	w.runOK(t, "journal", "export", "--since", "1h", "--output", outFile)
	if data, err := os.ReadFile(outFile); err != nil || string(data) != export {
		t.Errorf("journal export --output: %q, %v; want what it wrote to stdout", data, err)
	}
	if entries, _ := os.ReadDir(outDir); len(entries) != 1 {
		t.Errorf("journal export --output left %v in the directory, want only the file", entries)
	}
	if empty := w.runOK(t, "journal", "export", "--since", time.Now().Add(time.Hour).Format(time.RFC3339)); empty != "" {
		t.Errorf("journal export of the future: %q, want nothing", empty)
	}
}

// crashBatch runs a `toolhost batch` whose second call, a run_command,
// sleeps, and kills toolhost with SIGKILL while it runs, as IT-JRN-01
// does; the third call would create ran. It returns the batch's id as
// the journal lists it once recovered.
func crashBatch(t *testing.T, w *workspace, conversation, ran string) string {
	t.Helper()
	started := filepath.Join(t.TempDir(), "started")
	file := writeBatchFile(t, conversation, []map[string]any{
		{"id": "c1", "name": "list_directory", "arguments": map[string]any{"path": "."}},
		{"id": "c2", "name": "run_command", "arguments": map[string]any{"command": "echo $$ > " + started + ".tmp && mv " + started + ".tmp " + started + " && sleep 30"}},
		{"id": "c3", "name": "run_command", "arguments": map[string]any{"command": "touch " + ran}},
	})
	cmd := w.command(w.argv("batch", "--file", file, "--allow", "run_command")...)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	pgid := waitForPID(t, w, started, 20*time.Second)
	// Recovery stops the command's group once it is recorded; until then
	// the test does.
	t.Cleanup(func() { syscall.Kill(-pgid, syscall.SIGKILL) })
	if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	cmd.Wait()
	list := jsonOut[journalList](t, w, "journal", "list", "--format", "json", "--conversation", conversation)
	if len(list.Batches) != 1 || list.Batches[0].State != "interrupted" {
		t.Fatalf("journal list after the crash: %+v, want one interrupted batch", list)
	}
	return list.Batches[0].BatchID
}

// TestJournalRecoverChoice (FR-RES-05, IT-JRN-01): two
// `toolhost batch` processes are killed with SIGKILL mid-batch; journal
// list marks both interrupted and says how to choose; recover --keep-partial
// keeps one's partial results and prints them, recover --discard marks
// the other's failed; list and show say so afterwards, a second choice
// is refused, and nothing is ever re-run. The commands run unconfined
// (see workspace.unconfined).
func TestJournalRecoverChoice(t *testing.T) {
	w := newWorkspace(t).unconfined()
	ran := filepath.Join(w.dir, "third-ran")
	keep := crashBatch(t, w, "keep", ran)
	drop := crashBatch(t, w, "drop", ran)

	table := w.runOK(t, "journal", "list", "--state", "interrupted")
	for _, id := range []string{keep, drop} {
		if !strings.Contains(table, "toolhost journal recover "+id+" --keep-partial") || !strings.Contains(table, "--discard") {
			t.Errorf("journal list:\n%s\nwant a hint to recover %s with --keep-partial or --discard", table, id)
		}
	}

	resumed := w.runOK(t, "journal", "recover", keep, "--keep-partial")
	for _, want := range []string{
		"batch " + keep + " keeps its partial results", "1 succeeded", "1 interrupted by the crash", "1 never started", "nothing was run",
		"call " + keep + ".1  list_directory", "result        ok", journal.InterruptedMessage, journal.NotRunMessage,
	} {
		if !strings.Contains(resumed, want) {
			t.Errorf("journal recover --keep-partial lacks %q:\n%s", want, resumed)
		}
	}
	discarded := w.runOK(t, "journal", "recover", drop, "--discard")
	if !strings.Contains(discarded, "batch "+drop+" discarded") || !strings.Contains(discarded, "nothing was re-run") {
		t.Errorf("journal recover --discard:\n%s", discarded)
	}

	states := map[string]string{}
	for _, b := range jsonOut[journalList](t, w, "journal", "list", "--format", "json").Batches {
		states[b.BatchID] = b.State
	}
	if states[keep] != "resumed" || states[drop] != "discarded" {
		t.Errorf("journal list after the choices: %v, want %s resumed and %s discarded", states, keep, drop)
	}
	kept := jsonOut[journalBatch](t, w, "journal", "show", keep, "--format", "json")
	if r := kept.Calls[0].Result; r == nil || !r.OK {
		t.Errorf("the resumed batch lost its first result: %+v", r)
	}
	for _, c := range jsonOut[journalBatch](t, w, "journal", "show", drop, "--format", "json").Calls {
		if c.Result == nil || c.Result.OK || c.Result.Error.Message != journal.DiscardedMessage {
			t.Errorf("call %s of the discarded batch: %+v, want %q", c.ID, c.Result, journal.DiscardedMessage)
		}
	}
	_, stderr, code := w.run(t, "journal", "recover", keep, "--discard")
	if code != 2 || !strings.Contains(stderr, keep) || !strings.Contains(stderr, "is resumed, not interrupted") || !strings.Contains(stderr, "already made") {
		t.Errorf("a second choice for %s: exit %d, %s; want 2 saying it is resumed already", keep, code, stderr)
	}
	if _, err := os.Stat(ran); err == nil {
		t.Errorf("a call of an interrupted batch ran: recovery never runs anything")
	}
}

// TestJournalCLIErrors: what a user can get
// wrong gives exit 2 and a message naming the id or flag and what to do;
// a damaged journal is named, with how to move it aside, and left as it
// was.
func TestJournalCLIErrors(t *testing.T) {
	w := newWorkspace(t)
	w.file(t, "a.txt", "a\n")
	w.runOK(t, "call", "read_file", "--args", `{"path":"a.txt"}`)
	id := jsonOut[journalList](t, w, "journal", "list", "--format", "json").Batches[0].BatchID

	for _, tc := range []struct {
		args []string
		want []string
	}{
		{[]string{"journal", "show", "b-nope"}, []string{"b-nope", "toolhost journal list"}},
		{[]string{"journal", "show"}, []string{"one batch or call id"}},
		{[]string{"journal", "show", id, "--format", "yaml"}, []string{"--format", "text or json"}},
		{[]string{"journal", "recover", "b-nope", "--keep-partial"}, []string{"b-nope", "holds no batch", "--state interrupted"}},
		{[]string{"journal", "recover", id}, []string{id, "--keep-partial", "--discard", "neither"}},
		{[]string{"journal", "recover", id, "--keep-partial", "--discard"}, []string{id, "both"}},
		{[]string{"journal", "recover", id, "--keep-partial"}, []string{id, "is done, not interrupted", "nothing was changed"}},
		{[]string{"journal", "list", "--since", "yesterday"}, []string{"--since", "yesterday", "7d"}},
		{[]string{"journal", "list", "--state", "broken"}, []string{"--state", "broken", "interrupted"}},
		{[]string{"journal", "list", "--limit", "-1"}, []string{"--limit"}},
		{[]string{"journal", "export"}, []string{"--since", "1970-01-01"}},
		{[]string{"journal", "export", "--since", "2x"}, []string{"--since", "2x"}},
		{[]string{"journal", "export", "--since", "1h", "--output", filepath.Join(w.dir, "no-dir", "out.ndjson")}, []string{"--output", "no-dir", "directory you can write"}},
		{[]string{"--state-dir", filepath.Join(w.dir, "nowhere"), "journal", "list"}, []string{"nowhere", "does not exist", "--state-dir"}},
	} {
		_, stderr, code := w.run(t, tc.args...)
		if code != 2 {
			t.Errorf("toolhost %v: exit %d, want 2\n%s", tc.args, code, stderr)
		}
		for _, want := range tc.want {
			if !strings.Contains(stderr, want) {
				t.Errorf("toolhost %v: %q lacks %q", tc.args, stderr, want)
			}
		}
	}

	damaged := newWorkspace(t)
	db := filepath.Join(damaged.state, "journal.db")
	garbage := []byte("this is not a journal\n")
	if err := os.WriteFile(db, garbage, 0o600); err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{{"journal", "list"}, {"journal", "show", "b1"}, {"journal", "recover", "b1", "--discard"}, {"journal", "export", "--since", "1h"}} {
		_, stderr, code := damaged.run(t, args...)
		if code != 2 || !strings.Contains(stderr, db) || !strings.Contains(stderr, "move it aside") {
			t.Errorf("toolhost %v on a damaged journal: exit %d, %s; want 2 naming %s and how to move it aside", args, code, stderr, db)
		}
	}
	if data, err := os.ReadFile(db); err != nil || string(data) != string(garbage) {
		t.Errorf("the damaged journal was changed: %q, %v", data, err)
	}
}

// The integrity check that no command runs at every
// start is there on request: `toolhost journal check` says a sound journal
// is sound, and names a damaged one with how to move it aside, leaving it
// as it was.
func TestJournalCheck(t *testing.T) {
	w := newWorkspace(t)
	w.file(t, "a.txt", strings.Repeat("some content to fill pages\n", 400))
	for range 20 {
		w.runOK(t, "call", "read_file", "--args", `{"path":"a.txt"}`)
	}
	if out := w.runOK(t, "journal", "check"); !strings.Contains(out, "sound") {
		t.Errorf("journal check on a sound journal: %q", out)
	}
	db := filepath.Join(w.state, "journal.db")
	data, err := os.ReadFile(db)
	if err != nil || len(data) < 8*4096 {
		t.Fatalf("journal.db: %d bytes, %v", len(data), err)
	}
	for i := 4096 + 100; i < len(data)-100; i += 7 { // every page but the first
		data[i] ^= 0x5a
	}
	if err := os.WriteFile(db, data, 0o600); err != nil {
		t.Fatal(err)
	}
	_, stderr, code := w.run(t, "journal", "check")
	if code != 2 || !strings.Contains(stderr, db) || !strings.Contains(stderr, "move it aside") {
		t.Errorf("journal check on a damaged journal: exit %d, %s; want 2 naming %s and how to move it aside", code, stderr, db)
	}
	if after, _ := os.ReadFile(db); string(after) != string(data) {
		t.Error("journal check changed the damaged file")
	}
}
