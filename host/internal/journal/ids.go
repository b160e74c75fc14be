package journal

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"
)

// Ids. A batch's id is unique in the journal (the engine makes it from a
// clock and randomness; one given twice is refused). A call's id is its
// client's (a model's "call_1", an agent's) and is unique only in its
// batch, so every call also has a journal id, CallJournalID: its batch's id and
// its place in the batch, which is unique in the journal and is kept by
// nothing but the batch and the place, so that the calls of journals
// written before it have one too.

// CallJournalID is the journal id of the nth call (from 1) of batch batchID.
func CallJournalID(batchID string, n int) string { return batchID + "." + strconv.Itoa(n) }

// splitRef is the batch and place (from 1) a CallJournalID names, or false
// for an id that is not one.
func splitRef(ref string) (batchID string, n int, ok bool) {
	i := strings.LastIndexByte(ref, '.')
	if i <= 0 {
		return "", 0, false
	}
	n, err := strconv.Atoi(ref[i+1:])
	if err != nil || n < 1 || ref[i+1] == '+' || ref[i+1] == '0' {
		return "", 0, false
	}
	return ref[:i], n, true
}

// Target is what an id names in the journal: a whole batch, or one call.
type Target struct {
	BatchID string
	// CallID is the call's id in its batch, as its client gave it; ""
	// when the target is a whole batch.
	CallID string
	// JournalID is the target's journal id: BatchID, or the call's CallJournalID.
	JournalID string
	// Tool and Path describe the call, or a batch's first call
	// (Call.Path).
	Tool string
	Path string
	// Time is when the call started, or its batch was created when it
	// never did.
	Time time.Time
}

// MaxCandidates is how many of the calls an ambiguous id names an
// *AmbiguousError lists.
const MaxCandidates = 10

// AmbiguousError refuses a client's call id that several calls of the
// journal have: which one was meant is the caller's to say, by its
// journal id.
type AmbiguousError struct {
	ID string
	// Candidates are the newest MaxCandidates calls with the id, newest
	// first; Total counts them all.
	Candidates []Target
	Total      int
}

func (e *AmbiguousError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "journal: %d calls have the id %q (a client's call id, unique only within its batch); give the journal id of the one you mean:", e.Total, e.ID)
	for _, c := range e.Candidates {
		fmt.Fprintf(&b, "\n  %s  %s  %s  %s", c.JournalID, c.Tool, orNone(c.Path), c.Time.Format(time.RFC3339))
	}
	if more := e.Total - len(e.Candidates); more > 0 {
		fmt.Fprintf(&b, "\n  and %d older", more)
	}
	return b.String()
}

func orNone(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// Find returns what id names: the batch with that id, else the call with
// that journal id (CallJournalID), else the one call its client gave that id.
// A client's id that several calls have gives an *AmbiguousError, an id
// that names nothing an error matching ErrNotFound.
func (j *Journal) Find(ctx context.Context, id string) (Target, error) {
	t := Target{BatchID: id, JournalID: id}
	var created int64
	err := j.db.QueryRowContext(ctx, `SELECT b.created_at,
		coalesce((SELECT c.tool FROM calls c WHERE c.batch_id = b.id ORDER BY c.seq LIMIT 1), ''),
		coalesce((SELECT p FROM (SELECT c.seq, `+callPath+` AS p FROM calls c WHERE c.batch_id = b.id) WHERE p != '' ORDER BY seq LIMIT 1), '')
		FROM batches b WHERE b.id = ?`, id).Scan(&created, &t.Tool, &t.Path)
	switch {
	case err == nil:
		t.Time = time.Unix(0, created).UTC()
		return t, nil
	case !errors.Is(err, sql.ErrNoRows):
		return Target{}, j.fail("find "+id, err)
	}
	if batch, n, ok := splitRef(id); ok {
		found, err := j.findCalls(ctx, `c.batch_id = ? AND c.seq = ?`, []any{batch, n - 1})
		if err != nil {
			return Target{}, err
		}
		if len(found) == 1 {
			return found[0].Target, nil
		}
	}
	found, err := j.findCalls(ctx, `c.id = ?`, []any{id})
	switch {
	case err != nil:
		return Target{}, err
	case len(found) == 0:
		return Target{}, notFoundf("journal %s holds no batch and no call with the id %q", j.path, id)
	case len(found) > 1:
		e := &AmbiguousError{ID: id, Total: found[0].total}
		for _, f := range found[:min(len(found), MaxCandidates)] {
			e.Candidates = append(e.Candidates, f.Target)
		}
		return Target{}, e
	}
	return found[0].Target, nil
}

// hit is a call findCalls found, and how many it found in all.
type hit struct {
	Target
	total int
}

// findCalls returns the newest MaxCandidates+1 calls where holds, newest
// first.
func (j *Journal) findCalls(ctx context.Context, where string, args []any) ([]hit, error) {
	var out []hit
	q := `SELECT c.batch_id, c.seq, c.id, c.tool, ` + callPath + `, coalesce(c.started_at, b.created_at) AS at, count(*) OVER ()
		FROM calls c JOIN batches b ON b.id = c.batch_id WHERE ` + where + `
		ORDER BY at DESC, b.n DESC, c.seq DESC LIMIT ?`
	err := j.rows(ctx, "find call", q, append(args, MaxCandidates+1), func(rs *sql.Rows) error {
		var f hit
		var seq int
		var at int64
		if err := rs.Scan(&f.BatchID, &seq, &f.CallID, &f.Tool, &f.Path, &at, &f.total); err != nil {
			return err
		}
		f.JournalID, f.Time = CallJournalID(f.BatchID, seq+1), time.Unix(0, at).UTC()
		out = append(out, f)
		return nil
	})
	return out, err
}
