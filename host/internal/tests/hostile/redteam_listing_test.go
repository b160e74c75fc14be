package hostile_test

// Red team: the listing the host renders itself (fs_search render
// "listing", list_directory), the fstatat that describes its entries
// (sandbox.Path.ReadDirLstat), the single recording read of a file that
// fits (fileread), and the step log's binary records, attacked as a
// hostile plugin, a prompt-injected model and a hostile file system.

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/toolhost/toolhost/host"
	"github.com/toolhost/toolhost/host/internal/config"
	"github.com/toolhost/toolhost/host/internal/engine"
	"github.com/toolhost/toolhost/host/internal/journal"
)

// Attack (hostile plugin): fs_search with render on a mode that is not a
// listing, an unknown render, render_structured alone, a negative or huge
// max_results, and a listing of a directory outside the call's read scope
// (a sibling of the path argument, and a directory outside the root).
// Expected: each malformed request is refused with an error, never a
// crash; the huge one is capped and its frame stays within the output
// limit; nothing outside the scope is listed.
func TestRenderedListingRequestsStayInShape(t *testing.T) {
	const limit = 4096
	h, root := openHost(t, func(c *config.Config, _ *host.Options) { c.Tools.Output.MaxBytes = limit }, "renderprobe")
	mustWrite(t, filepath.Join(root, "allowed", "a.txt"), "a")
	mustWrite(t, filepath.Join(root, "secret", "hidden-name.txt"), "s")
	outside := t.TempDir()
	mustWrite(t, filepath.Join(outside, "outside-name.txt"), "o")
	for i := range 400 {
		mustWrite(t, filepath.Join(root, "allowed", "many", "f"+strconv.Itoa(i)+strings.Repeat("x", 40)), "")
	}
	refused := []map[string]any{
		{"path": "allowed", "render": "listing", "mode": "glob"},
		{"path": "allowed", "render": "listing", "mode": "content"},
		{"path": "allowed", "render": "table"},
		{"path": "allowed", "structured": true},
		{"path": "allowed", "render": "listing", "max": -1},
		{"path": "allowed", "render": "listing", "depth": 1 << 20},
		{"path": "allowed", "other": "secret", "render": "listing"},
		{"path": "allowed", "other": outside, "render": "listing", "structured": true},
		{"path": "allowed", "other": "allowed/../secret", "render": "listing"},
	}
	for _, a := range refused {
		r := runBatch(t, h, nil, call("r", "renderprobe", jsonArgs(t, a)))[0]
		if r.OK {
			t.Errorf("renderprobe %v: %.300q, want it refused", a, r.Content)
		}
		if r.OK && (strings.Contains(r.Content, "hidden-name") || strings.Contains(r.Content, "outside-name")) {
			t.Errorf("renderprobe %v listed outside its read scope: %.300q", a, r.Content)
		}
	}
	r := runBatch(t, h, nil, call("big", "renderprobe", jsonArgs(t, map[string]any{"path": "allowed", "render": "listing", "structured": true, "max": 1 << 30, "depth": 16})))[0]
	if !r.OK {
		t.Fatalf("a huge max_results: %+v, want it capped", r.Error)
	}
	var textN, objN int
	head, _, _ := strings.Cut(r.Content, "\n")
	if _, err := fmtSscan(head, &textN, &objN); err != nil {
		t.Fatalf("renderprobe said %q: %v", head, err)
	}
	if textN+objN > limit {
		t.Errorf("a rendered listing of %d+%d bytes for an output limit of %d", textN, objN, limit)
	}
	if !strings.Contains(r.Content, "truncated") {
		t.Errorf("a listing cut to the limit does not say so: %.300q", r.Content)
	}
}

// fmtSscan reads renderprobe's "text N structured M" line.
func fmtSscan(line string, text, obj *int) (int, error) {
	f := strings.Fields(line)
	if len(f) != 4 || f[0] != "text" || f[2] != "structured" {
		return 0, strconv.ErrSyntax
	}
	var err error
	if *text, err = strconv.Atoi(f[1]); err != nil {
		return 0, err
	}
	*obj, err = strconv.Atoi(f[3])
	return 2, err
}

