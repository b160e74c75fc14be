package server

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/toolhost/toolhost/host"
	"github.com/toolhost/toolhost/host/internal/engine"
	"github.com/toolhost/toolhost/host/internal/inside"
	"github.com/toolhost/toolhost/host/internal/journal"
)

// The journal's history and the user's choice for a batch a crash
// interrupted, under /v1/journal (FR-RES-05):
// what `toolhost journal list`, `show` and `recover` do, for a client of
// a running server. These endpoints read and record; nothing is ever run
// through them. The JSON shapes are shared with `toolhost journal
// --format json`, so a script reads the same fields from either.

// maxJournalList caps the limit a client may ask of GET
// /v1/journal/batches, so one request cannot make the server build an
// answer of the whole history.
const maxJournalList = 1000

// JournalSummary is one batch of the history as listed.
type JournalSummary struct {
	BatchID        string    `json:"batch_id"`
	ConversationID string    `json:"conversation_id"`
	TurnID         string    `json:"turn_id,omitempty"`
	CreatedAt      time.Time `json:"created_at"`
	State          string    `json:"state"`
	Calls          int       `json:"calls"`
	Failed         int       `json:"failed"`
	Unfinished     int       `json:"unfinished"`
	// Tool is the first call's tool, Path the first path a call names.
	Tool string `json:"tool,omitempty"`
	Path string `json:"path,omitempty"`
}

// JournalBatch is a batch as the journal holds it, its calls in order.
type JournalBatch struct {
	BatchID        string        `json:"batch_id"`
	ConversationID string        `json:"conversation_id"`
	TurnID         string        `json:"turn_id,omitempty"`
	CreatedAt      time.Time     `json:"created_at"`
	State          string        `json:"state"`
	Calls          []JournalCall `json:"calls"`
}

// JournalCall is one call of a journaled batch.
type JournalCall struct {
	// ID is the call's id as its client gave it, unique in its batch;
	// JournalID names it in the whole journal (BATCH.N).
	ID        string `json:"id"`
	JournalID string `json:"journal_id"`
	Name      string `json:"name"`
	// Path is the first path the call names, "" for none.
	Path string `json:"path,omitempty"`
	// Arguments are as journaled, secrets redacted; arguments that were
	// not JSON are the text they were.
	Arguments   json.RawMessage  `json:"arguments"`
	Disposition string           `json:"disposition"`
	Decision    string           `json:"decision,omitempty"`
	DecidedBy   string           `json:"decided_by,omitempty"`
	StartedAt   *time.Time       `json:"started_at,omitempty"`
	Result      *JournalResult   `json:"result,omitempty"`
	Processes   []JournalProcess `json:"processes,omitempty"`
	Changes     []JournalChange  `json:"changes,omitempty"`
	// Approval is what a person deciding the call is shown, for a call
	// that awaits a decision on this server now: the arguments in full
	// and unredacted (the journal keeps them redacted), as every
	// approval surface shows them (engine.Approval).
	Approval *engine.Approval `json:"approval,omitempty"`
}

// JournalResult is a journaled call's result. Content is as the journal
// kept it: Truncated says it was cut when recorded.
type JournalResult struct {
	OK         bool          `json:"ok"`
	Content    string        `json:"content,omitempty"`
	Truncated  bool          `json:"truncated,omitempty"`
	Error      *JournalError `json:"error,omitempty"`
	FinishedAt time.Time     `json:"finished_at"`
}

// JournalError is a failed call's error.
type JournalError struct {
	Kind    string `json:"kind"`
	Message string `json:"message"`
}

// JournalProcess is a process group a call started.
type JournalProcess struct {
	PGID      int    `json:"pgid"`
	StartTime uint64 `json:"start_time"`
}

// JournalChange is a file a call changed.
type JournalChange struct {
	Path     string        `json:"path"`
	Before   JournalImage  `json:"before"`
	After    *JournalImage `json:"after,omitempty"`
	Undoable bool          `json:"undoable"`
	Reason   string        `json:"reason,omitempty"`
}

// JournalImage is a file's state at one moment; Mode is octal, as chmod
// takes it.
type JournalImage struct {
	Exists bool `json:"exists"`
	// Type is "dir" or "symlink" for an entry a removal, a move or a new
	// directory took or left; empty for a file.
	Type   string `json:"type,omitempty"`
	Mode   string `json:"mode,omitempty"`
	Size   int64  `json:"size,omitempty"`
	SHA256 string `json:"sha256,omitempty"`
}

