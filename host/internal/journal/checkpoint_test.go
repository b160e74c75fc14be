package journal

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// The journal moves SQLite's checkpoint out of commits (it would cost a
// call two fsyncs now and then) into the background, and keeps SQLite's
// own, much later, as the bound: the write-ahead log must stay bounded
// even when commits never pause for the background checkpoint.
func TestCheckpointBoundsLog(t *testing.T) {
	path := filepath.Join(t.TempDir(), "journal.db")
	j := openJournal(t, path, Options{})
	ctx := context.Background()
	content := strings.Repeat("x", 4000)
	const batches = 250 // 2,250 commits; without checkpoints the log passes 18 MB
	for i := range batches {
		b := testBatch(fmt.Sprint("b", i), 8)
		step := Step{Batch: &b, Starts: []string{b.Calls[0].ID}}
		for k := range 8 {
			mustDo(t, j.Commit(ctx, b.ID, step))
			step = Step{Results: []CallResult{{b.Calls[k].ID, Result{OK: true, Content: content}}}}
			if k < 7 {
				step.Starts = []string{b.Calls[k+1].ID}
			} else {
				step.End = true
			}
		}
		mustDo(t, j.Commit(ctx, b.ID, step))
	}
	var page int64
	mustDo(t, j.db.QueryRowContext(ctx, "PRAGMA page_size").Scan(&page))
	fi, err := os.Stat(path + "-wal")
	mustDo(t, err)
	if fi.Size() > (walAutocheckpoint+512)*page {
		t.Errorf("write-ahead log is %d bytes after %d commits: the background checkpoint does not keep it bounded", fi.Size(), batches*9)
	}
	mustDo(t, j.Close())
	j2 := openJournal(t, path, Options{})
	got, err := j2.ListBatches(ctx, Filter{Limit: 1000})
	mustDo(t, err)
	if len(got) != batches {
		t.Errorf("reopened journal lists %d batches, want %d", len(got), batches)
	}
}
