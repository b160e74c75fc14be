package engine

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/toolhost/toolhost/abi"
	"github.com/toolhost/toolhost/host/internal/hostfn"
	"github.com/toolhost/toolhost/host/internal/output"
)

// Decision is the answer to a plan's confirmations (FR-APR-03): whoever
// was asked (a person, an MCP client, a batch API client), or, when no
// answer came, why not.
type Decision struct {
	all      bool
	selected map[string]bool
	// unasked marks the calls it does not approve as denied because no
	// answer came (nobody could be asked, or the question went
	// unanswered), not by whoever was asked (abi.DenialNotAsked rather
	// than abi.KindDeniedByUser).
	unasked bool
	// By names who decided; denied calls' results say so.
	By string
	// Reason is why the person who decided denied the calls not
	// approved, in their words: the denied calls' results give it to the
	// model, so it can change course. "" gives none.
	Reason string
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

// DenyAll approves nothing: by answered no to every call (their results
// are of kind DeniedByUser).
func DenyAll(by string) Decision { return Decision{By: by} }

// Unasked approves the confirmations with these call ids (an operator's
// standing approval) and denies the rest because no answer came about
// them: nobody could be asked, or the question went unanswered; why says
// so and what would let them run. Their results are SandboxViolations
// with reason NotAsked, so a client can tell them from a person's no.
func Unasked(why string, ids ...string) Decision {
	d := ApproveSelected(why, ids...)
	d.unasked = true
	return d
}

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
	// Dropped counts the events the consumer missed because it did not
	// take them in time: on Completed, the call's (its chunks, Started);
	// on Done, the whole batch's. A consumer that sees a non-zero count
	// knows its stream has gaps.
	Dropped int64 `json:"dropped,omitempty"`
}

// RunOptions are a batch's inputs beyond the plan.
type RunOptions struct {
	// Events receives the batch's events, in order; nil drops them. The
	// engine waits for a slow consumer only within bounds: a chunk until
	// its call's deadline, any other event about a second, and at the end
	// of the batch about a second more. What the consumer does not take in
	// time is dropped and counted (Event.Dropped on Completed and Done); a
	// call's deadline or the caller's cancellation is never held up by the
	// consumer. A Subscription is written to directly; any other sink is
	// called from a goroutine of the engine's, so that even a Send that
	// ignores its ctx cannot hold the batch (it is left behind; otherwise
	// Send is not called after Run or Process returns).
	Events EventSink
	// AvailableCapacityBytes is the caller's estimate of the room left for
	// results (FR-REG-04b); 0 keeps the configured fallback.
	AvailableCapacityBytes int64
	// Narrowing restricts the configured policy for this batch (a
	// transport's profile); it can never widen it. Process applies it
	// when planning; Run uses the plan's.
	Narrowing Narrowing
	// Observe, when set, receives every host function each call's plugin
	// calls, allowed or refused, with the path as the plugin gave it; in
	// Process, also what a summary attempted (Access.Summary). It is
	// called while the plugin waits: it must be quick.
	Observe func(Access)
	// ObserveOutput, when set, receives the size of each call's result as
	// the plugin returned it, before the host cut it to the output limit.
	ObserveOutput func(Output)
}

// Process is the whole tool loop for one batch: plan, ask approver about
// the calls that need confirmation (it is not asked when none do; a nil
// approver, or one that fails, denies them), run. It returns exactly one
// result per call, in call order.
func (e *Engine) Process(ctx context.Context, b Batch, approver Approver, opts RunOptions) (*Plan, []Result) {
	p := e.Plan(withObserve(ctx, opts.Observe), b, opts.Narrowing)
	em := newEmitter(ctx, opts.Events, e.log)
	em.batchEvent(ctx, Event{Kind: EventPlanned, BatchID: p.Batch.ID})
	d := DenyAll("")
	if cs := p.Confirmations(); len(cs) > 0 && p.journal.err == nil {
		em.batchEvent(ctx, Event{Kind: EventAwaitingApproval, BatchID: p.Batch.ID})
		d = approve(ctx, approver, cs)
	}
	results := e.run(ctx, p, d, opts, em)
	em.close(ctx, p.Batch.ID)
	return p, results
}