// Attack (prompt-injected model, hostile repository): very many
// entries whose names the listing must escape (C1 controls, bidi
// overrides, zero-width characters, newlines), listed with
// structured:true under a small output limit.
// Expected: the text and the structured object together stay within the
// limit, the object is kept (valid JSON, truncated:true), and the text
// still ends with the totals line saying it was truncated.
func TestListingOfEscapedNamesStaysWithinOutputLimit(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("names with control characters need Linux")
	}
	const limit = 4096
	h, root := openHost(t, func(c *config.Config, _ *host.Options) { c.Tools.Output.MaxBytes = limit })
	for i := range 300 {
		name := strconv.Itoa(i) + strings.Repeat("\u009b\u202e\u200b\n", 12)
		if err := os.WriteFile(filepath.Join(root, name), nil, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	r := runBatch(t, h, nil, call("l", "list_directory", `{"structured":true,"max_entries":10000}`))[0]
	if !r.OK {
		t.Fatalf("list_directory: %+v", r.Error)
	}
	if n := len(r.Content) + len(r.Structured); n > limit {
		t.Errorf("the result is %d bytes (%d text, %d structured) for an output limit of %d", n, len(r.Content), len(r.Structured), limit)
	}
	var obj struct {
		Entries   []json.RawMessage `json:"entries"`
		Truncated bool              `json:"truncated"`
	}
	if err := json.Unmarshal(r.Structured, &obj); err != nil || !obj.Truncated || len(obj.Entries) == 0 {
		t.Errorf("structured result %.200q (%v), want the entries that fit and truncated:true", r.Structured, err)
	}
	lines := strings.Split(strings.TrimSuffix(r.Content, "\n"), "\n")
	if last := lines[len(lines)-1]; !strings.Contains(last, "truncated: raise max_entries") {
		t.Errorf("the text's last line is %q, want the totals saying it was truncated", last)
	}
	if len(lines)-1 != len(obj.Entries) {
		t.Errorf("the text lists %d entries, the structured result %d", len(lines)-1, len(obj.Entries))
	}
}

// Attack (hostile repository): names that differ from another entry's
// only by C0 control characters or a terminal escape sequence ("a\x01b"
// beside "ab", "c\x1b[31md" beside "cd", "e\x7ff" beside "ef"), listed
// with structured:true.
// Expected: every entry of the structured result names its file and no
// other: the text writes the controls out (\x01, \x1b), so the object
// must too (as it writes a C1 control \u{XX}, with escaped:true), or a
// model that picks a file from the object acts on its look-alike.
func TestListingStructuredNamesNotMergedBySanitize(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("names with control characters need Linux")
	}
	h, root := openHost(t, nil)
	names := []string{"a\x01b", "ab", "c\x1b[31md", "cd", "e\x7ff", "ef"}
	for _, n := range names {
		if err := os.WriteFile(filepath.Join(root, n), []byte(n), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	r := runBatch(t, h, nil, call("l", "list_directory", `{"structured":true}`))[0]
	if !r.OK {
		t.Fatalf("list_directory: %+v", r.Error)
	}
	var obj struct {
		Entries []struct {
			Name string `json:"name"`
			Size int64  `json:"size"`
		} `json:"entries"`
	}
	if err := json.Unmarshal(r.Structured, &obj); err != nil {
		t.Fatalf("structured result: %v\n%s", err, r.Structured)
	}
	seen := map[string]int{}
	for _, e := range obj.Entries {
		seen[e.Name]++
	}
	for name, n := range seen {
		if n > 1 {
			t.Errorf("the structured listing names %d different files %q; the text shows them apart:\n%s", n, name, r.Content)
		}
	}
	if len(obj.Entries) != len(names) {
		t.Errorf("%d structured entries for %d files", len(obj.Entries), len(names))
	}
}

// Attack (hostile file system, racing): while list_directory runs, a
// directory of the root is swapped again and again for a symbolic link
// to a directory outside the root, and one of its entries for a link to
// a large file outside, a FIFO, and nothing at all.
// Expected: no listing ever names an entry of the outside directory or
// gives the outside file's size: each entry is described by fstatat
// beside the directory the host opened, never following a link; a listing
// never blocks on the FIFO.
func TestListingRaceNeverDescribesOutsideRoot(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("the race attacks the Linux fstatat path")
	}
	const bigSize = 7777777
	h, root := openHost(t, nil)
	outside := t.TempDir()
	mustWrite(t, filepath.Join(outside, "dir", "leak-outside-entry"), "x")
	big := filepath.Join(outside, "big")
	if err := os.WriteFile(big, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Truncate(big, bigSize); err != nil {
		t.Fatal(err)
	}
	d := filepath.Join(root, "d")
	for i := range 20 {
		mustWrite(t, filepath.Join(d, "f"+strconv.Itoa(i)), "1")
	}
	var stop atomic.Bool
	var wg sync.WaitGroup
	wg.Add(2)
	go func() { // the directory, swapped for a link out
		defer wg.Done()
		for !stop.Load() {
			if os.Rename(d, d+".off") == nil {
				os.Symlink(filepath.Join(outside, "dir"), d)
				runtime.Gosched()
				os.Remove(d)
				os.Rename(d+".off", d)
			}
		}
	}()
	go func() { // an entry, swapped for a link out, a FIFO, nothing
		defer wg.Done()
		for i := 0; !stop.Load(); i++ {
			sw := filepath.Join(root, "sw")
			os.Remove(sw)
			switch i % 4 {
			case 0:
				os.WriteFile(sw, []byte("1"), 0o644)
			case 1:
				os.Symlink(big, sw)
			case 2:
				mkfifo(sw)
			}
		}
	}()
	defer func() {
		stop.Store(true)
		wg.Wait()
	}()
	deadline := time.Now().Add(4 * time.Second)
	for n := 0; time.Now().Before(deadline); n++ {
		r := runBatch(t, h, nil, call("l", "list_directory", `{"structured":true,"depth":2,"include_hidden":true}`))[0]
		if !r.OK {
			continue // the start swapped away mid-call: refused, not followed
		}
		if strings.Contains(r.Content, "leak-outside") || strings.Contains(string(r.Structured), "leak-outside") {
			t.Fatalf("listing %d names an entry outside the root:\n%s", n, r.Content)
		}
		if strings.Contains(r.Content, strconv.Itoa(bigSize)) || strings.Contains(string(r.Structured), strconv.Itoa(bigSize)) {
			t.Fatalf("listing %d gives the size of a file outside the root (a link followed):\n%s", n, r.Content)
		}
	}
}

// Attack (prompt-injected model): read_file of a file whose one line is
// longer than the room the output limit leaves, so that the single
// recording read of a file that fits (fileread) does not reach its end
// and nothing of it is shown; then overwrite it.
// Expected: the read shows none of the file and the write is refused as
// StaleFile: a file is recorded as read only when the model saw it.
func TestReadFileFastPathRecordsOnlyWhatItShows(t *testing.T) {
	h, root := openHost(t, func(c *config.Config, _ *host.Options) { c.Tools.Output.MaxBytes = 2000 })
	tests := []struct {
		name, content string
		shown         bool
	}{
		{"a line longer than the room", strings.Repeat("x", 5000) + "\n", false},
		{"a file as long as the room", strings.Repeat("y\n", 1000), true}, // Room+Slack: the output limit
		{"an empty file", "", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			victim := filepath.Join(root, "victim.txt")
			mustWrite(t, victim, tt.content)
			conv := "fast-" + tt.name
			b := func(c string) []engineResult {
				return processIn(t, h, conv, call("w", "write_file", jsonArgs(t, map[string]any{"path": "victim.txt", "content": c})))
			}
			r := processIn(t, h, conv, call("r", "read_file", `{"path":"victim.txt"}`))[0]
			if !r.OK {
				t.Fatalf("read_file: %+v", r.Error)
			}
			if tt.shown && r.Content != tt.content {
				t.Fatalf("read_file showed %d bytes of a %d-byte file that fits", len(r.Content), len(tt.content))
			}
			w := b("pwned\n")[0]
			if tt.shown != w.OK {
				t.Errorf("write_file after a read that showed it=%v: %+v", tt.shown, w.Error)
			}
			if !tt.shown && (w.Error == nil || w.Error.Kind != "StaleFile") {
				t.Errorf("write_file after a read that showed nothing: %+v, want StaleFile", w.Error)
			}
		})
	}
}

type engineResult = engine.Result

// processIn runs calls as one batch of conversation conv, everything
// approved.
func processIn(t *testing.T, h *host.Host, conv string, calls ...engine.Call) []engine.Result {
	t.Helper()
	return process(t, h, context.Background(), engine.Batch{Conversation: conv, Calls: calls}, host.BatchOptions{Approver: approveAll()}, time.Minute)
}

func mkfifo(path string) { syscall.Mkfifo(path, 0o644) }

// stepLogOf copies the one step log of the open journal at jpath.
func stepLogOf(t *testing.T, jpath string) []byte {
	t.Helper()
	entries, err := os.ReadDir(journal.LogDir(jpath))
	if err != nil || len(entries) != 1 {
		t.Fatalf("step logs of %s: %v %v", jpath, entries, err)
	}
	data, err := os.ReadFile(filepath.Join(journal.LogDir(jpath), entries[0].Name()))
	if err != nil {
		t.Fatal(err)
	}
	return data
}

// openJournal opens a journal at a fresh path, or fails the test.
func openJournal(t *testing.T) (*journal.Journal, string) {
	t.Helper()
	jpath := filepath.Join(t.TempDir(), "journal.db")
	j, err := journal.Open(context.Background(), jpath, journal.Options{})
	if err != nil {
		t.Fatal(err)
	}
	return j, jpath
}

// replayAsDead has a fresh journal find log as the step log of a process
// that is gone, and returns it opened (which replays the log).
func replayAsDead(t *testing.T, log []byte) (*journal.Journal, error) {
	t.Helper()
	j, jpath := openJournal(t)
	j.Close()
	if err := os.MkdirAll(journal.LogDir(jpath), 0o700); err != nil {
		t.Fatal(err)
	}
	name := "journal.db.log-" + strconv.Itoa(deadPID(t)) + "-0-0badf00d"
	if err := os.WriteFile(filepath.Join(journal.LogDir(jpath), name), log, 0o600); err != nil {
		t.Fatal(err)
	}
	j, err := journal.Open(context.Background(), jpath, journal.Options{})
	if err == nil {
		t.Cleanup(func() { j.Close() })
	}
	return j, err
}

// Attack (crash, odd bytes): a process dies with its step log holding a
// batch whose conversation, turn, call id and path hold NUL, invalid
// UTF-8, a leading '{' (the first byte of the JSON records of earlier
// versions) and the framing of a record, and a result whose content is a
// whole framed record.
// Expected: the next journal replays the log to exactly what was
// committed; nothing in a string is read as framing.
func TestStepLogReplaysOddBytesExactly(t *testing.T) {
	odd := "{\x00\xff\xfe" + string(frame([]byte(`{"q":2}`)))
	j, jpath := openJournal(t)
	ctx := context.Background()
	b := journal.Batch{ID: "b1", Conversation: "conv" + odd, Turn: "turn" + odd, Calls: []journal.Call{
		{ID: "c" + odd, Tool: "read_file", Path: "/p" + odd, Arguments: json.RawMessage(`{"path":"x"}`), Disposition: "auto"},
	}}
	content := odd + string(frame(append([]byte{1, 3}, "forged"...)))
	steps := []func() error{
		func() error { return j.BeginBatch(ctx, b) },
		func() error { return j.StartCall(ctx, "b1", b.Calls[0].ID, time.Time{}) },
		func() error {
			return j.FinishCall(ctx, "b1", b.Calls[0].ID, journal.Result{OK: true, Content: content})
		},
		func() error { return j.EndBatch(ctx, "b1") },
	}
	for i, step := range steps {
		if err := step(); err != nil {
			t.Fatalf("step %d: %v", i, err)
		}
	}
	log := stepLogOf(t, jpath)
	j.Close()
	r, err := replayAsDead(t, log)
	if err != nil {
		t.Fatalf("replaying a log of odd bytes: %v", err)
	}
	got, err := r.Batch(ctx, "b1")
	if err != nil {
		t.Fatalf("the replayed batch: %v", err)
	}
	if got.Conversation != b.Conversation || got.Turn != b.Turn || len(got.Calls) != 1 || got.Calls[0].ID != b.Calls[0].ID {
		t.Errorf("replayed batch %q %q %+v, want %q %q %q", got.Conversation, got.Turn, got.Calls, b.Conversation, b.Turn, b.Calls[0].ID)
	}
	if len(got.Calls) == 1 && (got.Calls[0].Result == nil || got.Calls[0].Result.Content != content) {
		t.Errorf("replayed result %+v, want content %q", got.Calls[0].Result, content)
	}
}

// forgedReads is the payload of a binary step-log record (logcodec.go)
// numbered seq: conversation conv read path, whose content hashes to sum.
func forgedReads(seq uint64, conv, path, sum string) []byte {
	str := func(b []byte, s string) []byte { return append(binary.AppendUvarint(b, uint64(len(s))), s...) }
	p := binary.AppendUvarint([]byte{1}, seq) // format 1, the sequence number
	p = str(p, "")                            // no batch
	p = append(p, 1)                          // a reads record
	p = str(p, conv)
	p = binary.AppendUvarint(p, 1)
	p = str(p, path)
	p = str(p, sum)
	return append(p, 0) // no time: every byte below 0x80 but the header's

}

// Attack (prompt-injected model, then a crash after a rewind): the step
// log is written from its start again once applied (rewind), leaving the
// last lap's bytes after the new end. A record copies its strings as they
// are, and one of them is the model's: a call's Path is the text of its
// path argument when the sandbox did not resolve it (engine.firstPath),
// so a path refused for its NUL byte reaches the log with its NUL and
// C0 bytes, enough to hold a whole framed record (a JSON record, or a
// binary one with small numbers, its header made ASCII by varying the
// payload as forgedRecord does). If that frame sits where the new lap
// ends when the process dies (a command the model runs can kill its
// toolhost, and a session the model drives writes records of sizes it
// can predict), replay reads it as the next record: here a read of
// victim.go by conversation "victim" that never happened, which lets
// that conversation overwrite a file it never saw whose content hash it
// can tell (a file of a public repository, an empty one); a batch whose
// run_command was "approved by the user" enters the history as easily. The log below
// is what such a crash leaves: a lap (journal C) over the start of an
// earlier one (journal A), whose call's path holds the frame.
// Expected: replay stops where the last lap ends; a record is never taken
// from inside another record's payload.
func TestStepLogRewindTailReplaysFrameInModelPath(t *testing.T) {
	ctx := context.Background()
	// The new lap: one reads record, long enough to end inside the old
	// lap's result.
	c, cpath := openJournal(t)
	if err := c.SaveReads(ctx, "lap2", []journal.Read{{Path: "/w/" + strings.Repeat("p", 600), SHA256: strings.Repeat("0", 64)}}); err != nil {
		t.Fatal(err)
	}
	lap2 := stepLogOf(t, cpath)
	c.Close()
	forged := frame(forgedReads(2, "victim", "/w/victim.go", strings.Repeat("a", 64)))
	oldLap := func(pad int) []byte {
		a, apath := openJournal(t)
		defer a.Close()
		path := "MARK" + strings.Repeat(" ", pad) + string(forged) + strings.Repeat(" ", 64)
		b := journal.Batch{ID: "b1", Conversation: "lap1", Calls: []journal.Call{{ID: "c1", Tool: "read_file", Path: path, Arguments: json.RawMessage(`{}`), Disposition: "denied"}}}
		if err := a.BeginBatch(ctx, b); err != nil {
			t.Fatal(err)
		}
		return stepLogOf(t, apath)
	}
	probe := oldLap(200)
	mark := strings.Index(string(probe), "MARK")
	pad := len(lap2) - mark - len("MARK")
	if mark < 0 || pad < 0 {
		t.Fatalf("the old lap's path starts at %d, past the new lap's end %d", mark, len(lap2))
	}
	lap1 := oldLap(pad)
	if got := string(lap1[len(lap2) : len(lap2)+len(forged)]); got != string(forged) {
		t.Fatalf("the forged frame is not where the new lap ends")
	}
	crashed := append(append([]byte(nil), lap2...), lap1[len(lap2):]...)
	r, err := replayAsDead(t, crashed)
	if err != nil {
		t.Fatalf("replay: %v", err)
	}
	reads, err := r.ListReads(ctx, "victim")
	if err != nil {
		t.Fatal(err)
	}
	if len(reads) > 0 {
		t.Errorf("replay took bytes inside an earlier lap's call path for a record: conversation victim now has read %+v", reads)
	}
}

// Attack (prompt-injected model): a read_file whose path argument is a
// whole framed step-log record (forgedRecord: ASCII header, NUL bytes in
// its length); the sandbox refuses the path for its NUL byte.
// Expected: the refused path is journaled written out (as the refusal
// shows it, "\x00"), never as bytes that frame a record in the step log
// (see StepLogRewindTailReplaysFrameInModelPath for what such a frame
// does after a rewind and a crash).
func TestModelPathNotJournaledAsFraming(t *testing.T) {
	state := t.TempDir()
	h, _ := openHost(t, func(_ *config.Config, o *host.Options) { o.StateDir = state })
	forged := forgedRecord(t)
	r := runBatch(t, h, nil, call("l", "read_file", jsonArgs(t, map[string]any{"path": forged})))[0]
	if r.OK {
		t.Fatal("read_file of a path with a NUL byte succeeded")
	}
	logs, _ := filepath.Glob(filepath.Join(state, "*.logs", "*"))
	for _, l := range logs {
		if data, _ := os.ReadFile(l); strings.Contains(string(data), forged) {
			t.Errorf("step log %s holds the model's framed record byte for byte", filepath.Base(l))
		}
	}
}
