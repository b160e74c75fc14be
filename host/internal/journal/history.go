package journal

import (
	"bufio"
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"strings"
	"time"
)

// Filter selects batches for ListBatches. The zero Filter lists the
// newest DefaultListLimit batches.
type Filter struct {
	Conversation string    // only this conversation's batches
	Since        time.Time // only batches created at or after it
	State        State     // only batches in this state
	Tool         string    // only batches with a call of this tool
	Limit        int       // at most this many, newest first
}

// DefaultListLimit is ListBatches' limit when Filter.Limit is 0.
const DefaultListLimit = 100

// Summary is one line of the history.
type Summary struct {
	ID           string
	Conversation string
	Turn         string
	Created      time.Time
	State        State
	Calls        int    // calls in the batch
	Failed       int    // calls whose result is an error
	Unfinished   int    // calls without a result
	Tool         string // the first call's tool
	Path         string // the first path a call of the batch names, as Call.Path
}

// ListBatches returns the batches the filter selects, newest first.
func (j *Journal) ListBatches(ctx context.Context, f Filter) ([]Summary, error) {
	var where []string
	var args []any
	if f.Conversation != "" {
		where = append(where, "b.conversation = ?")
		args = append(args, f.Conversation)
	}
	if !f.Since.IsZero() {
		where = append(where, "b.created_at >= ?")
		args = append(args, nanos(f.Since))
	}
	if f.State != "" {
		where = append(where, "b.state = ?")
		args = append(args, string(f.State))
	}
	if f.Tool != "" {
		where = append(where, "EXISTS (SELECT 1 FROM calls t WHERE t.batch_id = b.id AND t.tool = ?)")
		args = append(args, f.Tool)
	}
	limit := f.Limit
	if limit <= 0 {
		limit = DefaultListLimit
	}
	// The newest batches first, then their calls only: a list never
	// aggregates the whole journal.
	inner := `SELECT n, id, conversation, turn, created_at, state FROM batches b`
	if len(where) > 0 {
		inner += " WHERE " + strings.Join(where, " AND ")
	}
	inner += " ORDER BY n DESC LIMIT ?"
	args = append(args, limit)
	q := `SELECT b.id, b.conversation, b.turn, b.created_at, b.state,
		count(c.id), count(c.id) FILTER (WHERE c.ok = 0), count(c.id) FILTER (WHERE c.id IS NOT NULL AND c.finished_at IS NULL),
		coalesce((SELECT c.tool FROM calls c WHERE c.batch_id = b.id ORDER BY c.seq LIMIT 1), ''),
		coalesce((SELECT p FROM (SELECT c.seq, ` + callPath + ` AS p FROM calls c WHERE c.batch_id = b.id) WHERE p != '' ORDER BY seq LIMIT 1), '')
		FROM (` + inner + `) b LEFT JOIN calls c ON c.batch_id = b.id
		GROUP BY b.n ORDER BY b.n DESC`
	var out []Summary
	err := j.rows(ctx, "list batches", q, args, func(rs *sql.Rows) error {
		var s Summary
		var created int64
		var st string
		if err := rs.Scan(&s.ID, &s.Conversation, &s.Turn, &created, &st, &s.Calls, &s.Failed, &s.Unfinished, &s.Tool, &s.Path); err != nil {
			return err
		}
		s.Created, s.State = time.Unix(0, created).UTC(), State(st)
		out = append(out, s)
		return nil
	})
	return out, err
}

