package host_test

import (
	"context"
	"errors"
	"path/filepath"
	"testing"
	"time"

	"github.com/toolhost/toolhost/host/internal/inside"
	"github.com/toolhost/toolhost/host/internal/journal"
)

// A host prunes its journal
// when it opens, off the start-up path: a finished batch older than the
// retention goes, a recent one and an interrupted old one stay.
func TestHostPrunesJournal(t *testing.T) {
	state, root := t.TempDir(), t.TempDir()
	ctx := context.Background()
	j, err := journal.Open(ctx, filepath.Join(state, "journal.db"), journal.Options{})
	if err != nil {
		t.Fatal(err)
	}
	old := time.Now().Add(-40 * 24 * time.Hour)
	for _, b := range []struct {
		id      string
		created time.Time
		end     bool
	}{{"old_done", old, true}, {"old_open", old, false}, {"new_done", time.Now(), true}} {
		batch := journal.Batch{ID: b.id, Conversation: "c", Created: b.created, Calls: []journal.Call{{ID: "x", Tool: "read_file", Disposition: "execute",
			Result: &journal.Result{OK: true, Content: "kept until pruned"}}}}
		if err := j.BeginBatch(ctx, batch); err != nil {
			t.Fatal(err)
		}
		if b.end {
			if err := j.EndBatch(ctx, b.id); err != nil {
				t.Fatal(err)
			}
		}
	}
	j.Close()

	h := openState(t, root, state)
	defer h.Close(ctx)
	deadline := time.Now().Add(10 * time.Second)
	for {
		_, err := h.Inside(inside.Key{}).Journal.Batch(ctx, "old_done")
		if errors.Is(err, journal.ErrNotFound) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the batch past retention is still in the journal 10 s after the host opened (%v)", err)
		}
		time.Sleep(20 * time.Millisecond)
	}
	for _, id := range []string{"old_open", "new_done"} {
		if _, err := h.Inside(inside.Key{}).Journal.Batch(ctx, id); err != nil {
			t.Errorf("batch %s was pruned: %v", id, err)
		}
	}
}
