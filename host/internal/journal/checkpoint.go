package journal

import (
	"context"
	"database/sql"
	"sync"
	"sync/atomic"
	"time"
)

// Checkpointing moves the write-ahead log into the database file. SQLite
// does it by itself in the commit that crosses a thousand pages, and there
// it costs that commit the two fsyncs that synchronous=NORMAL saves every
// other one. A journal on disk checkpoints on a connection of its own
// instead, in the background: a PASSIVE checkpoint never takes the write
// lock, so the calls' commits go on meanwhile. It cannot catch up with
// commits that never pause, so SQLite's own checkpoint stays on as the
// bound, at walAutocheckpoint pages, and the log is cut back to
// walSizeLimit bytes once it restarts.
const (
	pageSize          = 16 << 10
	walAutocheckpoint = 1024 // 16 MiB of pages of 16 KiB, 4 MiB of a journal with pages of 4
	walSizeLimit      = 4 << 20

	// checkpointEvery is how often the checkpointer looks for commits.
	checkpointEvery = time.Second
	// checkpointAfter steps committed, the checkpointer is woken at once,
	// which bounds the log at a few hundred pages whatever the pace of
	// calls. Steps, not commits: the applier commits many in one.
	checkpointAfter = 256
)

type checkpointer struct {
	db      *sql.DB
	commits atomic.Int64
	wake    chan struct{}
	stop    chan struct{}
	done    chan struct{}
	once    sync.Once
}

func startCheckpointer(dsn string) (*checkpointer, error) {
	db, err := sql.Open("sqlite", dsn)
	if err != nil {
		return nil, err
	}
	db.SetMaxOpenConns(1)
	c := &checkpointer{db: db, wake: make(chan struct{}, 1), stop: make(chan struct{}), done: make(chan struct{})}
	go c.run()
	return c, nil
}

// committed counts a commit of steps, waking the checkpointer every
// checkpointAfter steps.
func (c *checkpointer) committed(steps int) {
	if c == nil {
		return
	}
	if n := c.commits.Add(int64(steps)); n/checkpointAfter != (n-int64(steps))/checkpointAfter {
		select {
		case c.wake <- struct{}{}:
		default:
		}
	}
}

func (c *checkpointer) run() {
	defer close(c.done)
	tick := time.NewTicker(checkpointEvery)
	defer tick.Stop()
	var last int64
	for {
		select {
		case <-c.stop:
			return
		case <-tick.C:
		case <-c.wake:
		}
		if n := c.commits.Load(); n != last {
			// A failure (another process holds the checkpoint lock) is
			// retried at the next tick, and SQLite checkpoints when the
			// last connection closes anyway.
			if _, err := c.db.ExecContext(context.Background(), "PRAGMA wal_checkpoint(PASSIVE)"); err == nil {
				last = n
			}
		}
	}
}

func (c *checkpointer) close() {
	if c == nil {
		return
	}
	c.once.Do(func() {
		close(c.stop)
		<-c.done
		c.db.Close()
	})
}