// Batch returns a batch with its calls in order, each with its start,
// process groups, result (as capped when recorded) and changed files.
func (j *Journal) Batch(ctx context.Context, id string) (*Batch, error) {
	b := &Batch{ID: id}
	var created int64
	var st string
	err := j.db.QueryRowContext(ctx, `SELECT conversation, turn, created_at, state FROM batches WHERE id = ?`, id).
		Scan(&b.Conversation, &b.Turn, &created, &st)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, notFoundf("journal: no batch %q; list batches with toolhost journal list", id)
	}
	if err != nil {
		return nil, j.fail("read batch "+id, err)
	}
	b.Created, b.State = time.Unix(0, created).UTC(), State(st)
	err = j.rows(ctx, "read calls of batch "+id, `SELECT `+callColumns+` FROM calls c WHERE c.batch_id = ? ORDER BY c.seq`, []any{id},
		func(rs *sql.Rows) error {
			c, err := scanCall(rs)
			if err != nil {
				return err
			}
			b.Calls = append(b.Calls, c)
			return nil
		})
	if err != nil {
		return nil, err
	}
	index := make(map[string]*Call, len(b.Calls))
	for i := range b.Calls {
		index[b.Calls[i].ID] = &b.Calls[i]
	}
	err = j.rows(ctx, "read processes of batch "+id, `SELECT call_id, pgid, start_time FROM processes WHERE batch_id = ? ORDER BY started_at`, []any{id},
		func(rs *sql.Rows) error {
			p := Process{BatchID: id}
			var start int64
			if err := rs.Scan(&p.CallID, &p.PGID, &start); err != nil {
				return err
			}
			p.StartTime = uint64(start)
			if c := index[p.CallID]; c != nil {
				c.Processes = append(c.Processes, p)
			}
			return nil
		})
	if err != nil {
		return nil, err
	}
	for i := range b.Calls {
		if b.Calls[i].Changes, err = j.Changes(ctx, id, b.Calls[i].ID); err != nil {
			return nil, err
		}
	}
	return b, nil
}

// callColumns are a call's columns, of the calls table named c.
const callColumns = `c.batch_id, c.seq, c.id, c.tool, ` + callPath + `, c.arguments, c.disposition, c.decision, c.decided_by, c.started_at, c.finished_at,
	c.ok, (SELECT content FROM results WHERE n = c.result), c.content_truncated, c.error_kind, c.error_message`

// callPath is Call.Path of the calls table named c: the path recorded
// with the call, else (a call recorded before schema version 2, or by a
// tool whose paths are not arguments, such as apply_patch) the first
// file it changed, else its "path" argument.
const callPath = `CASE WHEN c.path != '' THEN c.path ELSE coalesce(
		(SELECT p.path FROM preimages p WHERE p.batch_id = c.batch_id AND p.call_id = c.id ORDER BY p.seq LIMIT 1),
		CASE WHEN json_valid(c.arguments) AND json_type(c.arguments, '$.path') = 'text' THEN json_extract(c.arguments, '$.path') END,
		'') END`

// scanCall scans callColumns, then extra columns into extra.
func scanCall(rs *sql.Rows, extra ...any) (Call, error) {
	var c Call
	var batch, args, decision string
	var seq int
	var started, finished sql.NullInt64
	var ok sql.NullBool
	var content, kind, msg sql.NullString
	var truncated bool
	dest := append([]any{&batch, &seq, &c.ID, &c.Tool, &c.Path, &args, &c.Disposition, &decision, &c.DecidedBy, &started, &finished,
		&ok, &content, &truncated, &kind, &msg}, extra...)
	if err := rs.Scan(dest...); err != nil {
		return Call{}, err
	}
	c.JournalID = CallJournalID(batch, seq+1)
	c.Arguments, c.Decision, c.Started = json.RawMessage(plainJSON(args)), Verdict(decision), fromNanos(started)
	if finished.Valid {
		c.Result = &Result{OK: ok.Bool, Content: content.String, Truncated: truncated,
			ErrorKind: kind.String, ErrorMessage: msg.String, Finished: fromNanos(finished)}
	}
	return c, nil
}

// Event is one line of Export: the multi-agent toolset spec's tool.call
// (logged before execution, with the tool's name and parameters) and
// tool.result (after it, with the return value or the error) events.
type Event struct {
	Type         string          `json:"type"` // "tool.call" or "tool.result"
	Time         time.Time       `json:"timestamp"`
	Conversation string          `json:"conversation_id,omitempty"`
	BatchID      string          `json:"batch_id"`
	CallID       string          `json:"tool_call_id"` // the client's
	JournalID    string          `json:"journal_id"`   // unique in the journal
	Tool         string          `json:"tool"`
	Params       json.RawMessage `json:"params,omitempty"` // tool.call, redacted
	OK           *bool           `json:"ok,omitempty"`     // tool.result
	Result       *string         `json:"result,omitempty"` // tool.result when OK
	Truncated    bool            `json:"truncated,omitempty"`
	Error        *EventError     `json:"error,omitempty"` // tool.result when not OK
}

