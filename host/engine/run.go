package engine

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/toolhost/toolhost/abi"
	"github.com/toolhost/toolhost/host/internal/hostfn"
)

// Decision is a person's answer to a plan's confirmations (FR-APR-03).
type Decision struct {
	all      bool
	selected map[string]bool
	// By names who decided; denied calls' results say so.
	By string
}

// ApproveAll approves every confirmation of the plan.
func ApproveAll(by string) Decision { return Decision{all: true, By: by} }

// ApproveSelected approves the confirmations with these call ids only.
func ApproveSelected(by string, ids ...string) Decision {
	d := Decision{selected: make(map[string]bool, len(ids)), By: by}
	for _, id := range ids {
		d.selected[id] = true
	}
	return d
}

// DenyAll approves nothing.
func DenyAll(by string) Decision { return Decision{By: by} }

func (d Decision) approves(id string) bool { return d.all || d.selected[id] }

// EventKind names a tool-loop event (FR-OUT-01).
type EventKind string

// Event kinds: batch state changes, then per call Started, chunks,
// Completed.
const (
	EventPlanned          EventKind = "batch_planned"
	EventAwaitingApproval EventKind = "awaiting_approval"
	EventExecuting        EventKind = "executing"
	EventDone             EventKind = "batch_done"
	EventStarted          EventKind = "started"
	EventStdoutChunk      EventKind = "stdout_chunk"
	EventStderrChunk      EventKind = "stderr_chunk"
	EventCompleted        EventKind = "completed"
)

// Event is one step of a batch. For a call, Started comes before its
// chunks and Completed after the last one.
type Event struct {
	Kind    EventKind `json:"kind"`
	BatchID string    `json:"batch_id"`
	CallID  string    `json:"tool_call_id,omitempty"`
	Tool    string    `json:"tool_name,omitempty"`
	Chunk   string    `json:"chunk,omitempty"`
	OK      bool      `json:"ok,omitempty"` // Completed: the call succeeded
}

// RunOptions are a batch's inputs beyond the plan.
type RunOptions struct {
	// Events receives the batch's events, one at a time and in order. It
	// may block: the engine then waits, so nothing is ever dropped.
	Events func(Event)
	// AvailableCapacityBytes is the caller's estimate of the room left for
	// results (FR-REG-04b); 0 keeps the configured fallback.
	AvailableCapacityBytes int64
}

// Process is the whole tool loop for one batch: plan, ask approve for the
// calls that need confirmation (it is not called when none do; a nil
// approve denies them), run.
// It returns exactly one result per call, in call order.
func (e *Engine) Process(ctx context.Context, b Batch, approve func(context.Context, []Confirmation) Decision, opts RunOptions) (*Plan, []Result) {
	emit := func(Event) {}
	if opts.Events != nil {
		emit = opts.Events // Process emits from this goroutine only, before and after Run
	}
	p := e.Plan(ctx, b)
	emit(Event{Kind: EventPlanned, BatchID: p.Batch.ID})
	d := DenyAll("")
	if cs := p.Confirmations(); len(cs) > 0 {
		emit(Event{Kind: EventAwaitingApproval, BatchID: p.Batch.ID})
		d = DenyAll("policy: no approver is connected")
		if approve != nil {
			d = approve(ctx, cs)
		}
	}
	return p, e.Run(ctx, p, d, opts)
}

// Resolve records a person's result for a Pending call (parse_only mode,
// FR-MODE-02).
func (p *Plan) Resolve(callID, content string, isError bool) error {
	for i := range p.Calls {
		pc := &p.Calls[i]
		if pc.Call.ID != callID {
			continue
		}
		if pc.Disposition != Pending {
			return fmt.Errorf("call %s is %s, not pending; only pending calls take a submitted result", callID, pc.Disposition)
		}
		r := Result{ID: callID, Name: pc.Call.Name, OK: !isError, Content: content}
		if isError {
			r = Result{ID: callID, Name: pc.Call.Name, Error: &ToolError{Kind: abi.KindExecutionFailed, Message: content}}
		}
		pc.Result = &r
		return nil
	}
	return fmt.Errorf("no call %s in batch %s", callID, p.Batch.ID)
}

