package journal

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"time"
)

// applier takes a journal on disk's steps: Commit checks a step against
// what it knows of the batch, logs it (wlog.go) and queues it; a goroutine
// applies what is queued to the database, many steps to a transaction.
// Every other use of the database first waits for the steps logged before
// it to be applied (database.drain), so reads see every committed step and
// writes build on them.
type applier struct {
	j   *Journal
	log *stepLog

	mu      sync.Mutex
	cond    *sync.Cond // signals queued records, and progress to drain
	queue   []logRecord
	logged  uint64 // seq of the last record queued
	applied uint64 // seq of the last record applied (or found invalid)
	err     error  // the database refused the last attempt: Commit fails
	closed  bool
	done    chan struct{}
	kick    chan struct{} // a record was queued
	urgent  chan struct{} // someone waits for the queue: apply now

	// live are the batches this journal began and has not ended: steps on
	// them are checked here, so that Commit refuses what the database
	// would. Steps on other batches are committed to the database directly.
	live  map[string]*liveBatch
	ended map[string]bool // recently ended, so that their ids are not reused
}

type liveBatch struct {
	calls map[string]*liveCall
}

type liveCall struct{ started, finished bool }

const (
	// maxQueued bounds the steps waiting for the database: Commit waits
	// for the applier beyond it.
	maxQueued = 4096
	// applyDelay is how long the applier lets steps gather before it
	// applies them, unless someone waits for them: one transaction for a
	// busy server's many calls, not one each, which would cost the calls
	// the CPU (a 2-core machine runs the tools and the applier side by
	// side). Other processes see the steps that much later.
	applyDelay = 20 * time.Millisecond
	// rewindAt is the log size past which the applier starts it over once
	// everything in it is applied.
	rewindAt = 4 << 20
	// maxEnded bounds the ended ids kept; beyond it they are forgotten and
	// the database's own key refuses a reused one when it is applied.
	maxEnded = 10000
)

func startApplier(j *Journal) (*applier, error) {
	if err := os.Mkdir(LogDir(j.path), 0o700); err != nil && !errors.Is(err, os.ErrExist) {
		return nil, err
	}
	l, err := createLog(LogDir(j.path), logName(j.path, j.ownerPID, j.ownerStart))
	if err != nil {
		return nil, err
	}
	a := &applier{j: j, log: l, done: make(chan struct{}), kick: make(chan struct{}, 1), urgent: make(chan struct{}, 1),
		live: map[string]*liveBatch{}, ended: map[string]bool{}}
	a.cond = sync.NewCond(&a.mu)
	go a.run()
	return a, nil
}

// commit checks s against the batch, stamps its times, logs it and
// queues it for the database.
func (a *applier) commit(ctx context.Context, batchID string, s Step) error {
	a.mu.Lock()
	lb := a.live[batchID]
	if lb == nil && s.Batch == nil {
		// Not a batch this journal is running: straight to the database,
		// which takes it after what is queued (database.drain).
		a.mu.Unlock()
		return a.j.commitNow(ctx, batchID, s)
	}
	defer a.mu.Unlock()
	if err := a.room("record batch " + batchID); err != nil {
		return err
	}
	if err := a.check(lb, batchID, s); err != nil {
		return err
	}
	if err := a.enqueue("record batch "+batchID, logRecord{Batch: batchID, Step: a.j.capped(stamped(s))}); err != nil {
		return err
	}
	a.update(lb, batchID, s)
	return nil
}

// room waits, a.mu held, until the queue has room, and fails when the
// database refuses writes: nothing is logged that it may never take.
func (a *applier) room(op string) error {
	for len(a.queue) >= maxQueued && a.err == nil {
		signal(a.urgent)
		a.cond.Wait()
	}
	if a.err != nil {
		return a.j.fail(op, a.err)
	}
	return nil
}

// enqueue logs rec, a.mu held, and queues it for the applier.
func (a *applier) enqueue(op string, rec logRecord) error {
	if err := a.log.append(&rec); err != nil {
		return a.j.fail(op, err)
	}
	a.queue = append(a.queue, rec)
	a.logged = rec.Seq
	signal(a.kick)
	return nil
}