// ViewJournalSummary is s as the API shows it.
func ViewJournalSummary(s journal.Summary) JournalSummary {
	return JournalSummary{BatchID: s.ID, ConversationID: s.Conversation, TurnID: s.Turn, CreatedAt: s.Created.UTC(),
		State: string(s.State), Calls: s.Calls, Failed: s.Failed, Unfinished: s.Unfinished, Tool: s.Tool, Path: s.Path}
}

// ViewJournalBatch is b as the API shows it.
func ViewJournalBatch(b *journal.Batch) JournalBatch {
	v := JournalBatch{BatchID: b.ID, ConversationID: b.Conversation, TurnID: b.Turn, CreatedAt: b.Created.UTC(),
		State: string(b.State), Calls: make([]JournalCall, len(b.Calls))}
	for i, c := range b.Calls {
		v.Calls[i] = viewJournalCall(c)
	}
	return v
}

func viewJournalCall(c journal.Call) JournalCall {
	args := c.Arguments
	if !json.Valid(args) {
		// A model may send arguments that are not JSON; they are shown
		// as the text they were, as Export does.
		args, _ = json.Marshal(string(args))
	}
	v := JournalCall{ID: c.ID, JournalID: c.JournalID, Name: c.Tool, Path: c.Path, Arguments: args, Disposition: c.Disposition,
		Decision: string(c.Decision), DecidedBy: c.DecidedBy}
	if !c.Started.IsZero() {
		t := c.Started.UTC()
		v.StartedAt = &t
	}
	if r := c.Result; r != nil {
		jr := &JournalResult{OK: r.OK, Content: r.Content, Truncated: r.Truncated, FinishedAt: r.Finished.UTC()}
		if !r.OK {
			jr.Error = &JournalError{Kind: r.ErrorKind, Message: r.ErrorMessage}
		}
		v.Result = jr
	}
	for _, p := range c.Processes {
		v.Processes = append(v.Processes, JournalProcess{PGID: p.PGID, StartTime: p.StartTime})
	}
	for _, ch := range c.Changes {
		jc := JournalChange{Path: ch.Path, Before: viewImage(ch.Before), Undoable: ch.Undoable, Reason: ch.Reason}
		if ch.After != nil {
			a := viewImage(*ch.After)
			jc.After = &a
		}
		v.Changes = append(v.Changes, jc)
	}
	return v
}

func viewImage(img journal.Image) JournalImage {
	if !img.Exists {
		return JournalImage{}
	}
	v := JournalImage{Exists: true, Mode: fmt.Sprintf("%04o", img.Mode.Perm()), Size: img.Size, SHA256: img.SHA256}
	switch {
	case img.Mode.IsDir():
		v.Type = "dir"
	case img.Mode&fs.ModeSymlink != 0:
		v.Type = "symlink"
	}
	return v
}

// JournalStates are the states a batch of the journal can be in, as the
// state filters take them.
func JournalStates() []string {
	return []string{string(journal.StateOpen), string(journal.StateDone), string(journal.StateInterrupted),
		string(journal.StateResumed), string(journal.StateDiscarded)}
}

// ParseSince reads a point in time as the history's filters take it: an
// RFC 3339 time (2025-06-01T09:00:00Z), a date (2025-06-01, local
// midnight), or how long before now (90m, 2h, 7d, 1d12h; d is 24 hours).
func ParseSince(s string, now time.Time) (time.Time, error) {
	s = strings.TrimSpace(s)
	if t, err := time.Parse(time.RFC3339, s); err == nil {
		return t, nil
	}
	if t, err := time.ParseInLocation(time.DateOnly, s, time.Local); err == nil {
		return t, nil
	}
	if d, ok := parseAgo(s); ok {
		return now.Add(-d), nil
	}
	return time.Time{}, fmt.Errorf("%q is neither a time nor a duration: give an RFC 3339 time (2025-06-01T09:00:00Z), a date (2025-06-01) or how long ago (90m, 2h, 7d, 1d12h)", s)
}

// parseAgo parses a positive duration in time.ParseDuration's syntax
// with whole days (d) allowed in front.
func parseAgo(s string) (time.Duration, bool) {
	var d time.Duration
	if days, rest, ok := strings.Cut(s, "d"); ok {
		n, err := strconv.Atoi(days)
		if err != nil || n < 0 || n > 100*365 || strings.HasPrefix(days, "+") {
			return 0, false
		}
		d, s = time.Duration(n)*24*time.Hour, rest
		if s == "" {
			return d, d > 0
		}
	}
	rest, err := time.ParseDuration(s)
	if err != nil || rest < 0 {
		return 0, false
	}
	d += rest
	return d, d > 0
}

