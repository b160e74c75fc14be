package journal

import (
	"context"
	"database/sql"
	"fmt"
	"time"
)

// What recovery and the user's choice record for calls of an interrupted
// batch. The kinds are the ToolError kinds the engine reports.
const (
	InterruptedMessage = "interrupted by crash; not re-run (side effects may have occurred)"
	NotRunMessage      = "not run: toolhost stopped (crash) before this call started, and a call is never re-run automatically"
	DiscardedMessage   = "result discarded: the batch was interrupted by a crash and the user chose to discard its results; " +
		"the call was not re-run, and its side effects, if any, remain"

	KindInterrupted = "ExecutionFailed"
	KindNotRun      = "Cancelled"
	KindDiscarded   = "ExecutionFailed"
)

// System is what recovery asks of the operating system. A nil field uses
// this package's function of the same name.
type System struct {
	// ProcessAlive reports whether pid is still the process that started
	// at start: the toolhost process that owns an open batch.
	ProcessAlive func(pid int, start uint64) bool
	// GroupAlive reports whether process group pgid is still the group
	// whose leader started at start and that was known to exist at
	// notAfter (both in clock ticks since boot).
	GroupAlive func(pgid int, start, notAfter uint64) bool
	// KillGroup kills process group pgid.
	KillGroup func(pgid int) error
	// Leaderless reports whether group pgid has members but its leader
	// is gone.
	Leaderless func(pgid int) bool
}

func (s System) withDefaults() System {
	if s.ProcessAlive == nil {
		s.ProcessAlive = ProcessAlive
	}
	if s.GroupAlive == nil {
		s.GroupAlive = GroupAlive
	}
	if s.KillGroup == nil {
		s.KillGroup = KillGroup
	}
	if s.Leaderless == nil {
		s.Leaderless = Leaderless
	}
	return s
}

// CallRef names a call of a batch.
type CallRef struct {
	BatchID string
	CallID  string
}

// Recovery is what Recover did.
type Recovery struct {
	// Batches were open, their process gone: now interrupted.
	Batches []string
	// Interrupted calls had started and had no result: they now have
	// InterruptedMessage.
	Interrupted []CallRef
	// NotRun calls had not started: they now have NotRunMessage.
	NotRun []CallRef
	// Killed process groups were still running for an unfinished call.
	Killed []Process
	// Gone process groups were recorded running but had ended, or their
	// pid now belongs to another process, which was left alone.
	Gone []Process
	// KillErrors are the groups that could not be killed, and why.
	KillErrors []error
}

// Recover first applies what the step logs of processes that are gone
// hold and the database does not, then finds the batches left open by a
// toolhost process that is no longer running (a crash), kills the process groups their unfinished
// calls started if they still run (checked by start time, so a reused pid
// is never signalled), marks the batches interrupted and gives each
// unfinished call its result: InterruptedMessage if it had started,
// NotRunMessage if not. Nothing is re-run (FR-RES-04c, NFR-REL-04).
// Batches of live processes, this one included, are left alone, so any
// toolhost command may recover at start while a server runs.
func (j *Journal) Recover(ctx context.Context, sys System) (*Recovery, error) {
	sys = sys.withDefaults()
	if err := j.replayLogs(ctx, sys); err != nil {
		return nil, err
	}
	type owned struct {
		id    string
		pid   int
		start uint64
	}
	var open []owned
	err := j.rows(ctx, "find open batches", `SELECT id, owner_pid, owner_start FROM batches WHERE state = 'open' ORDER BY created_at`, nil,
		func(rs *sql.Rows) error {
			var o owned
			var start int64
			if err := rs.Scan(&o.id, &o.pid, &start); err != nil {
				return err
			}
			o.start = uint64(start)
			open = append(open, o)
			return nil
		})
	if err != nil {
		return nil, err
	}
	rec := &Recovery{}
	for _, o := range open {
		if o.pid == j.ownerPID && o.start == j.ownerStart {
			continue
		}
		if sys.ProcessAlive(o.pid, o.start) {
			continue
		}
		if err := j.recoverBatch(ctx, sys, o.id, rec); err != nil {
			return rec, err
		}
	}
	return rec, nil
}