// signal wakes the applier through c without waiting.
func signal(c chan struct{}) {
	select {
	case c <- struct{}{}:
	default:
	}
}

// commitReads logs a conversation's reads and queues them for the
// database.
func (a *applier) commitReads(conversation string, reads []Read) error {
	a.mu.Lock()
	defer a.mu.Unlock()
	op := "record reads of conversation " + conversation
	if err := a.room(op); err != nil {
		return err
	}
	return a.enqueue(op, logRecord{Reads: &readsRecord{Conversation: conversation, Reads: reads}})
}

// check refuses what the database would: a batch twice, a call id twice
// in a batch, a decision, start or result for a call the batch does not
// have, a second start or result, an end twice.
func (a *applier) check(lb *liveBatch, batchID string, s Step) error {
	if b := s.Batch; b != nil {
		if b.ID == "" {
			return userErrorf("journal: a batch needs an id (conversation %q)", b.Conversation)
		}
		if lb != nil || a.ended[b.ID] {
			return userErrorf("journal: batch %s is already in the journal; give each batch its own id", b.ID)
		}
		lb = &liveBatch{calls: make(map[string]*liveCall, len(b.Calls))}
		for _, c := range b.Calls {
			if lb.calls[c.ID] != nil {
				return userErrorf("journal: batch %s has call id %q more than once; give each call its own id", b.ID, c.ID)
			}
			lb.calls[c.ID] = &liveCall{finished: c.Result != nil}
		}
	}
	call := func(id string) (*liveCall, error) {
		if c := lb.calls[id]; c != nil {
			return c, nil
		}
		return nil, notFoundf("journal: batch %s has no call %q; record the batch with BeginBatch before its calls run", batchID, id)
	}
	for _, d := range s.Decisions {
		if _, err := call(d.CallID); err != nil {
			return err
		}
	}
	finished := map[string]bool{}
	for _, r := range s.Results {
		c, err := call(r.CallID)
		if err != nil {
			return err
		}
		if c.finished || finished[r.CallID] {
			return userErrorf("journal: call %s of batch %s already has a result; a call has exactly one", r.CallID, batchID)
		}
		finished[r.CallID] = true
	}
	for _, id := range s.Starts {
		c, err := call(id)
		if err != nil {
			return err
		}
		switch {
		case c.finished || finished[id]:
			return userErrorf("journal: call %s of batch %s already has a result; a call has exactly one", id, batchID)
		case c.started:
			return userErrorf("journal: call %s of batch %s has already started; a call runs at most once", id, batchID)
		}
	}
	return nil
}

// update records in the live state what a logged step did.
func (a *applier) update(lb *liveBatch, batchID string, s Step) {
	if b := s.Batch; b != nil {
		lb = &liveBatch{calls: make(map[string]*liveCall, len(b.Calls))}
		for _, c := range b.Calls {
			lb.calls[c.ID] = &liveCall{finished: c.Result != nil}
		}
		a.live[batchID] = lb
	}
	for _, r := range s.Results {
		lb.calls[r.CallID].finished = true
	}
	for _, id := range s.Starts {
		lb.calls[id].started = true
	}
	if s.End {
		delete(a.live, batchID)
		if len(a.ended) >= maxEnded {
			clear(a.ended)
		}
		a.ended[batchID] = true
	}
}

// capped is s with its results cut to Options.MaxResultBytes, so that the
// log holds no more than the database will.
func (j *Journal) capped(s Step) Step {
	for i := range s.Results {
		s.Results[i].Result = j.capResult(s.Results[i].Result)
	}
	if s.Batch != nil {
		for i, c := range s.Batch.Calls {
			if c.Result != nil {
				r := j.capResult(*c.Result)
				s.Batch.Calls[i].Result = &r
			}
		}
	}
	return s
}