// EventError is a failed call's error in an Event.
type EventError struct {
	Kind    string `json:"kind"`
	Message string `json:"message"`
}

// exportPage is how many calls Export reads at a time: the journal's one
// connection is never held for long, so a running batch is not held up
// by an export in the same process.
const exportPage = 500

// Export writes the calls of batches created at or after since as NDJSON,
// in the order the batches reached the journal: for every call a tool.call event (at its start, or its
// batch's creation when it never started), then a tool.result event when
// it has a result.
func (j *Journal) Export(ctx context.Context, w io.Writer, since time.Time) error {
	bw := bufio.NewWriter(w)
	enc := json.NewEncoder(bw)
	enc.SetEscapeHTML(false)
	// Pages follow the batches' rows, in the order they reached the
	// database, so each page resumes where the last stopped and the whole
	// export reads the journal once; since only filters.
	type cursor struct {
		n   int64
		seq int64
	}
	after := cursor{n: math.MinInt64, seq: -1}
	from := int64(math.MinInt64)
	if !since.IsZero() {
		from = nanos(since)
	}
	for {
		var page []Event
		n := 0
		err := j.rows(ctx, "export", `SELECT `+callColumns+`, b.created_at, b.id, b.conversation, b.n, c.seq
			FROM batches b JOIN calls c ON c.batch_id = b.id
			WHERE (b.n, c.seq) > (?, ?) AND b.created_at >= ?
			ORDER BY b.n, c.seq LIMIT ?`,
			[]any{after.n, after.seq, from, exportPage}, func(rs *sql.Rows) error {
				var cur cursor
				var created int64
				var batch, conv string
				c, err := scanCall(rs, &created, &batch, &conv, &cur.n, &cur.seq)
				if err != nil {
					return err
				}
				n++
				after = cur
				page = append(page, callEvents(c, batch, conv, time.Unix(0, created).UTC())...)
				return nil
			})
		if err != nil {
			return err
		}
		for _, ev := range page {
			if err := enc.Encode(ev); err != nil {
				return fmt.Errorf("journal export: %w", err)
			}
		}
		if n < exportPage {
			break
		}
	}
	if err := bw.Flush(); err != nil {
		return fmt.Errorf("journal export: %w", err)
	}
	return nil
}

// callEvents are a call's export events; created is its batch's creation.
func callEvents(c Call, batch, conv string, created time.Time) []Event {
	at := created
	if !c.Started.IsZero() {
		at = c.Started
	}
	params := c.Arguments
	if !json.Valid(params) {
		// A model may send arguments that are not JSON; they are kept
		// as the text they were.
		params, _ = json.Marshal(string(params))
	}
	evs := []Event{{Type: "tool.call", Time: at, Conversation: conv, BatchID: batch, CallID: c.ID, JournalID: c.JournalID, Tool: c.Tool, Params: params}}
	if r := c.Result; r != nil {
		ev := Event{Type: "tool.result", Time: r.Finished, Conversation: conv, BatchID: batch, CallID: c.ID, JournalID: c.JournalID, Tool: c.Tool,
			OK: &r.OK, Truncated: r.Truncated}
		if r.OK {
			ev.Result = &r.Content
		} else {
			ev.Error = &EventError{Kind: r.ErrorKind, Message: r.ErrorMessage}
		}
		evs = append(evs, ev)
	}
	return evs
}

// plainJSON is the JSON text s with the escapes encoding/json writes by
// default for <, > and & (\u003c, \u003e, \u0026) turned back into the
// characters: the same JSON, readable. Arguments recorded by an older
// toolhost hold them.
func plainJSON(s string) string {
	if !strings.Contains(s, `\u00`) {
		return s
	}
	var b strings.Builder
	b.Grow(len(s))
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c != '\\' || i+1 == len(s) {
			b.WriteByte(c)
			continue
		}
		// An escape: \uXXXX or a backslash and one character, which
		// may itself be a backslash.
		if s[i+1] == 'u' && i+6 <= len(s) {
			if r, ok := map[string]byte{"003c": '<', "003e": '>', "0026": '&'}[strings.ToLower(s[i+2:i+6])]; ok {
				b.WriteByte(r)
				i += 5
				continue
			}
		}
		b.WriteString(s[i : i+2])
		i++
	}
	return b.String()
}