// Run executes an approved plan: calls in order (read-only ones
// concurrently when allow_parallel is set), continuing after failures.
// When ctx is cancelled the running call stops and it and every later call
// get "Cancelled by user". It returns exactly one result per call, in call
// order (FR-RES-01a, NFR-REL-01).
func (e *Engine) Run(ctx context.Context, p *Plan, d Decision, opts RunOptions) []Result {
	ev := newEmitter(opts.Events)
	ev.emit(Event{Kind: EventExecuting, BatchID: p.Batch.ID})
	results := make([]Result, len(p.Calls))
	for start := 0; start < len(p.Calls); {
		end := e.group(p, d, start)
		if end-start == 1 {
			results[start] = e.runPlanned(ctx, p, start, d, opts, ev)
		} else {
			var wg sync.WaitGroup
			for i := start; i < end; i++ {
				wg.Go(func() { results[i] = e.runPlanned(ctx, p, i, d, opts, ev) })
			}
			wg.Wait()
		}
		start = end
	}
	ev.emit(Event{Kind: EventDone, BatchID: p.Batch.ID})
	return results
}

// group returns the end of the run of calls starting at start that may
// execute together: with allow_parallel, consecutive read-only calls that
// will execute; otherwise the one call.
func (e *Engine) group(p *Plan, d Decision, start int) int {
	if !e.policy.AllowParallel {
		return start + 1
	}
	end := start
	for end < len(p.Calls) && end-start < maxParallel && p.Calls[end].parallelizable(d) {
		end++
	}
	return max(end, start+1)
}

// maxParallel bounds concurrent calls: each holds a plugin instance.
const maxParallel = 4

func (pc *PlannedCall) parallelizable(d Decision) bool {
	runs := pc.Disposition == ExecuteNow || (pc.Disposition == RequiresConfirmation && d.approves(pc.Call.ID))
	return runs && pc.tool != nil && !pc.tool.Manifest.SideEffecting
}

// runPlanned produces the result of call i.
func (e *Engine) runPlanned(ctx context.Context, p *Plan, i int, d Decision, opts RunOptions, ev *emitter) Result {
	pc := &p.Calls[i]
	call := pc.Call
	if ctx.Err() != nil {
		return cancelled(call)
	}
	switch {
	case pc.Disposition == PreResolved:
		return e.finish(*pc.Result)
	case pc.Disposition == Pending && pc.Result != nil:
		return e.finish(*pc.Result)
	case pc.Disposition == Pending:
		return failed(call, &ToolError{Kind: abi.KindExecutionFailed, Message: fmt.Sprintf(
			"no result was submitted for call %s (%s); tools.mode is parse_only, so tools do not run by themselves", call.ID, call.Name)})
	case pc.Disposition == RequiresConfirmation && !d.approves(call.ID):
		return e.finish(deniedByUser(call, d.By))
	case pc.tool == nil:
		return failed(call, &ToolError{Kind: abi.KindExecutionFailed, Message: fmt.Sprintf(
			"call %s was not planned by this engine; plan the batch with Plan before running it", call.ID)})
	}
	ev.emit(Event{Kind: EventStarted, BatchID: p.Batch.ID, CallID: call.ID, Tool: call.Name})
	start := time.Now()
	res := e.finish(e.run(ctx, call, pc.tool, pc.resolved, Options{
		Conversation: p.Batch.Conversation, AvailableCapacityBytes: opts.AvailableCapacityBytes,
		Emit: func(_ context.Context, h hostfn.Event) error { ev.emit(chunkEvent(p.Batch.ID, call, h)); return nil },
	}))
	ev.emit(Event{Kind: EventCompleted, BatchID: p.Batch.ID, CallID: call.ID, Tool: call.Name, OK: res.OK})
	e.log.Debug("tool call", "batch", p.Batch.ID, "id", call.ID, "tool", call.Name, "ok", res.OK, "elapsed", time.Since(start))
	return res
}

func chunkEvent(batch string, call Call, h hostfn.Event) Event {
	kind := EventStdoutChunk
	if h.Kind == abi.EventStderr {
		kind = EventStderrChunk
	}
	return Event{Kind: kind, BatchID: batch, CallID: call.ID, Tool: call.Name, Chunk: string(h.Data)}
}

func cancelled(call Call) Result {
	return failed(call, &ToolError{Kind: abi.KindCancelled, Message: "Cancelled by user"})
}

func deniedByUser(call Call, by string) Result {
	if by == "" {
		by = "the user"
	}
	return failed(call, denial(abi.DenialByUser, fmt.Sprintf("Denied by %s: call %s (%s) was not approved and did not run", by, call.ID, call.Name), map[string]any{"denied_by": by}))
}

// emitter serializes events from concurrent calls into one ordered
// stream.
type emitter struct {
	mu sync.Mutex
	fn func(Event)
}

func newEmitter(fn func(Event)) *emitter { return &emitter{fn: fn} }

func (em *emitter) emit(ev Event) {
	if em.fn == nil {
		return
	}
	em.mu.Lock()
	defer em.mu.Unlock()
	em.fn(ev)
}