// stamped is s with every time it leaves to "now" set, so that the step
// applied later, or again, records the same times.
func stamped(s Step) Step {
	s.At = orNow(s.At)
	if s.Batch != nil {
		b := *s.Batch
		b.Created = orNow(b.Created)
		b.Calls = append([]Call(nil), b.Calls...)
		for i, c := range b.Calls {
			if c.Result != nil {
				r := *c.Result
				if r.Finished.IsZero() {
					r.Finished = s.At
				}
				b.Calls[i].Result = &r
			}
		}
		s.Batch = &b
	}
	if len(s.Results) > 0 {
		rs := append([]CallResult(nil), s.Results...)
		for i := range rs {
			if rs[i].Result.Finished.IsZero() {
				rs[i].Result.Finished = s.At
			}
		}
		s.Results = rs
	}
	return s
}

func (a *applier) run() {
	defer close(a.done)
	backoff := 10 * time.Millisecond
	delay := time.NewTimer(applyDelay)
	delay.Stop()
	behind := false // a whole transaction's records are waiting: no delay
	for {
		a.mu.Lock()
		for len(a.queue) == 0 && !a.closed {
			a.mu.Unlock()
			select {
			case <-a.kick:
			case <-a.urgent:
			}
			a.mu.Lock()
		}
		if len(a.queue) == 0 {
			a.mu.Unlock()
			return
		}
		closed := a.closed
		a.mu.Unlock()
		if !closed && !behind {
			delay.Reset(applyDelay)
			select {
			case <-delay.C:
			case <-a.urgent:
				delay.Stop()
			}
		}
		a.mu.Lock()
		recs := a.queue[:min(len(a.queue), maxApplied)]
		a.mu.Unlock()
		err := a.apply(recs)
		a.mu.Lock()
		a.settle(recs, err)
		closed = a.closed
		behind = len(a.queue) >= maxApplied
		a.mu.Unlock()
		switch {
		case err == nil:
			backoff = 10 * time.Millisecond
			a.rewind()
		case closed:
			return // the log keeps them: the next open replays them
		default:
			time.Sleep(backoff)
			backoff = min(2*backoff, time.Second)
		}
	}
}

// apply applies recs, the head of the queue, in one transaction, with
// the steps of each batch they begin folded into its first (coalesce).
func (a *applier) apply(recs []logRecord) error {
	return a.j.applyTx(context.Background(), a.log.name, a.j.owner(), coalesce(recs), recs[len(recs)-1].Seq)
}

