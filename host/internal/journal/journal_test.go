package journal

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

// childEnv makes the test binary act as a second toolhost process: a
// child of the test, run by TestMain (see child_test.go).
const childEnv = "TOOLHOST_JOURNAL_TEST_CHILD"

func TestMain(m *testing.M) {
	if mode := os.Getenv(childEnv); mode != "" {
		os.Exit(runChild(mode))
	}
	os.Exit(m.Run())
}

func openJournal(t testing.TB, path string, opts Options) *Journal {
	t.Helper()
	j, err := Open(context.Background(), path, opts)
	if err != nil {
		t.Fatalf("Open(%s): %v", path, err)
	}
	t.Cleanup(func() { j.Close() })
	return j
}

func testBatch(id string, calls int) Batch {
	b := Batch{ID: id, Conversation: "conv-1", Turn: "turn-1"}
	for i := range calls {
		b.Calls = append(b.Calls, Call{
			ID: fmt.Sprintf("%s-call-%d", id, i), Tool: "read_file",
			Arguments: []byte(fmt.Sprintf(`{"path":"f%d.txt"}`, i)), Disposition: "execute",
		})
	}
	return b
}

// rawDB opens the journal file beside the package, to check or damage
// what the package wrote.
func rawDB(t *testing.T, path string) *sql.DB {
	t.Helper()
	db, err := sql.Open("sqlite", "file:"+path+"?_busy_timeout=5000")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

// Open migrates an empty database to the current schema,
// on disk in WAL mode and in memory.
func TestOpenMigratesFromEmpty(t *testing.T) {
	for _, tc := range []struct {
		name string
		path func(t *testing.T) string
		mode string
	}{
		{"disk", func(t *testing.T) string { return filepath.Join(t.TempDir(), "journal.db") }, "wal"},
		{"memory", func(*testing.T) string { return Memory }, "memory"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			j := openJournal(t, tc.path(t), Options{})
			ctx := context.Background()
			var v int
			var mode string
			if err := j.db.QueryRowContext(ctx, "PRAGMA user_version").Scan(&v); err != nil {
				t.Fatal(err)
			}
			if err := j.db.QueryRowContext(ctx, "PRAGMA journal_mode").Scan(&mode); err != nil {
				t.Fatal(err)
			}
			if v != SchemaVersion || mode != tc.mode {
				t.Errorf("user_version %d, journal_mode %s; want %d, %s", v, mode, SchemaVersion, tc.mode)
			}
			var fk, sync int
			j.db.QueryRowContext(ctx, "PRAGMA foreign_keys").Scan(&fk)
			j.db.QueryRowContext(ctx, "PRAGMA synchronous").Scan(&sync)
			if fk != 1 || (tc.name == "disk" && sync != 1) {
				t.Errorf("foreign_keys %d, synchronous %d; want 1, 1 (NORMAL)", fk, sync)
			}
			if err := j.BeginBatch(ctx, testBatch("b1", 2)); err != nil {
				t.Fatal(err)
			}
		})
	}
}

// A reopened journal holds what was written, and Open
// does not migrate again.
func TestReopenKeepsData(t *testing.T) {
	path := filepath.Join(t.TempDir(), "journal.db")
	ctx := context.Background()
	j, err := Open(ctx, path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if err := j.BeginBatch(ctx, testBatch("b1", 3)); err != nil {
		t.Fatal(err)
	}
	if err := j.StartCall(ctx, "b1", "b1-call-0", time.Time{}); err != nil {
		t.Fatal(err)
	}
	if err := j.FinishCall(ctx, "b1", "b1-call-0", Result{OK: true, Content: "hello"}); err != nil {
		t.Fatal(err)
	}
	if err := j.SaveReads(ctx, "conv-1", []Read{{Path: "/r/a", SHA256: "aa"}}); err != nil {
		t.Fatal(err)
	}
	j.Close()

	j = openJournal(t, path, Options{})
	b, err := j.Batch(ctx, "b1")
	if err != nil {
		t.Fatal(err)
	}
	if len(b.Calls) != 3 || b.Calls[0].Result == nil || b.Calls[0].Result.Content != "hello" || b.State != StateOpen {
		t.Fatalf("reopened batch = %+v", b)
	}
	if r, err := j.ListReads(ctx, "conv-1"); err != nil || len(r) != 1 || r[0].SHA256 != "aa" {
		t.Fatalf("reopened reads = %+v %v", r, err)
	}
}

// A journal written by a newer toolhost is refused with
// the file and both versions named, and left as it was.
func TestNewerVersionRefused(t *testing.T) {
	path := filepath.Join(t.TempDir(), "journal.db")
	j := openJournal(t, path, Options{})
	j.Close()
	db := rawDB(t, path)
	if _, err := db.Exec(fmt.Sprintf("PRAGMA user_version = %d", SchemaVersion+1)); err != nil {
		t.Fatal(err)
	}
	db.Close()
	before := readFile(t, path)

	_, err := Open(context.Background(), path, Options{})
	var verr *VersionError
	if !errors.As(err, &verr) || verr.Have != SchemaVersion+1 || verr.Want != SchemaVersion {
		t.Fatalf("Open = %v, want a *VersionError %d > %d", err, SchemaVersion+1, SchemaVersion)
	}
	for _, want := range []string{path, fmt.Sprint(SchemaVersion + 1), "newer toolhost"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not say %q", err, want)
		}
	}
	if string(readFile(t, path)) != string(before) {
		t.Error("Open changed the newer journal")
	}
}

