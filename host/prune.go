package host

import (
	"context"
	"log/slog"
	"time"

	"github.com/toolhost/toolhost/host/internal/jobs"
	"github.com/toolhost/toolhost/host/internal/journal"
)

// pruneEvery is how often a long-running host prunes its journal after
// the first time, when it opens.
const pruneEvery = 6 * time.Hour

// pruner removes what is older than the journal's retention ([journal]
// retention_days) off the start-up path: when the host opens, then every
// pruneEvery while it runs (toolhost serve).
type pruner struct {
	stop chan struct{}
	done chan struct{}
}

// The commands' kept outputs (jobs.Manager.PruneOutputs) go with the
// journal's records of the calls that made them, past the same retention.
func startPruner(j *journal.Journal, outputs *jobs.Manager, retention time.Duration, log *slog.Logger) *pruner {
	p := &pruner{stop: make(chan struct{}), done: make(chan struct{})}
	go func() {
		defer close(p.done)
		for {
			st, err := j.Prune(context.Background(), time.Now())
			switch {
			case err != nil:
				log.Error("cannot prune the journal; it keeps growing until it can", "journal", j.Path(), "err", err)
			case st != (journal.PruneStats{}):
				log.Info("pruned the journal past its retention", "journal", j.Path(), "batches", st.Batches, "reads", st.Reads, "contents", st.Blobs)
			}
			if n, err := outputs.PruneOutputs(time.Now().Add(-retention)); err != nil {
				log.Error("cannot prune the kept command outputs; they stay bounded by tools.jobs.keep_total_bytes", "err", err)
			} else if n > 0 {
				log.Info("pruned kept command outputs past the journal's retention", "outputs", n)
			}
			select {
			case <-p.stop:
				return
			case <-time.After(pruneEvery):
			}
		}
	}()
	return p
}

func (p *pruner) close() {
	if p != nil {
		close(p.stop)
		<-p.done
	}
}