// rewind starts the log over once it is larger than rewindAt. Under
// steady load there is always a step logged and not yet applied, so it
// holds the commits back while it applies what is queued, and rewinds the
// log while nothing can be added to it.
func (a *applier) rewind() {
	if !a.log.larger(rewindAt) {
		return
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	for len(a.queue) > 0 {
		recs := a.queue[:min(len(a.queue), maxApplied)]
		err := a.apply(recs)
		if a.settle(recs, err); err != nil {
			return // the next round retries
		}
	}
	a.log.rewind(a.applied, rewindAt)
}

// settle records, a.mu held, how applying recs (the head of the queue)
// went, and wakes those waiting on it.
func (a *applier) settle(recs []logRecord, err error) {
	a.err = err
	if err == nil {
		a.applied = recs[len(recs)-1].Seq
		if len(recs) == len(a.queue) {
			// Reuse the queue's array, holding on to no step's content.
			clear(a.queue)
			a.queue = a.queue[:0]
		} else {
			a.queue = a.queue[len(recs):]
		}
	}
	a.cond.Broadcast()
}

// drain waits until every step logged before it is applied, or the
// database refused them.
func (a *applier) drain() {
	a.mu.Lock()
	defer a.mu.Unlock()
	target := a.logged
	if a.applied < target {
		signal(a.urgent)
	}
	for a.applied < target && a.err == nil {
		a.cond.Wait()
	}
}

// close applies what is queued, stops the goroutine and removes the log
// if everything in it reached the database; otherwise the log stays, for
// the next journal to open it to replay.
func (a *applier) close() error {
	a.mu.Lock()
	a.closed = true
	a.cond.Broadcast()
	a.mu.Unlock()
	signal(a.urgent)
	<-a.done
	a.mu.Lock()
	complete := a.err == nil && len(a.queue) == 0
	err := a.err
	a.mu.Unlock()
	cerr := a.log.close()
	if complete {
		path := filepath.Join(LogDir(a.j.path), a.log.name)
		if rerr := os.Remove(path); rerr != nil && !errors.Is(rerr, os.ErrNotExist) {
			return rerr
		}
		a.j.forgetLog(context.Background(), a.log.name)
	}
	return errors.Join(err, cerr)
}

// applyRecords applies recs, logged in log name by process by, in
// transactions of at most maxApplied records, each with the log's applied
// sequence number. A record the database refuses as a caller's mistake or
// against a constraint (checked already; possible only for a batch id
// another process took, or a log toolhost did not write) is skipped; any
// other failure rolls its transaction back and stops.
func (j *Journal) applyRecords(ctx context.Context, name string, by owner, recs []logRecord) error {
	for len(recs) > 0 {
		n := min(len(recs), maxApplied)
		if err := j.applyTx(ctx, name, by, recs[:n], recs[n-1].Seq); err != nil {
			return err
		}
		recs = recs[n:]
	}
	return nil
}

// maxApplied bounds the records of one transaction, so that the pages it
// changes (a 4 KiB result takes a page of its own) fit SQLite's page
// cache: past it, SQLite writes pages to the write-ahead log before the
// commit, and again at the commit.
const maxApplied = 256

// errRefused is a record the database refused while applying without
// savepoints: the transaction is rolled back and applied again, a
// savepoint a record, to skip it alone.
var errRefused = errors.New("a record was refused")

// applyTx applies recs in one transaction, with last, the sequence
// number of the last record they stand for. Records that Commit checked
// are almost never refused, so they are applied first without a savepoint
// each (two more statements a record); only when one is refused is the
// transaction applied again with them.
func (j *Journal) applyTx(ctx context.Context, name string, by owner, recs []logRecord, last uint64) error {
	err := j.applyTxSaving(ctx, name, by, recs, last, false)
	if errors.Is(err, errRefused) {
		err = j.applyTxSaving(ctx, name, by, recs, last, true)
	}
	return err
}

func (j *Journal) applyTxSaving(ctx context.Context, name string, by owner, recs []logRecord, last uint64, savepoints bool) error {
	tx, err := j.db.DB.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer tx.Rollback()
	for _, rec := range recs {
		if err := j.applyRecord(ctx, tx, by, rec, savepoints); err != nil {
			return applyError(rec, err)
		}
	}
	if _, err := tx.StmtContext(ctx, j.stmts.logApplied).ExecContext(ctx, name, int64(last)); err != nil {
		return err
	}
	if err := tx.Commit(); err != nil {
		return err
	}
	j.ckpt.committed(len(recs))
	return nil
}

// applyRecord applies rec in tx; with savepoints, a record refused is
// skipped, and without, it fails with errRefused.
func (j *Journal) applyRecord(ctx context.Context, tx *sql.Tx, by owner, rec logRecord, savepoints bool) error {
	if savepoints {
		if _, err := tx.ExecContext(ctx, "SAVEPOINT step"); err != nil {
			return err
		}
	}
	var err error
	if rec.Reads != nil {
		err = j.applyReads(ctx, tx, rec.Reads.Conversation, rec.Reads.Reads)
	} else {
		err = j.applyStep(ctx, tx, by, rec.Batch, rec.Step, rec.folded)
	}
	var uerr *userError
	switch {
	case errors.As(err, &uerr), isConstraint(err):
		if !savepoints {
			return errRefused
		}
		if _, err := tx.ExecContext(ctx, "ROLLBACK TO step"); err != nil {
			return err
		}
	case err != nil:
		return err
	}
	if savepoints {
		if _, err := tx.ExecContext(ctx, "RELEASE step"); err != nil {
			return err
		}
	}
	return nil
}

// applyError names the record the database did not take: the error
// reaches the user through a later call, or through a replay, neither
// of which is about that record's batch.
func applyError(rec logRecord, err error) error {
	if rec.Reads != nil {
		return fmt.Errorf("applying step log record %d (reads of conversation %s): %w", rec.Seq, rec.Reads.Conversation, err)
	}
	return fmt.Errorf("applying step log record %d (batch %s): %w", rec.Seq, rec.Batch, err)
}

const sqlLogApplied = `INSERT INTO logs (name, applied) VALUES (?, ?)
	ON CONFLICT (name) DO UPDATE SET applied = excluded.applied`

// forgetLog removes a log's row once its file is gone.
func (j *Journal) forgetLog(ctx context.Context, name string) {
	j.db.DB.ExecContext(ctx, `DELETE FROM logs WHERE name = ?`, name)
}

// replayLogs applies what the logs of processes that are gone left
// unapplied, then removes them: a crash loses no step it logged.
func (j *Journal) replayLogs(ctx context.Context, sys System) error {
	if j.path == Memory {
		return nil
	}
	dir := LogDir(j.path)
	entries, err := os.ReadDir(dir)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return j.fail("list step logs", err)
	}
	for _, e := range entries {
		pid, start, ok := parseLogName(j.path, e.Name())
		if !ok || (pid == j.ownerPID && start == j.ownerStart) || sys.ProcessAlive(pid, start) {
			continue
		}
		path := filepath.Join(dir, e.Name())
		if !ownLog(path) {
			continue
		}
		if err := j.replayLog(ctx, path, owner{pid, start}); err != nil {
			return err
		}
	}
	return nil
}