// journalOf is the host's journal; without one it answers 503 itself.
func (s *Server) journalOf(w http.ResponseWriter, r *http.Request) (*journal.Journal, bool) {
	j := s.h.Inside(inside.Key{}).Journal
	if j == nil {
		writeError(w, http.StatusServiceUnavailable, "JournalUnavailable", fmt.Sprintf("%s %s: this server keeps no journal: it was started without a state directory and without [journal] path, so no batch was recorded; start toolhost serve with --state-dir DIR or set [journal] path in the operator's configuration", r.Method, r.URL.Path))
	}
	return j, j != nil
}

// writeJournalError answers an error of the journal itself: a damaged or
// unreadable file, whose message says which file and what to do.
func writeJournalError(w http.ResponseWriter, where string, err error) {
	writeError(w, http.StatusInternalServerError, "JournalError", where+": "+err.Error())
}

// listJournal lists the journal's batches, newest first.
func (s *Server) listJournal(w http.ResponseWriter, r *http.Request) {
	const where = "GET /v1/journal/batches"
	j, ok := s.journalOf(w, r)
	if !ok {
		return
	}
	f, msg := journalFilter(r, time.Now())
	if msg != "" {
		writeError(w, http.StatusBadRequest, "InvalidRequest", where+": "+msg)
		return
	}
	list, err := j.ListBatches(r.Context(), f)
	if err != nil {
		writeJournalError(w, where, err)
		return
	}
	views := make([]JournalSummary, len(list))
	for i, b := range list {
		views[i] = ViewJournalSummary(b)
	}
	writeJSON(w, http.StatusOK, map[string]any{"batches": views})
}

// journalFilter reads the list's query, or says what is wrong with it.
func journalFilter(r *http.Request, now time.Time) (journal.Filter, string) {
	q := r.URL.Query()
	f := journal.Filter{Conversation: q.Get("conversation"), State: journal.State(q.Get("state")), Tool: q.Get("tool")}
	if v := q.Get("since"); v != "" {
		t, err := ParseSince(v, now)
		if err != nil {
			return f, "since " + truncateErr(err)
		}
		f.Since = t
	}
	if f.State != "" && !isJournalState(string(f.State)) {
		return f, fmt.Sprintf("state %q is not one of %s", truncate(string(f.State), 40), strings.Join(JournalStates(), ", "))
	}
	if v := q.Get("limit"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > maxJournalList {
			return f, fmt.Sprintf("limit %q is not a number from 1 to %d", truncate(v, 40), maxJournalList)
		}
		f.Limit = n
	}
	return f, ""
}

func truncateErr(err error) string { return truncate(err.Error(), 300) }

func isJournalState(s string) bool { return slices.Contains(JournalStates(), s) }

// journalBatch is the batch the request's path names; it answers 404 and
// journal errors itself.
func (s *Server) journalBatch(ctx context.Context, w http.ResponseWriter, r *http.Request, j *journal.Journal) (*journal.Batch, bool) {
	id := r.PathValue("id")
	b, err := j.Batch(ctx, id)
	switch {
	case errors.Is(err, journal.ErrNotFound):
		writeError(w, http.StatusNotFound, "UnknownBatch", fmt.Sprintf("%s %s: the journal holds no batch %q: it was never recorded, or it was pruned after [journal] retention_days; GET /v1/journal/batches lists the batches it holds", r.Method, r.URL.Path, truncate(id, 80)))
		return nil, false
	case err != nil:
		writeJournalError(w, r.Method+" "+r.URL.Path, err)
		return nil, false
	}
	return b, true
}

// getJournalBatch shows one batch of the journal with its calls.
func (s *Server) getJournalBatch(w http.ResponseWriter, r *http.Request) {
	j, ok := s.journalOf(w, r)
	if !ok {
		return
	}
	if b, ok := s.journalBatch(r.Context(), w, r, j); ok {
		writeJSON(w, http.StatusOK, s.withApprovals(ViewJournalBatch(b)))
	}
}

