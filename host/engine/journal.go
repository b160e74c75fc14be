package engine

import (
	"context"
	"encoding/json"
	"fmt"
	"regexp"
	"slices"

	"github.com/toolhost/toolhost/abi"
)

// Journal durably records what a batch asks, what is decided, what runs
// and what comes of it, so that a crash never leaves a call unrecorded and
// recovery never re-runs one (FR-RES-01, FR-RES-04a/b, NFR-REL-01/04).
// The engine owns this interface and calls it in order: BeginBatch once
// the batch is planned and before anyone is asked or anything runs,
// Decide once approval is decided, StartCall right before a call runs,
// FinishCall as soon as it has its result (before the next call starts),
// EndBatch when every call has one. Every method must have committed
// what it was given when it returns nil: a call whose BeginBatch or
// StartCall fails does not run, and its result says why.
//
// Implementations must be safe for concurrent use: read-only calls of a
// parallel batch start and finish together. The engine passes a context
// that the batch's cancellation does not end, so that a cancelled call's
// result is still recorded.
type Journal interface {
	BeginBatch(ctx context.Context, b JournalBatch) error
	Decide(ctx context.Context, batchID string, ds []JournalDecision) error
	StartCall(ctx context.Context, batchID, callID string) error
	FinishCall(ctx context.Context, batchID, callID string, r Result) error
	EndBatch(ctx context.Context, batchID string) error
}

// JournalBatch is a planned batch as the journal records it.
type JournalBatch struct {
	ID           string
	Conversation string
	Turn         string
	Calls        []JournalCall // in call order
}

// JournalCall is one planned call. ID is unique within the batch: a call
// whose own id is empty or repeated (which never runs) gets its id with
// "#N", N its place in the batch.
type JournalCall struct {
	ID   string
	Tool string
	// Arguments are the call's arguments as JSON with secrets redacted
	// as in approval summaries (FR-APR-01): the journal outlives the batch
	// and is read by people and log pipelines.
	Arguments   json.RawMessage
	Disposition Disposition
	// Result is set for a call resolved while planning (PreResolved),
	// which never starts.
	Result *Result
}

// JournalDecision is the decision on one call that needed confirmation.
type JournalDecision struct {
	CallID   string
	Approved bool
	By       string
}

// journalState is a plan's place in the journal.
type journalState struct {
	begun bool
	// err is why the batch could not be recorded: no call of it runs.
	err error
	// ids are the calls' ids in the journal (JournalCall.ID).
	ids []string
	// resolved are the calls recorded with their result by BeginBatch.
	resolved []int
}

func (s *journalState) preResolved(i int) bool { return slices.Contains(s.resolved, i) }

// journalCtx keeps journal writes going when the batch is cancelled: a
// cancelled call's result must be recorded too.
func journalCtx(ctx context.Context) context.Context { return context.WithoutCancel(ctx) }

// beginJournal records the planned batch, once, before anyone is asked
// or anything runs (FR-RES-04a). On failure no call of the batch runs.
func (e *Engine) beginJournal(ctx context.Context, p *Plan) {
	j := e.cfg.Journal
	if j == nil || p.journal.begun {
		return
	}
	p.journal.begun = true
	p.journal.ids = journalIDs(p.Batch.Calls)
	jb := JournalBatch{ID: p.Batch.ID, Conversation: p.Batch.Conversation, Turn: p.Batch.Turn, Calls: make([]JournalCall, len(p.Calls))}
	for i := range p.Calls {
		pc := &p.Calls[i]
		// What was planned: a call changed since does not run.
		jc := JournalCall{ID: p.journal.ids[i], Tool: pc.planned.Name, Arguments: e.redactArgs(pc.planned.Arguments), Disposition: pc.plannedDisp}
		if pc.plannedDisp == PreResolved && pc.Result != nil {
			r := e.finish(*pc.Result)
			jc.Result = &r
			p.journal.resolved = append(p.journal.resolved, i)
		}
		jb.Calls[i] = jc
	}
	if err := j.BeginBatch(journalCtx(ctx), jb); err != nil {
		p.journal.err = err
		e.log.Error("cannot record the batch in the journal; none of its calls runs", "batch", p.Batch.ID, "err", err)
	}
}