// approve asks approver; without one, or when it fails, every
// confirmation is denied and the results say why. The approver is caller
// code that may panic or ignore ctx: it runs on a goroutine of its own, a
// panic denies like an error, and when ctx ends the batch goes on without
// waiting for an answer that can no longer count.
func approve(ctx context.Context, approver Approver, cs []Confirmation) Decision {
	if approver == nil {
		return Unasked("policy: no approver is connected")
	}
	type answer struct {
		d   Decision
		err error
	}
	answered := make(chan answer, 1)
	go func() {
		defer func() {
			if r := recover(); r != nil {
				answered <- answer{err: fmt.Errorf("the approver panicked: %v", r)}
			}
		}()
		d, err := approver.Approve(ctx, cs)
		answered <- answer{d, err}
	}()
	select {
	case a := <-answered:
		if a.err != nil {
			return Unasked(fmt.Sprintf("default, because the approval failed (%v); ask again in a later batch", a.err))
		}
		return a.d
	case <-ctx.Done():
		return Unasked(fmt.Sprintf("default, because the batch ended (%v) before the approval came; ask again in a later batch", context.Cause(ctx)))
	}
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
	em := newEmitter(ctx, opts.Events, e.log)
	results := e.run(ctx, p, d, opts, em)
	em.close(ctx, p.Batch.ID)
	return results
}

func (e *Engine) run(ctx context.Context, p *Plan, d Decision, opts RunOptions, em *emitter) []Result {
	e.decideJournal(p, d)
	em.batchEvent(ctx, Event{Kind: EventExecuting, BatchID: p.Batch.ID})
	results := make([]Result, len(p.Calls))
	for start := 0; start < len(p.Calls); {
		end := e.group(p, d, start)
		if end-start == 1 {
			results[start] = e.runPlanned(ctx, p, start, d, opts, em)
		} else {
			var wg sync.WaitGroup
			for i := start; i < end; i++ {
				wg.Go(func() { results[i] = e.runPlanned(ctx, p, i, d, opts, em) })
			}
			wg.Wait()
		}
		start = end
	}
	e.endJournal(ctx, p)
	em.doneEvent(ctx, Event{Kind: EventDone, BatchID: p.Batch.ID})
	return results
}

