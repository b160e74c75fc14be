package journal

import (
	"context"
	"fmt"
	"path/filepath"
	"testing"
	"time"
)

// BenchmarkJournalCall measures what the journal adds to one call: its
// start and its result, each committed on its own (FR-RES-04b), on disk
// (WAL, synchronous=NORMAL) and in memory. The batch itself is begun
// outside the timer, eight calls at a time like make bench's batch.
// Target (issue 12): at most 100 µs per call on disk.
func BenchmarkJournalCall(b *testing.B) {
	for _, tc := range []struct {
		name string
		path func() string
	}{
		{"disk", func() string { return filepath.Join(b.TempDir(), "journal.db") }},
		{"memory", func() string { return Memory }},
	} {
		b.Run(tc.name, func(b *testing.B) {
			j := openJournal(b, tc.path(), Options{})
			ctx := context.Background()
			const per = 8
			var batch Batch
			b.ResetTimer()
			for i := range b.N {
				if i%per == 0 {
					b.StopTimer()
					batch = testBatch(fmt.Sprintf("b%d", i), per)
					if err := j.BeginBatch(ctx, batch); err != nil {
						b.Fatal(err)
					}
					b.StartTimer()
				}
				c := batch.Calls[i%per]
				if err := j.StartCall(ctx, batch.ID, c.ID, time.Time{}); err != nil {
					b.Fatal(err)
				}
				if err := j.FinishCall(ctx, batch.ID, c.ID, Result{OK: true, Content: "a result of some length, as a read_file returns"}); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(b.Elapsed().Microseconds())/float64(b.N), "µs/call")
		})
	}
}

// BenchmarkJournalBatch measures BeginBatch of eight calls, the one
// transaction before a batch runs.
func BenchmarkJournalBatch(b *testing.B) {
	j := openJournal(b, filepath.Join(b.TempDir(), "journal.db"), Options{})
	ctx := context.Background()
	for i := range b.N {
		if err := j.BeginBatch(ctx, testBatch(fmt.Sprintf("b%d", i), 8)); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Microseconds())/float64(b.N), "µs/batch")
}
