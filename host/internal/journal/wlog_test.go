package journal

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"hash/crc32"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"
)

// FR-RES-04a/b, NFR-REL-04: a step is durable
// once Commit returns, though it reaches the database in the background: a
// process killed right after committing loses nothing. The next open
// replays its step log, each step once, and removes the log.
func TestStepLogSurvivesKill(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "journal.db")
	openJournal(t, path, Options{}).Close()
	const n = 200
	cmd := childCommand(t, "burst", path, "200")
	err := cmd.Run()
	if ws, ok := cmd.ProcessState.Sys().(syscall.WaitStatus); !ok || !ws.Signaled() {
		t.Fatalf("child: %v, want killed by SIGKILL\n%s", err, cmd.Stderr)
	}
	j := openJournal(t, path, Options{})
	ctx := context.Background()
	list, err := j.ListBatches(ctx, Filter{Limit: 1000})
	mustDo(t, err)
	if len(list) != n+1 {
		t.Fatalf("%d batches after the crash, want %d: steps committed before the kill were lost", len(list), n+1)
	}
	b, err := j.Batch(ctx, "last")
	mustDo(t, err)
	if b.State != StateOpen || b.Calls[0].Result == nil || b.Calls[0].Result.Content != "done before the crash" || b.Calls[1].Started.IsZero() {
		t.Errorf("the open batch after replay = %+v, want its first result and its second start", b)
	}
	if reads, err := j.ListReads(ctx, "burst-conv"); err != nil || len(reads) != 1 {
		t.Errorf("reads saved before the kill: %+v, %v; want the one", reads, err)
	}
	logs, _ := filepath.Glob(filepath.Join(LogDir(path), "*"))
	if len(logs) != 1 { // this journal's own
		t.Errorf("step logs after replay: %v, want only the open journal's", logs)
	}
	// The replayed batch is still the dead process's, so recovery takes
	// it: interrupted, its running call too.
	rec, err := j.Recover(ctx, System{})
	mustDo(t, err)
	b, err = j.Batch(ctx, "last")
	mustDo(t, err)
	if len(rec.Batches) != 1 || b.State != StateInterrupted || b.Calls[1].Result == nil || b.Calls[1].Result.ErrorMessage != InterruptedMessage {
		t.Errorf("recovery after replay: %+v, batch %+v; want the batch interrupted", rec, b)
	}
}

// A log's last record cut short by the crash is dropped, the whole ones
// before it applied; a log replayed again (a crash after applying it and
// before removing it) applies nothing twice.
func TestStepLogReplay(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "journal.db")
	j := openJournal(t, path, Options{})
	ctx := context.Background()
	b := testBatch("torn", 2)
	mustDo(t, j.Commit(ctx, "torn", Step{Batch: &b, Starts: []string{"torn-call-0"}}))
	mustDo(t, j.Commit(ctx, "torn", Step{Results: []CallResult{{"torn-call-0", Result{OK: true, Content: "kept"}}}, Starts: []string{"torn-call-1"}}))
	mustDo(t, j.Commit(ctx, "torn", Step{Results: []CallResult{{"torn-call-1", Result{OK: true, Content: "cut"}}}, End: true}))
	own := filepath.Join(LogDir(path), j.app.log.name)
	data, err := os.ReadFile(own)
	mustDo(t, err)
	mustDo(t, j.Close())

	// The log as a dead process left it: its last record cut short,
	// and with it the empty frame written after each record.
	if !bytes.Equal(data[len(data)-logFrame:], make([]byte, logFrame)) {
		t.Fatalf("the log does not end in an empty frame: %q", data[len(data)-logFrame:])
	}
	torn := data[:len(data)-logFrame-5]
	dead := filepath.Join(LogDir(path), logName(path, 999999, 1))
	writeFile(t, dead, torn)
	j = openJournal(t, path, Options{})
	got, err := j.Batch(ctx, "torn")
	mustDo(t, err)
	// The database already had all three steps (Close applied them); the
	// replay must not have applied any twice, or failed on them.
	if got.State != StateDone || got.Calls[0].Result.Content != "kept" || got.Calls[1].Result.Content != "cut" {
		t.Errorf("after replaying an applied log: %+v", got)
	}
	if _, err := os.Stat(dead); err == nil {
		t.Error("a replayed log was left behind")
	}
	mustDo(t, j.Close())

	// Now into a journal that never saw the steps: the two whole records
	// are applied, the cut one is not.
	fresh := filepath.Join(t.TempDir(), "journal.db")
	mustDo(t, os.MkdirAll(LogDir(fresh), 0o700))
	writeFile(t, filepath.Join(LogDir(fresh), logName(fresh, 999999, 1)), torn)
	j = openJournal(t, fresh, Options{})
	got, err = j.Batch(ctx, "torn")
	mustDo(t, err)
	if got.State != StateOpen || got.Calls[0].Result == nil || got.Calls[1].Result != nil || got.Calls[1].Started.IsZero() {
		t.Errorf("after replaying a torn log: %+v, want the first two steps only", got)
	}
}