// group returns the end of the run of calls starting at start that may
// execute together: with allow_parallel, consecutive read-only calls that
// will execute; otherwise the one call.
func (e *Engine) group(p *Plan, d Decision, start int) int {
	if !p.parallel {
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

// runPlanned produces the result of call i, journaled.
func (e *Engine) runPlanned(ctx context.Context, p *Plan, i int, d Decision, opts RunOptions, em *emitter) Result {
	return e.journaled(ctx, p, i, func(start func() error) Result { return e.resolveCall(ctx, p, i, d, opts, em, start) })
}

// resolveCall produces the result of call i; start is called right
// before the call runs, and when it fails the call does not run.
func (e *Engine) resolveCall(ctx context.Context, p *Plan, i int, d Decision, opts RunOptions, em *emitter, start func() error) Result {
	pc := &p.Calls[i]
	call := pc.Call
	if ctx.Err() != nil {
		return cancelled(call)
	}
	switch {
	case pc.tool != nil && pc.changed():
		return failed(call, &ToolError{Kind: abi.KindExecutionFailed, Message: fmt.Sprintf(
			"call %s (%s) was changed after it was planned (its id, tool, arguments or disposition), so it is not what was approved and did not run; plan the batch again", call.ID, call.Name)})
	case pc.Disposition == PreResolved && pc.Result != nil:
		return e.finish(*pc.Result)
	case pc.Disposition == Pending && pc.Result != nil:
		return e.finish(*pc.Result)
	case pc.Disposition == Pending:
		return failed(call, &ToolError{Kind: abi.KindExecutionFailed, Message: fmt.Sprintf(
			"no result was submitted for call %s (%s); tools.mode is parse_only, so tools do not run by themselves", call.ID, call.Name)})
	case pc.Disposition == RequiresConfirmation && !d.approves(call.ID):
		return e.finish(notApproved(call, d))
	case pc.tool == nil:
		return failed(call, &ToolError{Kind: abi.KindExecutionFailed, Message: fmt.Sprintf(
			"call %s was not planned by this engine; plan the batch with Plan before running it", call.ID)})
	}
	if terr := e.stillNew(pc); terr != nil {
		return e.finish(failed(call, terr))
	}
	if terr := stillNotGit(pc); terr != nil {
		return e.finish(failed(call, terr))
	}
	if err := start(); err != nil {
		return e.finish(unrecorded(call, err))
	}
	var dropped atomic.Int64
	em.callEvent(ctx, Event{Kind: EventStarted, BatchID: p.Batch.ID, CallID: call.ID, Tool: call.Name}, &dropped)
	began := time.Now()
	var streams callStreams
	res := e.finish(e.callTool(ctx, call, pc.tool, pc.resolved, callOptions{
		Conversation: p.Batch.Conversation, AvailableCapacityBytes: opts.AvailableCapacityBytes,
		Writes: pc.writes, DryRun: pc.dryRun, WritesNothing: pc.ownDryRun, ReadsAt: p.readsAt, CommandSandbox: p.commandSandbox, CommandNetwork: p.commandNetwork, Origin: p.Batch.ID, Journal: e.callJournal(ctx, p, i),
		Observe: callObserver(opts.Observe), ObserveOutput: opts.ObserveOutput,
		Emit: func(ctx context.Context, h hostfn.Event) error {
			text := streams.write(h.Kind, h.Data)
			if text == "" {
				return nil // all of it held back, or all of it controls
			}
			if !em.chunk(ctx, chunkEvent(p.Batch.ID, call, h.Kind, text), &dropped) {
				return errNotDelivered
			}
			return nil
		},
	}))
	// What the streams held back at the end (a rune or a sequence the
	// output ended inside) comes before Completed; the call's deadline is
	// over, so it waits for the consumer only as Completed does.
	for _, kind := range []uint32{abi.EventStdout, abi.EventStderr} {
		if text := streams.flush(kind); text != "" {
			em.callEvent(ctx, chunkEvent(p.Batch.ID, call, kind, text), &dropped)
		}
	}
	em.callEvent(ctx, Event{Kind: EventCompleted, BatchID: p.Batch.ID, CallID: call.ID, Tool: call.Name, OK: res.OK}, &dropped)
	e.log.Debug("tool call", "batch", p.Batch.ID, "id", call.ID, "tool", call.Name, "ok", res.OK, "elapsed", time.Since(began), "events_dropped", dropped.Load())
	return res
}

// errNotDelivered tells a host function its chunk was dropped: the
// consumer did not take it before the call's deadline.
var errNotDelivered = errors.New("the event consumer did not take the output in time")

// chunkEvent is a chunk of a call's stream kind (abi.EventStdout or
// abi.EventStderr), text already sanitized by the call's callStreams.
func chunkEvent(batch string, call Call, kind uint32, text string) Event {
	k := EventStdoutChunk
	if kind == abi.EventStderr {
		k = EventStderrChunk
	}
	return Event{Kind: k, BatchID: batch, CallID: call.ID, Tool: call.Name, Chunk: text}
}

// callStreams sanitizes one call's streamed output. A terminal or console
// shows chunks as they come: they are as untrusted as the result and
// sanitized the same way (FR-OUT-02), each stream by an output.Stream of
// its own, so that a chunk boundary inside an escape sequence or a rune
// lets no part of it through.
type callStreams struct {
	// mu orders a late write against the flush: proc abandons a sink
	// that outlives the call's deadline, and it may still be writing.
	mu       sync.Mutex
	out, err output.Stream
}

func (c *callStreams) stream(kind uint32) *output.Stream {
	if kind == abi.EventStderr {
		return &c.err
	}
	return &c.out
}

// write returns data sanitized, less what its stream holds back.
func (c *callStreams) write(kind uint32, data []byte) string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.stream(kind).Write(string(data))
}

// flush returns what the stream of kind held back, sanitized.
func (c *callStreams) flush(kind uint32) string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.stream(kind).Flush()
}

func cancelled(call Call) Result {
	return failed(call, &ToolError{Kind: abi.KindCancelled, Message: "Cancelled by user"})
}

// notApproved is the result of a call d does not approve: denied by
// whoever answered (DeniedByUser), or, when no answer came, by default
// (a SandboxViolation with reason NotAsked).
func notApproved(call Call, d Decision) Result {
	by := d.By
	if by == "" {
		by = "the user"
	}
	msg := fmt.Sprintf("Denied by %s: call %s (%s) was not approved and did not run", by, call.ID, call.Name)
	if d.unasked {
		return failed(call, denial(abi.DenialNotAsked, msg, map[string]any{"denied_by": by}))
	}
	detail := map[string]string{"denied_by": by}
	if d.Reason != "" {
		msg += ". The reason given: " + d.Reason
		detail["reason"] = d.Reason
	}
	details, _ := json.Marshal(detail)
	return failed(call, &ToolError{Kind: abi.KindDeniedByUser, Message: msg, Details: details})
}
