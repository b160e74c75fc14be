package journal

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// Find resolves a batch id, a call's journal id, and a client's call id
// when one call has it; a client id several calls have is refused with
// the calls, newest first.
func TestFind(t *testing.T) {
	j := openJournal(t, Memory, Options{})
	ctx := context.Background()
	t0 := time.Date(2025, 6, 1, 9, 0, 0, 0, time.UTC)
	for i, id := range []string{"b-old", "b-mid", "b-new"} {
		b := Batch{ID: id, Conversation: "c", Created: t0.Add(time.Duration(i) * time.Hour), Calls: []Call{
			{ID: "call_1", Tool: "write_file", Path: fmt.Sprintf("/w/f%d.txt", i), Arguments: []byte(`{}`), Disposition: "execute"},
			{ID: "only-" + id, Tool: "read_file", Arguments: []byte(`{"path":"rel.txt"}`), Disposition: "execute"},
		}}
		mustDo(t, j.BeginBatch(ctx, b))
	}
	// A client id that looks like a journal id is still found as a
	// client id when no call has that journal id.
	mustDo(t, j.BeginBatch(ctx, Batch{ID: "b-x", Created: t0, Calls: []Call{{ID: "b-nope.1", Tool: "t", Disposition: "execute"}}}))

	for _, tc := range []struct {
		id   string
		want Target
	}{
		{"b-mid", Target{BatchID: "b-mid", JournalID: "b-mid", Tool: "write_file", Path: "/w/f1.txt", Time: t0.Add(time.Hour)}},
		{"b-mid.1", Target{BatchID: "b-mid", CallID: "call_1", JournalID: "b-mid.1", Tool: "write_file", Path: "/w/f1.txt", Time: t0.Add(time.Hour)}},
		{"b-old.2", Target{BatchID: "b-old", CallID: "only-b-old", JournalID: "b-old.2", Tool: "read_file", Path: "rel.txt", Time: t0}},
		{"only-b-new", Target{BatchID: "b-new", CallID: "only-b-new", JournalID: "b-new.2", Tool: "read_file", Path: "rel.txt", Time: t0.Add(2 * time.Hour)}},
		{"b-nope.1", Target{BatchID: "b-x", CallID: "b-nope.1", JournalID: "b-x.1", Tool: "t", Time: t0}},
	} {
		got, err := j.Find(ctx, tc.id)
		if err != nil || got != tc.want {
			t.Errorf("Find(%q) = %+v, %v; want %+v", tc.id, got, err, tc.want)
		}
	}
	for _, id := range []string{"nothing", "b-mid.3", "b-mid.0", "b-mid.01", "b-mid.+1", ".1"} {
		if _, err := j.Find(ctx, id); !errors.Is(err, ErrNotFound) || !strings.Contains(err.Error(), fmt.Sprintf("%q", id)) {
			t.Errorf("Find(%q) = %v, want not found naming it", id, err)
		}
	}

	_, err := j.Find(ctx, "call_1")
	var amb *AmbiguousError
	if !errors.As(err, &amb) || amb.Total != 3 || len(amb.Candidates) != 3 {
		t.Fatalf("Find(call_1) = %v, want an *AmbiguousError with 3 candidates", err)
	}
	for i, want := range []string{"b-new.1", "b-mid.1", "b-old.1"} {
		if c := amb.Candidates[i]; c.JournalID != want || c.Tool != "write_file" || c.Path == "" || c.Time.IsZero() {
			t.Errorf("candidate %d = %+v, want %s with tool, path and time (newest first)", i, c, want)
		}
	}
	for _, want := range []string{"3 calls", `"call_1"`, "b-new.1  write_file  /w/f2.txt  2025-06-01T11:00:00Z", "journal id"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not say %q", err, want)
		}
	}

	// More than MaxCandidates: the newest are listed, the rest counted.
	for i := range MaxCandidates {
		mustDo(t, j.BeginBatch(ctx, Batch{ID: fmt.Sprintf("b-more%d", i), Created: t0.Add(time.Duration(10+i) * time.Hour),
			Calls: []Call{{ID: "call_1", Tool: "read_file", Disposition: "execute"}}}))
	}
	if _, err := j.Find(ctx, "call_1"); !errors.As(err, &amb) || amb.Total != 3+MaxCandidates || len(amb.Candidates) != MaxCandidates ||
		amb.Candidates[0].BatchID != fmt.Sprintf("b-more%d", MaxCandidates-1) || !strings.Contains(err.Error(), "and 3 older") {
		t.Errorf("Find(call_1) = %v, want the %d newest of %d", err, MaxCandidates, 3+MaxCandidates)
	}
}