// withApprovals adds to v's calls that await a decision on this server
// what a person deciding them is shown, as GET /v1/batches/{id} does: a
// pending call read from the journal is otherwise shown redacted, not as
// it will run.
func (s *Server) withApprovals(v JournalBatch) JournalBatch {
	live, ok := s.batches.get(v.BatchID)
	if !ok {
		return v
	}
	lv := live.view()
	for i := range v.Calls {
		for _, c := range lv.Calls {
			if c.JournalID == v.Calls[i].JournalID && c.Approval != nil {
				v.Calls[i].Approval = c.Approval
			}
		}
	}
	return v
}

// recoverRequest is the body of POST /v1/journal/batches/{id}/recover.
type recoverRequest struct {
	Choice string `json:"choice"`
}

// recoverJournalBatch records the user's choice for a batch a crash
// interrupted (FR-RES-05): resume keeps its partial results, discard
// marks them all failed. Nothing is run either way.
func (s *Server) recoverJournalBatch(w http.ResponseWriter, r *http.Request) {
	j, ok := s.journalOf(w, r)
	if !ok {
		return
	}
	where := "POST /v1/journal/batches/" + truncate(r.PathValue("id"), 80) + "/recover"
	var req recoverRequest
	if !decodeBody(w, r, where, &req) {
		return
	}
	if req.Choice != "resume" && req.Choice != "discard" {
		writeError(w, http.StatusBadRequest, "InvalidRequest", fmt.Sprintf("%s: choice %q is not resume or discard: send {\"choice\": \"resume\"} to keep the partial results, or {\"choice\": \"discard\"} to mark them failed", where, truncate(req.Choice, 40)))
		return
	}
	b, ok := s.journalBatch(r.Context(), w, r, j)
	if !ok {
		return
	}
	if b.State != journal.StateInterrupted {
		writeNotInterrupted(w, where, b)
		return
	}
	if err := j.ResolveInterrupted(r.Context(), b.ID, req.Choice == "resume"); err != nil {
		// Someone may have chosen first, in another process.
		if now, ok := s.journalBatch(r.Context(), w, r, j); ok {
			if now.State != journal.StateInterrupted {
				writeNotInterrupted(w, where, now)
			} else {
				writeJournalError(w, where, err)
			}
		}
		return
	}
	s.log.Info("batch API: journal batch recovered", "batch", b.ID, "choice", req.Choice)
	if b, ok := s.journalBatch(r.Context(), w, r, j); ok {
		writeJSON(w, http.StatusOK, ViewJournalBatch(b))
	}
}

func writeNotInterrupted(w http.ResponseWriter, where string, b *journal.Batch) {
	writeError(w, http.StatusConflict, "StateConflict", fmt.Sprintf("%s: batch %s is %s, not interrupted: only a batch a crash interrupted waits for resume or discard; GET /v1/journal/batches?state=interrupted lists those", where, b.ID, b.State))
}

type undoRequest struct {
	// ID is a batch id or a call's journal id (BATCH.N).
	ID string `json:"id"`
	// DryRun says what the undo would change, changing nothing.
	DryRun bool `json:"dry_run"`
}

// undoJournal undoes a batch or a call, or says what undoing it would
// change: the console asks that first, and shows it before the person
// confirms. A refusal (files changed since, an id several calls have)
// is a 409 naming why, and nothing is changed.
func (s *Server) undoJournal(w http.ResponseWriter, r *http.Request) {
	const where = "POST /v1/journal/undo"
	if _, ok := s.journalOf(w, r); !ok {
		return
	}
	var req undoRequest
	if !decodeBody(w, r, where, &req) {
		return
	}
	if req.ID == "" {
		writeError(w, http.StatusBadRequest, "InvalidRequest", where+`: id is missing: send {"id": "BATCH"} or {"id": "BATCH.N"}, with "dry_run": true to see first what it would change`)
		return
	}
	rep, err := s.h.Undo(r.Context(), req.ID, host.UndoOptions{DryRun: req.DryRun})
	var stale *host.StaleFileError
	var amb *host.AmbiguousIDError
	switch {
	case errors.As(err, &stale):
		writeError(w, http.StatusConflict, "StaleFile", where+": "+err.Error())
		return
	case errors.As(err, &amb):
		writeError(w, http.StatusConflict, "AmbiguousID", where+": "+err.Error())
		return
	case err != nil:
		writeError(w, http.StatusUnprocessableEntity, "UndoRefused", where+": "+err.Error())
		return
	}
	if !req.DryRun {
		s.log.Info("batch API: undo", "target", req.ID, "undo_batch", rep.UndoBatchID, "files", len(rep.Files), "console", fromConsole(r.Context()))
	}
	writeJSON(w, http.StatusOK, rep)
}
