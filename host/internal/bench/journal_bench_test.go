package bench

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"github.com/toolhost/toolhost/host/internal/engine"
	"github.com/toolhost/toolhost/host/internal/inside"
	"github.com/toolhost/toolhost/host/internal/journal"
	"github.com/toolhost/toolhost/host/internal/readcache"
)

// BenchmarkBatchJournal: BenchmarkBatch8's batch (8 read_file calls of 4
// KiB, no events), and a batch of one such call (what each MCP tools/call
// is), with the journal on disk (WAL, synchronous=NORMAL), in memory, and
// off, in one run (make bench). ns/op is the batch with the
// journal; off-ns/op the same batch without one, timed over as many
// iterations; us-added/call what the journal adds to each call (target:
// at most 100 on disk); us/record the time of one journal step.
func BenchmarkBatchJournal(b *testing.B) {
	for _, n := range []int{8, 1} {
		b.Run(fmt.Sprintf("calls=%d", n), func(b *testing.B) { benchJournal(b, n) })
	}
}

func benchJournal(b *testing.B, n int) {
	e := setup(b)
	calls := make([]engine.Call, n)
	for i := range calls {
		calls[i] = engine.Call{ID: fmt.Sprint("c", i), Name: "read_file", Arguments: json.RawMessage(`{"path":"small.txt"}`)}
	}
	pol := engine.DefaultPolicy()
	pol.Denylist = nil
	pol.Approval = engine.ApprovalAuto
	newEngine := func(j engine.Journal) *engine.Engine {
		return engine.New(engine.Config{Registry: e.reg, Sandbox: e.sb, Policy: pol, Journal: j,
			ReadCache: func(string) *readcache.Cache { return e.reads }})
	}
	batch := func(eng *engine.Engine) func() error {
		return func() error {
			// Plan gives each batch an id of its own, as the journal needs.
			_, results := eng.Process(context.Background(), engine.Batch{Conversation: "bench", Calls: calls}, nil, engine.RunOptions{})
			for _, r := range results {
				if !r.OK {
					return r.Error
				}
			}
			return nil
		}
	}
	off := batch(newEngine(nil))
	for _, where := range []string{"disk", "memory"} {
		b.Run(where, func(b *testing.B) {
			path := journal.Memory
			if where == "disk" {
				path = filepath.Join(b.TempDir(), "journal.db")
			}
			j, err := journal.Open(context.Background(), path, journal.Options{})
			if err != nil {
				b.Fatal(err)
			}
			defer j.Close()
			tj := &timedJournal{Journal: inside.EngineJournal(j)}
			on := batch(newEngine(tj))
			for range 20 {
				if err := on(); err != nil {
					b.Fatal(err)
				}
				if err := off(); err != nil {
					b.Fatal(err)
				}
			}
			b.ResetTimer()
			for b.Loop() {
				if err := on(); err != nil {
					b.Fatal(err)
				}
			}
			b.StopTimer()
			onNs := float64(b.Elapsed().Nanoseconds()) / float64(b.N)
			start := time.Now()
			for range b.N {
				if err := off(); err != nil {
					b.Fatal(err)
				}
			}
			offNs := float64(time.Since(start).Nanoseconds()) / float64(b.N)
			b.ReportMetric(offNs, "off-ns/op")
			b.ReportMetric(float64(tj.total.Load())/float64(tj.n.Load())/1e3, "us/record")
			b.ReportMetric(float64(tj.n.Load())/float64(b.N+20), "records/op")
			b.ReportMetric(float64(tj.batch.Load())/float64(b.N+20)/1e3, "us/batchrecord")
			b.ReportMetric((onNs-offNs)/float64(len(calls))/1e3, "us-added/call")
		})
	}
}

// timedJournal times the engine's journal steps.
type timedJournal struct {
	engine.Journal
	total atomic.Int64
	n     atomic.Int64
	batch atomic.Int64
}

func (t *timedJournal) Record(ctx context.Context, id string, s engine.JournalStep) error {
	start := time.Now()
	err := t.Journal.Record(ctx, id, s)
	if s.Batch != nil {
		t.batch.Add(int64(time.Since(start)))
	}
	t.total.Add(int64(time.Since(start)))
	t.n.Add(1)
	return err
}