// A journal's own step log is removed when it closes with everything
// applied, and a live process's log is left alone by another's open.
func TestStepLogLifetime(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "journal.db")
	j := openJournal(t, path, Options{})
	b := testBatch("x", 1)
	mustDo(t, j.Commit(context.Background(), "x", Step{Batch: &b, Starts: []string{"x-call-0"}}))
	own := filepath.Join(LogDir(path), j.app.log.name)
	other := openJournal(t, path, Options{})
	if _, err := os.Stat(own); err != nil {
		t.Fatalf("another journal's open removed a live log: %v", err)
	}
	got, err := other.Batch(context.Background(), "x")
	if err != nil && !strings.Contains(err.Error(), "no batch") {
		t.Fatal(err)
	}
	_ = got
	mustDo(t, j.Close())
	if _, err := os.Stat(own); err == nil {
		t.Error("a closed journal left its step log")
	}
	deadline := time.Now().Add(5 * time.Second)
	for {
		if got, err := other.Batch(context.Background(), "x"); err == nil && got.Calls[0].Started.IsZero() == false {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the other journal never saw the closed journal's steps")
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// Arguments a model sent that are not JSON go through the step log as a
// JSON string of their text, on disk as in memory, instead of failing the
// step (and with it the batch).
func TestStepLogArgumentsNotJSON(t *testing.T) {
	for _, path := range []string{filepath.Join(t.TempDir(), "journal.db"), Memory} {
		j := openJournal(t, path, Options{})
		ctx := context.Background()
		b := testBatch("raw", 1)
		b.Calls[0].Arguments = []byte(`{"path": "a.txt", oops`)
		mustDo(t, j.Commit(ctx, "raw", Step{Batch: &b, Starts: []string{"raw-call-0"}}))
		got, err := j.Batch(ctx, "raw")
		mustDo(t, err)
		if string(got.Calls[0].Arguments) != `"{\"path\": \"a.txt\", oops"` {
			t.Errorf("%s: arguments journaled as %s", path, got.Calls[0].Arguments)
		}
	}
}

// Only logs toolhost writes are replayed: a regular file of this user,
// closed to others, in the journal's own log directory. A link, or a file
// others may write, is left alone; a record toolhost cannot decode stops
// the open naming the log and how to move it aside, and the log is kept.
func TestStepLogReplayRefusesForeignLogs(t *testing.T) {
	frame := func(payload string) []byte {
		b := make([]byte, logFrame, logFrame+len(payload))
		binary.LittleEndian.PutUint32(b[0:4], uint32(len(payload)))
		binary.LittleEndian.PutUint32(b[4:8], crc32.Checksum([]byte(payload), castagnoli))
		return append(b, payload...)
	}
	forged := frame(`{"q":1,"b":"forged","s":{"Batch":{"ID":"forged","Calls":[{"ID":"x","Tool":"run_command","Arguments":{},"Disposition":"execute"}]}}}`)
	for _, tc := range []struct {
		name    string
		plant   func(t *testing.T, logPath string)
		wantErr string
	}{
		{"world-writable", func(t *testing.T, p string) { writeFile(t, p, forged); mustDo(t, os.Chmod(p, 0o666)) }, ""},
		{"symlink", func(t *testing.T, p string) {
			target := filepath.Join(t.TempDir(), "elsewhere")
			writeFile(t, target, forged)
			mustDo(t, os.Symlink(target, p))
		}, ""},
		{"undecodable", func(t *testing.T, p string) { writeFile(t, p, frame(`{"q":"one"}`)) }, "move it aside"},
		{"a length past the end", func(t *testing.T, p string) {
			b := frame("{}")
			binary.LittleEndian.PutUint32(b[0:4], 1<<30)
			writeFile(t, p, b)
		}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "journal.db")
			openJournal(t, path, Options{}).Close()
			logPath := filepath.Join(LogDir(path), logName(path, 999999, 1))
			tc.plant(t, logPath)
			j, err := Open(context.Background(), path, Options{})
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), logPath) || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("Open = %v, want an error naming %s and saying %q", err, logPath, tc.wantErr)
				}
				if _, err := os.Lstat(logPath); err != nil {
					t.Errorf("the log that could not be replayed is gone: %v", err)
				}
				return
			}
			mustDo(t, err)
			defer j.Close()
			if _, err := j.Batch(context.Background(), "forged"); !errors.Is(err, ErrNotFound) {
				t.Errorf("a log toolhost did not write was replayed: %v", err)
			}
		})
	}
}