// Calls read back carry their journal id and first path, and a batch's
// summary its first tool and path; arguments written with HTML escapes
// read back plain.
func TestCallJournalIDsAndPaths(t *testing.T) {
	j := openJournal(t, Memory, Options{})
	ctx := context.Background()
	mustDo(t, j.BeginBatch(ctx, Batch{ID: "b1", Calls: []Call{
		{ID: "c1", Tool: "run_command", Arguments: []byte(`{"command":"a \u003e b \u0026\u0026 c \\u003e"}`), Disposition: "execute"},
		{ID: "c2", Tool: "apply_patch", Arguments: []byte(`{"patch":"..."}`), Disposition: "execute"},
	}}))
	_, err := j.RecordPreimages(ctx, "b1", "c2", []FileBefore{{Path: "/w/patched.go"}})
	mustDo(t, err)
	b, err := j.Batch(ctx, "b1")
	mustDo(t, err)
	if c := b.Calls[0]; c.JournalID != "b1.1" || c.Path != "" || string(c.Arguments) != `{"command":"a > b && c \\u003e"}` {
		t.Errorf("call 1 = %s %q %s; want b1.1, no path, arguments without HTML escapes (an escaped backslash kept)", c.JournalID, c.Path, c.Arguments)
	}
	if c := b.Calls[1]; c.JournalID != "b1.2" || c.Path != "/w/patched.go" {
		t.Errorf("call 2 = %s %q; want b1.2 and the file it changed", c.JournalID, c.Path)
	}
	list, err := j.ListBatches(ctx, Filter{})
	mustDo(t, err)
	if len(list) != 1 || list[0].Tool != "run_command" || list[0].Path != "/w/patched.go" {
		t.Errorf("summary %+v; want the first tool and the first path any call names", list)
	}
}

// A journal of schema version 1 is migrated: its calls keep their ids,
// get journal ids, and are described by their "path" argument.
func TestMigrateVersion1(t *testing.T) {
	path := filepath.Join(t.TempDir(), "journal.db")
	db := rawDB(t, path)
	for _, q := range []string{migrations[0], "PRAGMA user_version = 1",
		`INSERT INTO batches (id, conversation, created_at, state, updated_at, owner_pid, owner_start) VALUES ('batch_1', 'c', 1, 'done', 1, 1, 0)`,
		`INSERT INTO calls (batch_id, seq, id, tool, arguments, disposition) VALUES ('batch_1', 0, 'call_1', 'read_file', '{"path":"a\u003eb.txt"}', 'execute')`,
	} {
		if _, err := db.Exec(q); err != nil {
			t.Fatal(err)
		}
	}
	db.Close()
	j := openJournal(t, path, Options{})
	ctx := context.Background()
	got, err := j.Find(ctx, "call_1")
	if err != nil || got.JournalID != "batch_1.1" || got.Path != "a>b.txt" {
		t.Errorf("Find(call_1) in a migrated journal = %+v, %v", got, err)
	}
	if _, err := j.Find(ctx, "batch_1.1"); err != nil {
		t.Errorf("Find(batch_1.1) in a migrated journal: %v", err)
	}
	mustDo(t, j.BeginBatch(ctx, Batch{ID: "b2", Calls: []Call{{ID: "x", Tool: "write_file", Path: "/w/x", Disposition: "execute"}}}))
}
