package journal

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"time"
	"unicode/utf8"
)

// State is where a batch stands.
type State string

// Batch states. A batch is open from BeginBatch until EndBatch makes it
// done; recovery makes an open batch of a dead process interrupted, and
// the user's choice makes it resumed or discarded (FR-RES-05).
const (
	StateOpen        State = "open"
	StateDone        State = "done"
	StateInterrupted State = "interrupted"
	StateResumed     State = "resumed"
	StateDiscarded   State = "discarded"
)

// Verdict is a decision on a call that needed approval.
type Verdict string

// Verdicts; the empty Verdict means nobody was asked.
const (
	Approved Verdict = "approved"
	Denied   Verdict = "denied"
)

// Batch is the tool calls of one model response, in call order (FR-RES-01a).
type Batch struct {
	ID           string
	Conversation string    `json:",omitempty"`
	Turn         string    `json:",omitempty"`
	Created      time.Time // BeginBatch sets it when zero
	State        State     `json:",omitempty"` // set when read; BeginBatch writes StateOpen
	Calls        []Call
}

// Call is one call of a batch as journaled.
type Call struct {
	// ID is the call's id within its batch, as its client (a model, an
	// agent) gave it: unique in the batch, not in the journal.
	ID   string
	Tool string
	// Path is the first path the call names, absolute when the sandbox
	// resolved it; "" for a call that names none. When read, a call
	// recorded without one gets the first file it changed, or its
	// "path" argument.
	Path string `json:",omitempty"`
	// Arguments are the call's arguments with secrets already redacted
	// by the caller, as JSON.
	// Arguments that are not JSON are kept as a JSON string of their text.
	Arguments   json.RawMessage
	Disposition string  // the engine's disposition, verbatim
	Decision    Verdict `json:",omitempty"`
	DecidedBy   string  `json:",omitempty"`
	// Result is the call's result: given to BeginBatch for a call
	// resolved without running (pre-resolved), set when read otherwise.
	Result *Result `json:",omitempty"`

	// Set when read.
	JournalID string    `json:",omitempty"` // the call's journal id, CallJournalID(batch, place)
	Started   time.Time `json:",omitzero"`
	Processes []Process `json:",omitempty"`
	Changes   []Change  `json:",omitempty"`
}

// Result is the outcome of a call.
type Result struct {
	OK      bool   `json:",omitempty"`
	Content string `json:",omitempty"`
	// Truncated reports that Content was cut to Options.MaxResultBytes.
	Truncated    bool      `json:",omitempty"`
	ErrorKind    string    `json:",omitempty"`
	ErrorMessage string    `json:",omitempty"`
	Finished     time.Time `json:",omitzero"` // FinishCall sets it when zero
}

// Process is a process group a call started (run_command), with the start
// time of its leader as /proc/PID/stat gives it, so that a pid the system
// has given to another process since is never taken for it.
type Process struct {
	BatchID   string
	CallID    string
	PGID      int
	StartTime uint64
}

// CallDecision is the decision on one call of a batch.
type CallDecision struct {
	CallID  string
	Verdict Verdict
	By      string
}

// Step is what one transaction records for a batch, in this order: the
// batch itself (the first step only), decisions, results of calls that
// ended, starts of calls about to run, and the batch's end. The engine
// folds what it must record before the next call runs into one step, so a
// batch of N calls costs N+1 commits rather than 2N+2, and still every
// call's start is committed before it runs and every result before the
// next call starts (FR-RES-04a/b).
type Step struct {
	Batch     *Batch         `json:",omitempty"`
	Decisions []CallDecision `json:",omitempty"`
	Results   []CallResult   `json:",omitempty"`
	Starts    []string       `json:",omitempty"`
	End       bool           `json:",omitempty"`
	// At is when the step happened: the time of its starts, of results
	// given without a time, and of the end. Zero means now.
	At time.Time `json:",omitzero"`
}

// CallResult is the result of one call of a batch.
type CallResult struct {
	CallID string
	Result Result
}

// Commit records s for batch batchID: all of it or, on error, none of
// it. When Commit returns nil the step is durable: in the step log of a
// journal on disk (wlog.go), from which it reaches the database in the
// background, or in the database itself.
func (j *Journal) Commit(ctx context.Context, batchID string, s Step) error {
	if s.Batch != nil && s.Batch.ID != batchID {
		return userErrorf("journal: a step for batch %s carries batch %s", batchID, s.Batch.ID)
	}
	if s.Batch != nil {
		s.Batch = withJSONArguments(s.Batch)
	}
	if j.app != nil {
		return j.app.commit(ctx, batchID, s)
	}
	return j.commitNow(ctx, batchID, s)
}

