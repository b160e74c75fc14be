package journal

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
)

// BenchmarkJournalCall measures what the journal adds to one call of an
// eight-call batch as the engine records it: the batch with the first
// call's start, then each result with the next call's start, and the last
// result with the batch's end, each one commit (FR-RES-04a/b), on disk
// (WAL, synchronous=NORMAL) and in memory. Target: at most
// 100 µs per call on disk.
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
			res := Result{OK: true, Content: strings.Repeat("a result of 4 KiB, as make bench reads.\n", 100)}
			b.ResetTimer()
			batches := 0
			for i := 0; i < b.N; i += per {
				batch := testBatch(fmt.Sprintf("b%d", batches), per)
				batches++
				step := Step{Batch: &batch, Starts: []string{batch.Calls[0].ID}}
				for k := range per {
					if err := j.Commit(ctx, batch.ID, step); err != nil {
						b.Fatal(err)
					}
					step = Step{Results: []CallResult{{batch.Calls[k].ID, res}}}
					if k+1 < per {
						step.Starts = []string{batch.Calls[k+1].ID}
					} else {
						step.End = true
					}
				}
				if err := j.Commit(ctx, batch.ID, step); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(b.Elapsed().Microseconds())/float64(batches*per), "µs/call")
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

// BenchmarkJournalOneCall measures the two commits of a batch of one call
// (what each MCP tools/call is): the batch with its start, then the
// result with the batch's end.
func BenchmarkJournalOneCall(b *testing.B) {
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
			res := Result{OK: true, Content: strings.Repeat("a result of 4 KiB, as make bench reads.\n", 100)}
			b.ResetTimer()
			for i := range b.N {
				batch := testBatch(fmt.Sprintf("b%09d", i), 1)
				if err := j.Commit(ctx, batch.ID, Step{Batch: &batch, Starts: []string{batch.Calls[0].ID}}); err != nil {
					b.Fatal(err)
				}
				if err := j.Commit(ctx, batch.ID, Step{Results: []CallResult{{batch.Calls[0].ID, res}}, End: true}); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(b.Elapsed().Microseconds())/float64(b.N), "µs/call")
		})
	}
}