// Under steady load there is always a step not yet applied, yet the log
// is started over once past its size (red team: it grew without bound). A
// writer commits without pause while the test watches the log pass the
// size and start over twice, its file no larger than one lap.
func TestStepLogBoundedUnderLoad(t *testing.T) {
	path := filepath.Join(t.TempDir(), "journal.db")
	j := openJournal(t, path, Options{})
	ctx := context.Background()
	content := strings.Repeat("x", 4000)
	l := j.app.log
	logPath := filepath.Join(LogDir(path), l.name)
	stop := make(chan struct{})
	done := make(chan error, 1)
	var finished atomic.Bool
	go func() {
		defer finished.Store(true)
		for i := range 20000 { // bounded: about 80 MB of results at most
			select {
			case <-stop:
				done <- nil
				return
			default:
			}
			b := testBatch(fmt.Sprint("load", i), 1)
			if err := j.Commit(ctx, b.ID, Step{Batch: &b, Starts: []string{b.Calls[0].ID}}); err != nil {
				done <- err
				return
			}
			if err := j.Commit(ctx, b.ID, Step{Results: []CallResult{{b.Calls[0].ID, Result{OK: true, Content: content}}}, End: true}); err != nil {
				done <- err
				return
			}
		}
		done <- nil
	}()
	defer func() { close(stop); mustDo(t, <-done) }()
	// The file's size is the furthest any lap reached: when laps reuse
	// it, the second lap adds nothing past the first unless it went
	// further; when they do not, the file holds both.
	var prev, peak, firstSize int64
	laps := 0
	for deadline := time.Now().Add(60 * time.Second); time.Now().Before(deadline) && !finished.Load(); time.Sleep(5 * time.Millisecond) {
		l.mu.Lock()
		end := l.size
		l.mu.Unlock()
		if end < prev && peak > rewindAt {
			fi, err := os.Stat(logPath)
			mustDo(t, err)
			if laps++; laps == 1 {
				firstSize = fi.Size()
			} else {
				if fi.Size() >= firstSize+peak {
					t.Errorf("the step log's file is %d bytes after laps of %d and %d: its space is not reused", fi.Size(), firstSize, peak)
				}
				return
			}
			peak = 0
		}
		peak, prev = max(peak, end), end
	}
	t.Errorf("the step log passed %d bytes and was not started over twice while commits went on (laps: %d)", rewindAt, laps)
}

// rewoundLog makes dir/test.log, writes records of the content lengths
// before to it and starts it over. write appends a record of n bytes of
// content and returns its sequence number; last is the last one before
// the rewind.
func rewoundLog(t *testing.T, dir string, before []int) (l *stepLog, write func(n int) uint64, last uint64) {
	t.Helper()
	l, err := createLog(dir, "test.log")
	mustDo(t, err)
	t.Cleanup(func() { l.close() })
	write = func(n int) uint64 {
		rec := logRecord{Batch: "b", Step: Step{Results: []CallResult{{"c", Result{Content: strings.Repeat("x", n)}}}}}
		mustDo(t, l.append(&rec))
		return rec.Seq
	}
	for _, n := range before {
		last = write(n)
	}
	l.rewind(last, 0)
	return l, write, last
}