// The fault test of "Done when": a file that is not a
// journal, or a journal with damaged pages, gives a *CorruptError naming
// the file and how to move it aside, and stays byte-identical.
func TestCorruptFileRefused(t *testing.T) {
	for _, tc := range []struct {
		name   string
		damage func(t *testing.T, path string)
	}{
		{"not a database", func(t *testing.T, path string) {
			writeFile(t, path, []byte("these are not the bytes of a SQLite database, but a user's notes\n"))
		}},
		{"damaged pages", func(t *testing.T, path string) {
			j := openJournal(t, path, Options{})
			ctx := context.Background()
			for i := range 50 {
				if err := j.BeginBatch(ctx, testBatch(fmt.Sprintf("b%d", i), 8)); err != nil {
					t.Fatal(err)
				}
			}
			j.Close()
			b := readFile(t, path)
			if len(b) < 8*4096 {
				t.Fatalf("journal is only %d bytes", len(b))
			}
			// Overwrite pages after the first (the header stays valid)
			// with garbage.
			for i := 4096 + 100; i < len(b)-100; i += 7 {
				b[i] ^= 0x5a
			}
			writeFile(t, path, b)
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "journal.db")
			tc.damage(t, path)
			before := readFile(t, path)

			_, err := Open(context.Background(), path, Options{Check: true})
			var cerr *CorruptError
			if !errors.As(err, &cerr) || cerr.Path != path {
				t.Fatalf("Open = %v, want a *CorruptError for %s", err, path)
			}
			// Without the check at open, the first operation that
			// meets the damage reports it the same way.
			if j, err := Open(context.Background(), path, Options{}); err == nil {
				_, err = j.ListBatches(context.Background(), Filter{})
				j.Close()
				if !errors.As(err, &cerr) || cerr.Path != path || !strings.Contains(err.Error(), "move it aside") {
					t.Errorf("ListBatches on a damaged journal = %v, want a *CorruptError for %s", err, path)
				}
				if string(readFile(t, path)) != string(before) {
					t.Error("opening and reading the damaged file changed it")
				}
			}
			for _, want := range []string{path, "move it aside", "never deletes"} {
				if !strings.Contains(err.Error(), want) {
					t.Errorf("error %q does not say %q", err, want)
				}
			}
			if string(readFile(t, path)) != string(before) {
				t.Error("Open changed the damaged file")
			}
		})
	}
}

// Two Journals on one file, written from two goroutines
// at once, wait for each other through the busy timeout and lose nothing.
func TestTwoJournalsOneFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "journal.db")
	const per = 40
	js := []*Journal{openJournal(t, path, Options{}), openJournal(t, path, Options{})}
	var wg sync.WaitGroup
	errs := make(chan error, len(js))
	for w, j := range js {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs <- writeBatches(context.Background(), j, fmt.Sprintf("g%d", w), per)
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	// A journal's steps reach the database in the background: another
	// journal sees them once applied, and Close applies everything.
	if err := js[1].Close(); err != nil {
		t.Fatal(err)
	}
	checkBatches(t, js[0], []string{"g0", "g1"}, per)
}

// Two toolhost processes (the test binary run twice)
// share one journal file.
func TestTwoProcessesOneFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "journal.db")
	openJournal(t, path, Options{}).Close() // both children find it migrated or migrate it together
	const per = 40
	var cmds []*exec.Cmd
	for w := range 2 {
		cmd := childCommand(t, "write", path, fmt.Sprintf("p%d", w), fmt.Sprint(per))
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		cmds = append(cmds, cmd)
	}
	for _, cmd := range cmds {
		if err := cmd.Wait(); err != nil {
			t.Fatalf("child: %v\n%s", err, cmd.Stderr)
		}
	}
	checkBatches(t, openJournal(t, path, Options{}), []string{"p0", "p1"}, per)
}

// writeBatches writes n complete batches of three calls, as the engine
// will: begin, then start and finish each call, then end.
func writeBatches(ctx context.Context, j *Journal, prefix string, n int) error {
	for i := range n {
		b := testBatch(fmt.Sprintf("%s-%d", prefix, i), 3)
		if err := j.BeginBatch(ctx, b); err != nil {
			return err
		}
		for _, c := range b.Calls {
			if err := j.StartCall(ctx, b.ID, c.ID, time.Time{}); err != nil {
				return err
			}
			if err := j.FinishCall(ctx, b.ID, c.ID, Result{OK: true, Content: "ok " + c.ID}); err != nil {
				return err
			}
		}
		if err := j.EndBatch(ctx, b.ID); err != nil {
			return err
		}
	}
	return nil
}

func checkBatches(t *testing.T, j *Journal, prefixes []string, per int) {
	t.Helper()
	ctx := context.Background()
	got, err := j.ListBatches(ctx, Filter{Limit: 10000})
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != per*len(prefixes) {
		t.Fatalf("%d batches, want %d", len(got), per*len(prefixes))
	}
	for _, s := range got {
		if s.State != StateDone || s.Calls != 3 || s.Unfinished != 0 || s.Failed != 0 {
			t.Errorf("batch %+v, want done with 3 finished calls", s)
		}
	}
}

func readFile(t *testing.T, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func writeFile(t *testing.T, path string, b []byte) {
	t.Helper()
	if err := os.WriteFile(path, b, 0o600); err != nil {
		t.Fatal(err)
	}
}