// withJSONArguments is b with every call's arguments JSON: arguments that
// are not (a model may send anything) become a JSON string of their text,
// so that the step log can carry them and readers can parse them.
func withJSONArguments(b *Batch) *Batch {
	for i, c := range b.Calls {
		if len(c.Arguments) == 0 || json.Valid(c.Arguments) {
			continue
		}
		copied := *b
		copied.Calls = slices.Clone(b.Calls)
		for k := i; k < len(copied.Calls); k++ {
			if a := copied.Calls[k].Arguments; len(a) > 0 && !json.Valid(a) {
				copied.Calls[k].Arguments, _ = json.Marshal(string(a))
			}
		}
		return &copied
	}
	return b
}

// commitNow records s in the database in one transaction.
func (j *Journal) commitNow(ctx context.Context, batchID string, s Step) error {
	return j.tx(ctx, "record batch "+batchID, func(tx *sql.Tx) error { return j.applyStep(ctx, tx, j.owner(), batchID, s, false) })
}

// owner is a process that begins batches: recovery leaves the batches of
// a live one alone.
type owner struct {
	PID   int    `json:"pid"`
	Start uint64 `json:"start"`
}

func (j *Journal) owner() owner { return owner{j.ownerPID, j.ownerStart} }

// applyStep records s in tx; a batch it begins belongs to by, the
// process that committed the step (which, for a step log replayed after a
// crash, is not this one). A folded step's batch is written with its
// state and its calls' starts as they are (coalesce).
func (j *Journal) applyStep(ctx context.Context, tx *sql.Tx, by owner, batchID string, s Step, folded bool) error {
	if s.Batch != nil {
		if err := j.beginBatch(ctx, tx, by, *s.Batch, folded, s.At); err != nil {
			return err
		}
	}
	if err := j.decide(ctx, tx, batchID, s.Decisions); err != nil {
		return err
	}
	for _, r := range s.Results {
		if err := j.finishCall(ctx, tx, batchID, r.CallID, r.Result); err != nil {
			return err
		}
	}
	for _, id := range s.Starts {
		if err := j.startCall(ctx, tx, batchID, id, s.At); err != nil {
			return err
		}
	}
	if s.End {
		return j.endBatch(ctx, tx, batchID, s.At)
	}
	return nil
}

// BeginBatch records a batch and all its calls in one transaction, before
// any of them runs (FR-RES-01, FR-RES-04a, IT-JRN-01). Calls given a
// Result (pre-resolved) are recorded with it.
func (j *Journal) BeginBatch(ctx context.Context, b Batch) error {
	return j.Commit(ctx, b.ID, Step{Batch: &b})
}

// Decide records decisions on calls of a batch in one transaction, before
// any of them runs.
func (j *Journal) Decide(ctx context.Context, batchID string, ds []CallDecision) error {
	return j.Commit(ctx, batchID, Step{Decisions: ds})
}

// StartCall records that a call is about to run, in its own commit before
// it runs: a crash after it leaves the call marked as possibly having had
// side effects.
func (j *Journal) StartCall(ctx context.Context, batchID, callID string, at time.Time) error {
	return j.Commit(ctx, batchID, Step{Starts: []string{callID}, At: at})
}

// FinishCall records a call's result as soon as it ends, before the next
// call starts (FR-RES-04b). A call has exactly one result (NFR-REL-01): a
// second one is refused.
func (j *Journal) FinishCall(ctx context.Context, batchID, callID string, r Result) error {
	return j.Commit(ctx, batchID, Step{Results: []CallResult{{callID, r}}})
}

// EndBatch marks an open batch done once every call has its result.
func (j *Journal) EndBatch(ctx context.Context, batchID string) error {
	return j.Commit(ctx, batchID, Step{End: true})
}

const sqlInsertBatch = `INSERT INTO batches (id, conversation, turn, created_at, state, updated_at, owner_pid, owner_start)
	VALUES (?, ?, ?, ?, ?, ?, ?, ?)`

const sqlInsertCall = `INSERT INTO calls
	(batch_id, seq, id, tool, path, arguments, disposition, decision, decided_by,
	 started_at, finished_at, ok, result, content_truncated, error_kind, error_message)
	VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`