// A log started over holds its new records at its start and the last
// lap's after them; reading it gives the new records, in order, whatever
// the lengths of the old ones, and nothing else that was not applied
// already (a log rewound and not written since reads as the last lap,
// which replay skips as applied).
func TestStepLogRewoundReadsNewRecords(t *testing.T) {
	for _, tc := range []struct {
		name          string
		before, after []int // content lengths of the records of each lap
	}{
		{"shorter records after", []int{500, 500, 500, 500}, []int{10, 10}},
		{"longer records after", []int{10, 10, 10, 10, 10}, []int{700}},
		{"ending where an old record began", []int{100, 100, 100}, []int{100}},
		{"nothing after", []int{100, 100}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			_, write, last := rewoundLog(t, dir, tc.before)
			var want []uint64
			for _, n := range tc.after {
				want = append(want, write(n))
			}
			recs, err := readLog(filepath.Join(dir, "test.log"))
			mustDo(t, err)
			var got []uint64
			for _, r := range recs {
				if r.Seq > last {
					got = append(got, r.Seq)
				}
			}
			if !slices.Equal(got, want) {
				t.Errorf("read records %v, want %v", got, want)
			}
		})
	}
}

// A log an earlier toolhost left when it died holds JSON records, with
// no empty frame after the last; the next open replays it all the same.
func TestStepLogReplaysJSONLog(t *testing.T) {
	at := time.Unix(1_700_000_000, 0).UTC()
	b := testBatch("old", 2)
	b.Created = at
	var data []byte
	for i, s := range []Step{
		{Batch: &b, Starts: []string{"old-call-0"}, At: at},
		{Results: []CallResult{{"old-call-0", Result{OK: true, Content: "kept", Finished: at}}}, Starts: []string{"old-call-1"}, At: at},
	} {
		payload, err := json.Marshal(logRecord{Seq: uint64(i + 1), Batch: "old", Step: s})
		mustDo(t, err)
		head := make([]byte, logFrame)
		binary.LittleEndian.PutUint32(head[0:4], uint32(len(payload)))
		binary.LittleEndian.PutUint32(head[4:8], crc32.Checksum(payload, castagnoli))
		data = append(append(data, head...), payload...)
	}
	path := filepath.Join(t.TempDir(), "journal.db")
	mustDo(t, os.MkdirAll(LogDir(path), 0o700))
	writeFile(t, filepath.Join(LogDir(path), logName(path, 999999, 1)), data)
	j := openJournal(t, path, Options{})
	got, err := j.Batch(context.Background(), "old")
	mustDo(t, err)
	if got.State != StateOpen || len(got.Calls) != 2 || got.Calls[0].Result == nil || got.Calls[0].Result.Content != "kept" ||
		got.Calls[1].Started.IsZero() || got.Calls[1].Result != nil {
		t.Errorf("replayed %+v, want the batch with its first result and its second start", got)
	}
}

// A crash may leave any prefix of a record's write (a record and the
// empty frame after it are one write, which a power cut can tear, and a
// killed process too past a page) over the earlier lap of a rewound log.
// Reading it gives the records written whole, the torn one only when all
// of it is there, and never a record of the earlier lap after a newer one.
func TestStepLogTornOverEarlierLap(t *testing.T) {
	for _, tc := range []struct {
		name          string
		before, after []int // content lengths of the records of each lap
	}{
		{"first record after the rewind", []int{40, 300, 7, 120}, []int{60}},
		{"third record after the rewind", []int{40, 300, 7, 120, 90}, []int{10, 25, 60}},
		{"records as long as the last lap's", []int{50, 50, 50, 50}, []int{50, 50}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			file := filepath.Join(dir, "test.log")
			l, write, last := rewoundLog(t, dir, tc.before)
			var whole []uint64
			for _, n := range tc.after[:len(tc.after)-1] {
				whole = append(whole, write(n))
			}
			start := l.size
			old, err := os.ReadFile(file)
			mustDo(t, err)
			torn := write(tc.after[len(tc.after)-1])
			written, err := os.ReadFile(file)
			mustDo(t, err)
			end := l.size + logFrame // the record and its empty frame
			for cut := start; cut <= end; cut++ {
				crashed := append(append([]byte(nil), written[:cut]...), old[cut:]...)
				mustDo(t, os.WriteFile(file, crashed, 0o600))
				recs, err := readLog(file)
				if err != nil {
					t.Fatalf("torn %d bytes into the record: %v", cut-start, err)
				}
				want := whole
				if bytes.Equal(crashed[start:l.size], written[start:l.size]) { // the earlier lap may hold the rest
					want = append(slices.Clip(whole), torn)
				}
				var got []uint64
				for i, r := range recs {
					if i > 0 && r.Seq != recs[i-1].Seq+1 {
						t.Fatalf("torn %d bytes into the record: read %d after %d", cut-start, r.Seq, recs[i-1].Seq)
					}
					if r.Seq > last {
						got = append(got, r.Seq)
					}
				}
				if !slices.Equal(got, want) {
					t.Errorf("torn %d of %d bytes into the record: read records %v, want %v", cut-start, end-start, got, want)
				}
			}
		})
	}
}