// decideJournal records d for the calls that needed confirmation, before
// any call runs; on failure no call of the batch runs.
func (e *Engine) decideJournal(ctx context.Context, p *Plan, d Decision) {
	j := e.cfg.Journal
	if j == nil || p.journal.err != nil {
		return
	}
	var ds []JournalDecision
	for i, pc := range p.Calls {
		if pc.Disposition == RequiresConfirmation {
			ds = append(ds, JournalDecision{CallID: p.journal.ids[i], Approved: d.approves(pc.Call.ID), By: decidedBy(d)})
		}
	}
	if len(ds) == 0 {
		return
	}
	if err := j.Decide(journalCtx(ctx), p.Batch.ID, ds); err != nil {
		p.journal.err = err
		e.log.Error("cannot record the batch's decisions in the journal; none of its calls runs", "batch", p.Batch.ID, "err", err)
	}
}

func decidedBy(d Decision) string {
	if d.By == "" {
		return "the user"
	}
	return d.By
}

// journaled runs call i through run, recording its result as soon as it
// has one (FR-RES-04b). run calls start right before the call runs, which
// records the start first; a call resolved without running (a denial, a
// cancellation) is recorded without a start, and one whose start the
// journal cannot record does not run: start's error is its result.
func (e *Engine) journaled(ctx context.Context, p *Plan, i int, run func(start func() error) Result) Result {
	j := e.cfg.Journal
	if j == nil {
		return run(func() error { return nil })
	}
	pc := &p.Calls[i]
	if p.journal.err != nil {
		return e.finish(unrecorded(pc.Call, p.journal.err))
	}
	if p.journal.preResolved(i) {
		return run(func() error { return nil }) // recorded with the batch; it never starts
	}
	id := p.journal.ids[i]
	res := run(func() error {
		if err := j.StartCall(journalCtx(ctx), p.Batch.ID, id); err != nil {
			e.log.Error("cannot record the start of a call in the journal; it does not run", "batch", p.Batch.ID, "id", pc.Call.ID, "err", err)
			return err
		}
		return nil
	})
	if err := j.FinishCall(journalCtx(ctx), p.Batch.ID, id, res); err != nil {
		e.log.Error("cannot record a call's result in the journal; after a crash it will show as interrupted", "batch", p.Batch.ID, "id", pc.Call.ID, "err", err)
	}
	return res
}

// endJournal marks the batch done once every call has its result.
func (e *Engine) endJournal(ctx context.Context, p *Plan) {
	j := e.cfg.Journal
	if j == nil || !p.journal.begun || p.journal.err != nil {
		return
	}
	if err := j.EndBatch(journalCtx(ctx), p.Batch.ID); err != nil {
		e.log.Error("cannot mark the batch done in the journal", "batch", p.Batch.ID, "err", err)
	}
}

// unrecorded is the result of a call that did not run because the journal
// could not record it first.
func unrecorded(call Call, err error) Result {
	return failed(call, &ToolError{Kind: abi.KindExecutionFailed, Message: fmt.Sprintf(
		"call %s (%s) did not run: toolhost records every call in its journal before running it, and recording failed: %v",
		call.ID, call.Name, err)})
}

// journalIDs are the calls' ids, made unique: an empty or repeated id
// (a call that never runs) becomes "ID#N", N its place in the batch.
func journalIDs(calls []Call) []string {
	seen := make(map[string]int, len(calls))
	for _, c := range calls {
		seen[c.ID]++
	}
	ids := make([]string, len(calls))
	for i, c := range calls {
		ids[i] = c.ID
		if c.ID == "" || seen[c.ID] > 1 {
			ids[i] = fmt.Sprintf("%s#%d", c.ID, i+1)
		}
	}
	return ids
}

// redactArgs is raw with every string in it redacted as approval
// summaries are, still JSON; arguments that are not JSON are kept as one
// redacted string.
func (e *Engine) redactArgs(raw json.RawMessage) json.RawMessage {
	var v any
	if err := json.Unmarshal(args(Call{Arguments: raw}), &v); err != nil {
		v = string(raw)
	}
	out, err := json.Marshal(e.redactValue(v))
	if err != nil {
		return json.RawMessage("null")
	}
	return out
}

func (e *Engine) redactValue(v any) any {
	switch v := v.(type) {
	case string:
		for _, rule := range e.redact.rules {
			v, _ = rule.apply(v, nil)
		}
		return v
	case []any:
		for i := range v {
			v[i] = e.redactValue(v[i])
		}
	case map[string]any:
		for k, x := range v {
			if _, ok := x.(string); ok && secretName.MatchString(k) {
				v[k] = hidden // {"GITHUB_TOKEN": "…"}: the name says what the value is
				continue
			}
			v[k] = e.redactValue(x)
		}
	}
	return v
}

// secretName matches an argument name that names a secret, as the
// key=value rule of the redactor does.
var secretName = regexp.MustCompile(`(?i)(?:api[_-]?key|token|secret|passw(?:or)?d|pwd|credential|private[_-]?key)`)