// recoverBatch kills first and marks after: a crash in between leaves the
// batch open, and the next recovery checks the groups again; marking first
// could leave a running group that nothing would ever look at again.
func (j *Journal) recoverBatch(ctx context.Context, sys System, batchID string, rec *Recovery) error {
	var procs []Process
	var recorded []uint64
	err := j.rows(ctx, "find processes of batch "+batchID, `SELECT p.call_id, p.pgid, p.start_time, p.started_at FROM processes p
		JOIN calls c ON c.batch_id = p.batch_id AND c.id = p.call_id
		WHERE p.batch_id = ? AND c.finished_at IS NULL`, []any{batchID},
		func(rs *sql.Rows) error {
			p := Process{BatchID: batchID}
			var start, at int64
			if err := rs.Scan(&p.CallID, &p.PGID, &start, &at); err != nil {
				return err
			}
			p.StartTime = uint64(start)
			procs = append(procs, p)
			// The group existed when it was journaled (its leader's
			// clock reads to 10 ms, hence the slack).
			recorded = append(recorded, BootTicks(time.Unix(0, at).Add(50*time.Millisecond)))
			return nil
		})
	if err != nil {
		return err
	}
	for i, p := range procs {
		if !sys.GroupAlive(p.PGID, p.StartTime, recorded[i]) {
			if sys.Leaderless(p.PGID) {
				// Members that started after the group was journaled:
				// the command's late children, or a new group that
				// reused the id. Only a person can tell.
				rec.KillErrors = append(rec.KillErrors, fmt.Errorf("process group %d of call %s (batch %s) holds processes that started after toolhost journaled it: "+
					"they may be the command's or belong to a new group that reused the id, so toolhost left them alone; check with ps -o pid,lstart,args -g %[1]d and stop them with kill -KILL -- -%[1]d if they are the command's",
					p.PGID, p.CallID, batchID))
				continue
			}
			rec.Gone = append(rec.Gone, p)
			continue
		}
		if err := sys.KillGroup(p.PGID); err != nil {
			rec.KillErrors = append(rec.KillErrors, fmt.Errorf("process group %d of call %s (batch %s): %w; stop it by hand (kill -KILL -- -%d)",
				p.PGID, p.CallID, batchID, err, p.PGID))
			continue
		}
		rec.Killed = append(rec.Killed, p)
	}
	return j.tx(ctx, "recover batch "+batchID, func(tx *sql.Tx) error {
		t := nanos(now())
		res, err := tx.ExecContext(ctx, `UPDATE batches SET state = 'interrupted', updated_at = ? WHERE id = ? AND state = 'open'`, t, batchID)
		if err != nil {
			return err
		}
		if n, _ := res.RowsAffected(); n == 0 {
			return nil // another process recovered it first
		}
		var started, notStarted []CallRef
		rs, err := tx.QueryContext(ctx, `SELECT id, started_at IS NOT NULL FROM calls WHERE batch_id = ? AND finished_at IS NULL ORDER BY seq`, batchID)
		if err != nil {
			return err
		}
		for rs.Next() {
			var id string
			var s bool
			if err := rs.Scan(&id, &s); err != nil {
				rs.Close()
				return err
			}
			if s {
				started = append(started, CallRef{batchID, id})
			} else {
				notStarted = append(notStarted, CallRef{batchID, id})
			}
		}
		rs.Close()
		if err := rs.Err(); err != nil {
			return err
		}
		for _, q := range []struct {
			where, kind, msg string
		}{
			{"started_at IS NOT NULL", KindInterrupted, InterruptedMessage},
			{"started_at IS NULL", KindNotRun, NotRunMessage},
		} {
			if _, err := tx.ExecContext(ctx, `UPDATE calls SET finished_at = ?, ok = 0, error_kind = ?, error_message = ?
				WHERE batch_id = ? AND finished_at IS NULL AND `+q.where, t, q.kind, q.msg, batchID); err != nil {
				return err
			}
		}
		rec.Batches = append(rec.Batches, batchID)
		rec.Interrupted = append(rec.Interrupted, started...)
		rec.NotRun = append(rec.NotRun, notStarted...)
		return nil
	})
}

// ResolveInterrupted records the user's choice for an interrupted batch
// (FR-RES-05): resume keeps its partial results as they are; discard marks
// every result failed with DiscardedMessage. The calls stay in the journal
// either way, and nothing is run.
func (j *Journal) ResolveInterrupted(ctx context.Context, batchID string, resume bool) error {
	to := StateDiscarded
	if resume {
		to = StateResumed
	}
	return j.tx(ctx, "resolve batch "+batchID, func(tx *sql.Tx) error {
		var st string
		err := tx.QueryRowContext(ctx, `SELECT state FROM batches WHERE id = ?`, batchID).Scan(&st)
		if err == sql.ErrNoRows {
			return notFoundf("journal: no batch %q to resolve; list the interrupted ones with toolhost journal list", batchID)
		}
		if err != nil {
			return err
		}
		if State(st) != StateInterrupted {
			return &notInterrupted{userError{msg: fmt.Sprintf("journal: batch %s is %s, not interrupted, so there is nothing to resume or discard", batchID, st)}}
		}
		t := nanos(now())
		if _, err := tx.ExecContext(ctx, `UPDATE batches SET state = ?, updated_at = ? WHERE id = ?`, string(to), t, batchID); err != nil {
			return err
		}
		if resume {
			return nil
		}
		_, err = tx.ExecContext(ctx, `UPDATE calls SET ok = 0, error_kind = ?, error_message = ?, finished_at = coalesce(finished_at, ?)
			WHERE batch_id = ?`, KindDiscarded, DiscardedMessage, t, batchID)
		return err
	})
}

// rows runs a query and calls each for every row.
func (j *Journal) rows(ctx context.Context, op, query string, args []any, each func(*sql.Rows) error) error {
	rs, err := j.db.QueryContext(ctx, query, args...)
	if err != nil {
		return j.fail(op, err)
	}
	defer rs.Close()
	for rs.Next() {
		if err := each(rs); err != nil {
			return j.fail(op, err)
		}
	}
	if err := rs.Err(); err != nil {
		return j.fail(op, err)
	}
	return nil
}