// ownLog reports whether path is a log as toolhost makes them: a regular
// file of this user that no one else may read or write. Anything else in
// the directory was not written by toolhost and is never replayed.
func ownLog(path string) bool {
	fi, err := os.Lstat(path)
	if err != nil || !fi.Mode().IsRegular() || fi.Mode().Perm()&0o077 != 0 {
		return false
	}
	return fileOwner(fi) == os.Getuid()
}

func (j *Journal) replayLog(ctx context.Context, path string, by owner) error {
	name := filepath.Base(path)
	recs, err := readLog(path)
	if err != nil {
		return unreplayable(path, err)
	}
	var applied int64
	err = j.db.DB.QueryRowContext(ctx, `SELECT applied FROM logs WHERE name = ?`, name).Scan(&applied)
	if err != nil && !errors.Is(err, sql.ErrNoRows) {
		return j.fail("replay step log "+path, err)
	}
	var todo []logRecord
	for _, r := range recs {
		if r.Seq > uint64(applied) {
			todo = append(todo, r)
		}
	}
	if len(todo) > 0 {
		if err := j.applyRecords(ctx, name, by, todo); err != nil {
			return fmt.Errorf("%w; the step log is kept and replayed when the journal next opens: if it cannot be, %s",
				j.fail("replay step log "+path, err), moveAside(path))
		}
	}
	if err := os.Remove(path); err != nil && !errors.Is(err, os.ErrNotExist) {
		return j.fail("remove replayed step log "+name, err)
	}
	j.forgetLog(ctx, name)
	return nil
}

// unreplayable is the error for a dead process's step log that cannot be
// applied: not something this toolhost wrote, or written by another
// version. It is never deleted; the user moves it aside.
func unreplayable(path string, err error) error {
	return fmt.Errorf("journal step log %s cannot be replayed (%w): toolhost never deletes it; %s", path, err, moveAside(path))
}

// moveAside says how to set aside the step log at path that cannot be
// replayed, under a name replay passes over (parseLogName), and what
// that costs.
func moveAside(path string) string {
	return fmt.Sprintf("move it aside (mv %[1]s %[1]s.bad) and start again: the steps it holds will be missing from the journal's history", path)
}

// database is the journal's database as every use but the applier's sees
// it: each first waits for the steps logged before it to be applied.
type database struct {
	*sql.DB
	app **applier
}

func (d database) drain() {
	if *d.app != nil {
		(*d.app).drain()
	}
}

func (d database) QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row {
	d.drain()
	return d.DB.QueryRowContext(ctx, query, args...)
}

func (d database) QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error) {
	d.drain()
	return d.DB.QueryContext(ctx, query, args...)
}

func (d database) ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error) {
	d.drain()
	return d.DB.ExecContext(ctx, query, args...)
}

func (d database) BeginTx(ctx context.Context, opts *sql.TxOptions) (*sql.Tx, error) {
	d.drain()
	return d.DB.BeginTx(ctx, opts)
}