const sqlInsertResult = `INSERT INTO results (content) VALUES (?)`

func (j *Journal) beginBatch(ctx context.Context, tx *sql.Tx, by owner, b Batch, folded bool, at time.Time) error {
	if b.ID == "" {
		return userErrorf("journal: a batch needs an id (conversation %q)", b.Conversation)
	}
	created := orNow(b.Created)
	state, updated := StateOpen, created
	if folded && b.State == StateDone {
		state, updated = StateDone, orNow(at)
	}
	_, err := tx.StmtContext(ctx, j.stmts.insertBatch).ExecContext(ctx,
		b.ID, b.Conversation, b.Turn, nanos(created), string(state), nanos(updated), by.PID, int64(by.Start))
	if err != nil {
		if isConstraint(err) {
			return userErrorf("journal: batch %s is already in the journal; give each batch its own id", b.ID)
		}
		return err
	}
	seen := make(map[string]bool, len(b.Calls))
	for _, c := range b.Calls {
		if seen[c.ID] {
			return userErrorf("journal: batch %s has call id %q more than once; give each call its own id", b.ID, c.ID)
		}
		seen[c.ID] = true
	}
	ins := tx.StmtContext(ctx, j.stmts.insertCall)
	for i, c := range b.Calls {
		args := string(c.Arguments)
		if args == "" {
			args = "null"
		}
		var started, fin, content sql.NullInt64
		if folded && !c.Started.IsZero() {
			started = sql.NullInt64{Int64: nanos(c.Started), Valid: true}
		}
		var ok sql.NullBool
		var kind, msg sql.NullString
		truncated := false
		if r := c.Result; r != nil {
			r2 := j.capResult(*r)
			var err error
			if content, err = j.insertResult(ctx, tx, r2.Content); err != nil {
				return err
			}
			fin = sql.NullInt64{Int64: nanos(orNow(r2.Finished)), Valid: true}
			ok = sql.NullBool{Bool: r2.OK, Valid: true}
			kind = sql.NullString{String: r2.ErrorKind, Valid: true}
			msg = sql.NullString{String: r2.ErrorMessage, Valid: true}
			truncated = r2.Truncated
		}
		if _, err := ins.ExecContext(ctx, b.ID, i, c.ID, c.Tool, c.Path, args, c.Disposition, string(c.Decision), c.DecidedBy,
			started, fin, ok, content, truncated, kind, msg); err != nil {
			return err
		}
	}
	return nil
}

func (j *Journal) decide(ctx context.Context, tx *sql.Tx, batchID string, ds []CallDecision) error {
	for _, d := range ds {
		res, err := tx.ExecContext(ctx, `UPDATE calls SET decision = ?, decided_by = ? WHERE batch_id = ? AND id = ?`,
			string(d.Verdict), d.By, batchID, d.CallID)
		if err != nil {
			return err
		}
		if n, _ := res.RowsAffected(); n == 0 {
			return notFoundf("journal: batch %s has no call %q to record a decision on", batchID, d.CallID)
		}
	}
	return nil
}

const sqlStartCall = `UPDATE calls SET started_at = ? WHERE batch_id = ? AND id = ? AND started_at IS NULL AND finished_at IS NULL`

func (j *Journal) startCall(ctx context.Context, tx *sql.Tx, batchID, callID string, at time.Time) error {
	res, err := tx.StmtContext(ctx, j.stmts.startCall).ExecContext(ctx, nanos(orNow(at)), batchID, callID)
	if err != nil {
		return err
	}
	if n, _ := res.RowsAffected(); n == 0 {
		return whyNot(ctx, tx, batchID, callID, "start")
	}
	return nil
}

// RecordProcess records a process group a running call started, as soon
// as it exists, so that recovery can stop it after a crash.
func (j *Journal) RecordProcess(ctx context.Context, p Process) error {
	return j.tx(ctx, "record process group of call "+p.CallID, func(tx *sql.Tx) error {
		if err := callExists(ctx, tx, p.BatchID, p.CallID); err != nil {
			return fmt.Errorf("%w to record process group %d for", err, p.PGID)
		}
		_, err := tx.ExecContext(ctx, `INSERT INTO processes (batch_id, call_id, pgid, start_time, started_at) VALUES (?, ?, ?, ?, ?)`,
			p.BatchID, p.CallID, p.PGID, int64(p.StartTime), nanos(now()))
		return err
	})
}