// breakCalls makes the database fail every insert of a call for a reason
// that is neither the caller's mistake nor a constraint (a trigger that
// parses malformed JSON), as a damaged or foreign schema would.
func breakCalls(t *testing.T, db *sql.DB) {
	t.Helper()
	if _, err := db.Exec(`CREATE TRIGGER boom AFTER INSERT ON calls BEGIN SELECT json('{'); END`); err != nil {
		t.Fatal(err)
	}
}

// When the database cannot take a logged step, the error names the
// step's batch, not only the call that meets the failure later, and a
// replay that fails says where the log is and that it is kept.
func TestStepLogApplyFailureNamesBatch(t *testing.T) {
	ctx := context.Background()
	t.Run("applier", func(t *testing.T) {
		j := openJournal(t, filepath.Join(t.TempDir(), "journal.db"), Options{})
		breakCalls(t, j.db.DB)
		b := testBatch("first", 1)
		mustDo(t, j.Commit(ctx, "first", Step{Batch: &b}))
		j.db.drain()
		next := testBatch("next", 1)
		err := j.Commit(ctx, "next", Step{Batch: &next})
		if err == nil || !strings.Contains(err.Error(), "batch first") {
			t.Errorf("Commit after the database refused batch first's step = %v, want an error naming it", err)
		}
	})
	t.Run("replay", func(t *testing.T) {
		path := filepath.Join(t.TempDir(), "journal.db")
		j := openJournal(t, path, Options{})
		breakCalls(t, j.db.DB)
		mustDo(t, j.Close())
		name := logName(path, 999999, 1)
		l, err := createLog(LogDir(path), name)
		mustDo(t, err)
		b := testBatch("dead", 1)
		mustDo(t, l.append(&logRecord{Batch: "dead", Step: Step{Batch: &b}}))
		mustDo(t, l.close())
		_, err = Open(ctx, path, Options{})
		logPath := filepath.Join(LogDir(path), name)
		for _, want := range []string{path, logPath, "batch dead", "kept"} {
			if err == nil || !strings.Contains(err.Error(), want) {
				t.Errorf("Open replaying a log the database refuses = %v, want it to say %q", err, want)
			}
		}
		if _, serr := os.Stat(logPath); serr != nil {
			t.Errorf("the log that could not be replayed is gone: %v", serr)
		}
		// Moved aside as the error says, it is kept and left alone.
		mustDo(t, os.Rename(logPath, logPath+".bad"))
		j2, err := Open(ctx, path, Options{})
		if err != nil {
			t.Fatalf("Open after the log was moved aside as told: %v", err)
		}
		mustDo(t, j2.Close())
		if _, serr := os.Stat(logPath + ".bad"); serr != nil {
			t.Errorf("the log moved aside is gone: %v", serr)
		}
	})
}

// Only the names logName makes are step logs; anything else in the
// directory, a log moved aside included, is never replayed.
func TestParseLogName(t *testing.T) {
	for _, tc := range []struct {
		name string
		ok   bool
	}{
		{logName("/s/journal.db", 42, 7), true},
		{"journal.db.log-42-7-0badcafe", true},
		{"journal.db.log-42-7-0badcafe.bad", false},
		{"journal.db.log-42-7-0BADCAFE", false},
		{"journal.db.log-42-7-badcafe", false},
		{"journal.db.log-42-7", false},
		{"journal.db.log-0-7-0badcafe", false},
		{"other.db.log-42-7-0badcafe", false},
	} {
		if _, _, ok := parseLogName("/s/journal.db", tc.name); ok != tc.ok {
			t.Errorf("parseLogName(%q) ok = %v, want %v", tc.name, ok, tc.ok)
		}
	}
}
