package journal

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// The journal benchmarks report what a call costs in three ways, because
// on disk most of the work happens after Commit returns, on the applier's
// goroutine and the checkpointer's connection:
//
//   - call-µs/call: the time the calls spent in Commit (logging a step,
//     and waiting when the applier's queue is full);
//   - cpu-µs/call: the CPU time of the whole process (every thread, from
//     getrusage) from the first call until every step is applied and
//     checkpointed into the database file, divided by the calls;
//   - ns/op, B/op and allocs/op: the same span, in wall time and in the
//     allocations of every goroutine.
//
// The timer stops only once the journal has caught up, so nothing a call
// leaves to the background is missed.

// callMeter accumulates the time spent in Commit.
type callMeter struct {
	inCalls time.Duration
	cpu0    time.Duration
}

func startMeter(b *testing.B) *callMeter {
	b.ResetTimer()
	return &callMeter{cpu0: processCPU()}
}

func (m *callMeter) commit(b *testing.B, j *Journal, batchID string, s Step) {
	t := time.Now()
	if err := j.Commit(context.Background(), batchID, s); err != nil {
		b.Fatal(err)
	}
	m.inCalls += time.Since(t)
}

// stop waits for the journal to catch up (every step applied, the
// write-ahead log checkpointed), stops the timer and reports per call.
func (m *callMeter) stop(b *testing.B, j *Journal, calls int) {
	j.db.drain()
	if j.ckpt != nil {
		if _, err := j.ckpt.db.Exec("PRAGMA wal_checkpoint(PASSIVE)"); err != nil {
			b.Fatal(err)
		}
	}
	cpu := processCPU() - m.cpu0
	b.StopTimer()
	n := float64(calls)
	b.ReportMetric(float64(m.inCalls.Microseconds())/n, "call-µs/call")
	b.ReportMetric(float64(cpu.Microseconds())/n, "cpu-µs/call")
}

var benchStores = []struct {
	name string
	path func(b *testing.B) string
}{
	{"disk", func(b *testing.B) string { return filepath.Join(b.TempDir(), "journal.db") }},
	{"memory", func(*testing.B) string { return Memory }},
}

// benchResult is a result of 4 KiB, as make bench reads.
var benchResult = Result{OK: true, Content: strings.Repeat("a result of 4 KiB, as make bench reads.\n", 100)}

// BenchmarkJournalCall measures what the journal adds to one call of an
// eight-call batch as the engine records it: the batch with the first
// call's start, then each result with the next call's start, and the last
// result with the batch's end, each one commit (FR-RES-04a/b), on disk
// (WAL, synchronous=NORMAL) and in memory. An op is one call.
func BenchmarkJournalCall(b *testing.B) {
	for _, tc := range benchStores {
		b.Run(tc.name, func(b *testing.B) {
			j := openJournal(b, tc.path(b), Options{})
			const per = 8
			batches := (b.N + per - 1) / per
			m := startMeter(b)
			for n := range batches {
				batch := testBatch(fmt.Sprintf("b%d", n), per)
				step := Step{Batch: &batch, Starts: []string{batch.Calls[0].ID}}
				for k := range per {
					m.commit(b, j, batch.ID, step)
					step = Step{Results: []CallResult{{batch.Calls[k].ID, benchResult}}}
					if k+1 < per {
						step.Starts = []string{batch.Calls[k+1].ID}
					} else {
						step.End = true
					}
				}
				m.commit(b, j, batch.ID, step)
			}
			m.stop(b, j, batches*per)
		})
	}
}

// BenchmarkJournalBatch measures BeginBatch of eight calls, the one
// transaction before a batch runs.
func BenchmarkJournalBatch(b *testing.B) {
	j := openJournal(b, filepath.Join(b.TempDir(), "journal.db"), Options{})
	m := startMeter(b)
	for i := range b.N {
		batch := testBatch(fmt.Sprintf("b%d", i), 8)
		m.commit(b, j, batch.ID, Step{Batch: &batch})
	}
	m.stop(b, j, b.N)
}

// BenchmarkJournalOneCall measures the two commits of a batch of one call
// (what each MCP tools/call is): the batch with its start, then the
// result with the batch's end. An op is one call.
func BenchmarkJournalOneCall(b *testing.B) {
	for _, tc := range benchStores {
		b.Run(tc.name, func(b *testing.B) {
			j := openJournal(b, tc.path(b), Options{})
			m := startMeter(b)
			for i := range b.N {
				batch := testBatch(fmt.Sprintf("b%09d", i), 1)
				m.commit(b, j, batch.ID, Step{Batch: &batch, Starts: []string{batch.Calls[0].ID}})
				m.commit(b, j, batch.ID, Step{Results: []CallResult{{batch.Calls[0].ID, benchResult}}, End: true})
			}
			m.stop(b, j, b.N)
		})
	}
}