// callExists returns a not-found error, naming the batch and call, when
// the batch has no such call: the schema leaves that to the journal, as
// calls are keyed by their place in the batch.
func callExists(ctx context.Context, q querier, batchID, callID string) error {
	var one int
	err := q.QueryRowContext(ctx, `SELECT 1 FROM calls WHERE batch_id = ? AND id = ?`, batchID, callID).Scan(&one)
	if errors.Is(err, sql.ErrNoRows) {
		return notFoundf("journal: batch %s has no call %q", batchID, callID)
	}
	return err
}

const sqlFinishCall = `UPDATE calls SET finished_at = ?, ok = ?, result = ?, content_truncated = ?, error_kind = ?, error_message = ?
	WHERE batch_id = ? AND id = ? AND finished_at IS NULL`

// insertResult appends content to the results and returns its row, or
// NULL for no content (most errors).
func (j *Journal) insertResult(ctx context.Context, tx *sql.Tx, content string) (sql.NullInt64, error) {
	if content == "" {
		return sql.NullInt64{}, nil
	}
	res, err := tx.StmtContext(ctx, j.stmts.insertResult).ExecContext(ctx, content)
	if err != nil {
		return sql.NullInt64{}, err
	}
	n, err := res.LastInsertId()
	return sql.NullInt64{Int64: n, Valid: true}, err
}

func (j *Journal) finishCall(ctx context.Context, tx *sql.Tx, batchID, callID string, r Result) error {
	r = j.capResult(r)
	content, err := j.insertResult(ctx, tx, r.Content)
	if err != nil {
		return err
	}
	res, err := tx.StmtContext(ctx, j.stmts.finishCall).ExecContext(ctx,
		nanos(orNow(r.Finished)), r.OK, content, r.Truncated, r.ErrorKind, r.ErrorMessage, batchID, callID)
	if err != nil {
		return err
	}
	if n, _ := res.RowsAffected(); n == 0 {
		return whyNot(ctx, tx, batchID, callID, "finish")
	}
	return nil
}

const sqlEndBatch = `UPDATE batches SET state = 'done', updated_at = ? WHERE id = ? AND state = 'open'`

func (j *Journal) endBatch(ctx context.Context, tx *sql.Tx, batchID string, at time.Time) error {
	res, err := tx.StmtContext(ctx, j.stmts.endBatch).ExecContext(ctx, nanos(orNow(at)), batchID)
	if err != nil {
		return err
	}
	if n, _ := res.RowsAffected(); n == 0 {
		st, err := batchState(ctx, tx, batchID)
		if err != nil {
			return err
		}
		return userErrorf("journal: batch %s is %s, not open, so it cannot end", batchID, st)
	}
	return nil
}

// whyNot explains an update that matched no call.
func whyNot(ctx context.Context, q querier, batchID, callID, what string) error {
	var started, finished sql.NullInt64
	err := q.QueryRowContext(ctx, `SELECT started_at, finished_at FROM calls WHERE batch_id = ? AND id = ?`, batchID, callID).Scan(&started, &finished)
	switch {
	case errors.Is(err, sql.ErrNoRows):
		return notFoundf("journal: batch %s has no call %q; record the batch with BeginBatch before its calls run", batchID, callID)
	case err != nil:
		return err
	case finished.Valid:
		return userErrorf("journal: call %s of batch %s already has a result; a call has exactly one", callID, batchID)
	case what == "start" && started.Valid:
		return userErrorf("journal: call %s of batch %s has already started; a call runs at most once", callID, batchID)
	}
	return userErrorf("journal: call %s of batch %s could not %s", callID, batchID, what)
}

func batchState(ctx context.Context, q querier, batchID string) (State, error) {
	var st string
	err := q.QueryRowContext(ctx, `SELECT state FROM batches WHERE id = ?`, batchID).Scan(&st)
	if errors.Is(err, sql.ErrNoRows) {
		return "", notFoundf("journal: no batch %q", batchID)
	}
	if err != nil {
		return "", err
	}
	return State(st), nil
}

// capResult cuts Content to MaxResultBytes at a character boundary.
func (j *Journal) capResult(r Result) Result {
	max := j.opts.MaxResultBytes
	if len(r.Content) <= max {
		return r
	}
	cut := max
	for cut > 0 && !utf8.RuneStart(r.Content[cut]) {
		cut--
	}
	r.Content = r.Content[:cut]
	r.Truncated = true
	return r
}

func orNow(t time.Time) time.Time {
	if t.IsZero() {
		return now()
	}
	return t
}
