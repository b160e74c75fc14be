package server

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/toolhost/toolhost/abi"
	"github.com/toolhost/toolhost/host/internal/engine"
	"github.com/toolhost/toolhost/host/internal/reclaim"
)

// Batch states. A batch waits in awaitingApproval for
// a decision, or in pendingResults for the results a client submits in
// parse_only mode; then it runs, and ends done or cancelled.
const (
	stateAwaiting  = "awaiting_approval"
	stateRunning   = "running"
	statePending   = "pending_results"
	stateDone      = "done"
	stateCancelled = "cancelled"
)

func finished(state string) bool { return state == stateDone || state == stateCancelled }

// Bounds of the batch registry. A long-running server keeps finished
// batches only for a while, so clients can fetch their results and
// replay their events, and never grows without bound.
const (
	defaultMaxBatches     = 1000
	defaultBatchRetention = time.Hour
	// maxLogEvents and maxLogBytes bound a batch's event log; past them
	// the oldest events go, and a reader that asks for them learns how
	// many it missed.
	maxLogEvents = 10000
	maxLogBytes  = 8 << 20
	// defaultMaxKeptBytes bounds what the batches kept hold in all, their
	// calls' arguments and their results, and defaultMaxLogBytes their
	// event logs together: without them, 1000 batches of 4 MiB bodies,
	// each with an 8 MiB log, would hold gigabytes. A
	// new batch evicts the oldest finished ones to fit, and is refused
	// when the unfinished ones alone fill the budget; a log that would
	// pass the shared budget evicts the oldest finished batches, then its
	// own oldest events. An agent's batches hold kilobytes.
	defaultMaxKeptBytes = 256 << 20
	defaultMaxLogBytes  = 128 << 20
	// MemoryLimit is the soft memory limit for the Go runtime of a
	// process serving the batch API (debug.SetMemoryLimit): twice what
	// its batches may keep, their budget and their event logs', the
	// other half for the runtime, the compiled plugins and the calls in
	// flight. Without it a heap let grow to five times what is live
	// (toolhost serve's GOGC) held 1.2 GB resident for 250 MiB of
	// batches awaiting a decision.
	MemoryLimit = 2 * (defaultMaxKeptBytes + defaultMaxLogBytes)
	// defaultMaxStreams bounds the event streams open on the server at
	// once and defaultMaxBatchStreams those on one batch: each holds a
	// connection and a goroutine, and an agent follows a batch with one
	// (a reconnect with Last-Event-ID replaces it).
	defaultMaxStreams      = 256
	defaultMaxBatchStreams = 16
	// defaultStreamWriteTimeout is the longest a write to an event stream
	// may wait for its client to read: a client that stops reading is
	// dropped, and may reconnect with Last-Event-ID.
	defaultStreamWriteTimeout = 30 * time.Second
)

// The kinds of the events a batch adds to the engine's own.
const (
	// eventState is a change of the batch's state; the one to a finished
	// state is the batch's last event.
	eventState = "state"
	// eventMissed tells a reader that events it asked for are no longer
	// kept.
	eventMissed = "events_missed"
)

// logEvent is one event of a batch's log: Data is its JSON, an engine
// Event or one of the batch's own.
type logEvent struct {
	ID    int64
	Kind  string
	Data  json.RawMessage
	final bool
}

// stateEvent is the data of an eventState event.
type stateEvent struct {
	Kind    string `json:"kind"`
	BatchID string `json:"batch_id"`
	State   string `json:"state"`
	// Dropped, on the last event, counts the batch's events no longer
	// kept in its log (it outgrew maxLogEvents or maxLogBytes) plus
	// those the engine could not deliver.
	Dropped int64 `json:"dropped,omitempty"`
}

// missedEvent is the data of an eventMissed event.
type missedEvent struct {
	Kind    string `json:"kind"`
	BatchID string `json:"batch_id"`
	Missed  int64  `json:"missed"`
	Message string `json:"message"`
}

// verdict is a decision as a client sent it, before it becomes the
// engine's Decision.
type verdict struct {
	Decision string
	IDs      []string
	By       string
	// Reason is the denial's reason, for the model (engine.Decision).
	Reason string
}

// decision is v as the engine's Decision; preapproved are calls an
// operator's standing approval (--allow) already covers, approved
// whatever v says.
func (v verdict) decision(preapproved []string) engine.Decision {
	var d engine.Decision
	switch v.Decision {
	case "approve_all":
		d = engine.ApproveAll(v.By)
	case "approve_selected":
		d = engine.ApproveSelected(v.By, append(slices.Clone(v.IDs), preapproved...)...)
	default:
		d = engine.ApproveSelected(v.By, preapproved...)
	}
	d.Reason = v.Reason
	return d
}

// batch is one batch of the registry: created by POST /v1/batches, or a
// held MCP call waiting for a decision through the API.
type batch struct {
	id           string
	conversation string
	created      time.Time
	// mcp marks a call an MCP client made, held because the client cannot
	// be asked; the client's request waits for the decision.
	mcp bool
	// plan is the engine's plan of an API batch; nil for a held MCP call.
	plan *engine.Plan
	// argBytes is what the batch's calls take as sent, counted against
	// the registry's budget when it is added; reg is the registry, once
	// added, and kept what it counts for the batch there (under reg.mu).
	argBytes int64
	// views is what the calls' approval views hold (their arguments'
	// text, files and diff: engine.Approval.HeldBytes), counted with
	// argBytes while the batch waits, and given back once it no longer
	// does (release).
	views   int64
	reg     *registry
	kept    int64
	streams int        // event streams open on it (under reg.mu)
	calls   []callView // as planned, in call order
	// confirmations are the call ids a decision may approve.
	confirmations map[string]bool
	// preapproved are the calls the operator's --allow approved when the
	// batch was planned: they run whatever the decision says, and no
	// decision is awaited for them.
	preapproved []string

	// decided takes the one decision (capacity 1); cancel ends the
	// batch's context.
	decided chan verdict
	ctx     context.Context
	cancel  context.CancelFunc

	mu        sync.Mutex
	state     string
	ended     time.Time
	results   []engine.Result
	decidedBy string
	cancelled bool // a client asked to cancel it
	// submitted is what the results a client submitted in parse_only mode
	// hold, counted against the registry's budget as they came.
	submitted int64
	log       eventLog
}

// newBatch makes a batch in state, its context ending with parent's.
func newBatch(parent context.Context, id, conversation, state string, calls []callView) *batch {
	b := &batch{id: id, conversation: conversation, created: time.Now(), calls: calls, state: state,
		decided: make(chan verdict, 1), confirmations: map[string]bool{}}
	b.ctx, b.cancel = context.WithCancel(parent)
	b.log.changed = make(chan struct{})
	for _, c := range calls {
		if c.Disposition == engine.RequiresConfirmation {
			b.confirmations[c.ID] = true
		}
		if c.Approval != nil {
			b.views += c.Approval.HeldBytes()
		}
	}
	return b
}

// release lets what b held for a decision go once it has none to
// await: its calls' views and its plan (the arguments as planned and
// their confirmations). The registry then counts them no more, and once
// enough is let go it gives the memory back to the system.
func (b *batch) release() {
	b.mu.Lock()
	n := b.views
	b.views = 0
	for i := range b.calls {
		b.calls[i].Approval = nil
	}
	b.plan = nil
	b.mu.Unlock()
	if b.reg != nil {
		b.reg.charge(b, -n)
		b.reg.released(n)
	}
}

// preapprove takes the calls the operator's standing approval (allow,
// the tools of --allow) covers out of those a decision must approve.
// A call only a person may approve stays (engine.Preapproved).
func (b *batch) preapprove(allow []string) {
	if b.plan == nil || len(allow) == 0 {
		return
	}
	var cs []engine.Confirmation
	for _, pc := range b.plan.Calls {
		if pc.Confirmation != nil && b.confirmations[pc.Call.ID] {
			cs = append(cs, *pc.Confirmation)
		}
	}
	b.preapproved, _ = engine.Preapproved(cs, allow)
	for _, id := range b.preapproved {
		delete(b.confirmations, id)
	}
}

// Send records an engine event: b is the engine's event sink. It never
// waits, so the engine never drops an event for it.
func (b *batch) Send(_ context.Context, ev engine.Event) error {
	data, err := json.Marshal(ev)
	if err != nil {
		return fmt.Errorf("batch %s: encoding event %s: %w", b.id, ev.Kind, err)
	}
	if r := b.reg; r != nil && r.logs.over(len(data)) {
		r.trim(b, int64(len(data))) // older finished batches go before this one's events
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if ev.Kind == engine.EventDone {
		b.log.engineDropped = ev.Dropped
	}
	b.log.append(string(ev.Kind), data, false)
	return nil
}

// setStateLocked moves b to state and records it; a finished state is
// b's last event. b.mu is held.
func (b *batch) setStateLocked(state string) {
	b.state = state
	if state != stateAwaiting {
		// What a person decides on is no longer shown (view): its memory
		// need not wait for release.
		for i := range b.calls {
			b.calls[i].Approval = nil
		}
	}
	ev := stateEvent{Kind: eventState, BatchID: b.id, State: state}
	end := finished(state)
	if end {
		b.ended = time.Now()
		// Room first, so the count includes what the last event evicts.
		b.log.makeRoom(128)
		ev.Dropped = b.log.evicted + b.log.engineDropped
	}
	data, _ := json.Marshal(ev)
	b.log.append(eventState, data, end)
}

// engineEventLocked records an event of the engine's kind that the
// batch itself emits (it plans before the engine runs). b.mu is held.
func (b *batch) engineEventLocked(kind engine.EventKind) {
	data, _ := json.Marshal(engine.Event{Kind: kind, BatchID: b.id})
	b.log.append(string(kind), data, false)
}

// finish ends the batch with its results, done or, when a client
// cancelled it, cancelled; its results count against the registry's
// budget from then on.
func (b *batch) finish(results []engine.Result) {
	b.mu.Lock()
	if finished(b.state) {
		b.mu.Unlock()
		return
	}
	b.results = results
	state := stateDone
	if b.cancelled {
		state = stateCancelled
	}
	b.setStateLocked(state)
	b.cancel()
	// The results carry the submitted ones, counted already.
	n := resultBytes(results) - b.submitted
	b.mu.Unlock()
	if b.reg != nil {
		b.reg.charge(b, n)
	}
	b.release()
}

// callBytes is what calls hold in a batch kept: the engine's plan keeps
// each call's arguments as sent and as planned, and each call its plan,
// view, result and events besides (callOverhead).
func callBytes(calls []engine.Call) int64 {
	var n int64
	for _, c := range calls {
		n += int64(len(c.ID)+len(c.Name)+2*len(c.Arguments)) + callOverhead
	}
	return n
}

// callOverhead is what a call holds in a batch kept beyond its id, name
// and arguments: measured, a read_file call that ran holds 4.6 KiB of
// heap (its plan, view, result and events), so a budget counting only
// what was sent would let batches of many small calls hold gigabytes.
const callOverhead = 4 << 10

// resultBytes is what results hold.
func resultBytes(rs []engine.Result) int64 {
	var n int64
	for _, r := range rs {
		n += int64(len(r.ID) + len(r.Name) + len(r.Content) + len(r.Structured))
		if r.Error != nil {
			n += int64(len(r.Error.Message) + len(r.Error.Details))
		}
	}
	return n
}

// cancelBefore ends a batch that never ran: every call not pre-resolved
// (or given a result in parse_only mode) gets a result saying it was
// cancelled. b.mu is held.
func (b *batch) cancelBeforeLocked(why string) {
	results := make([]engine.Result, len(b.calls))
	for i, c := range b.calls {
		switch {
		case c.Result != nil:
			results[i] = *copyResult(c.Result)
		default:
			results[i] = engine.Result{ID: c.ID, Name: c.Name, Error: &engine.ToolError{Kind: abi.KindCancelled,
				Message: fmt.Sprintf("call %s (%s) did not run: %s", c.ID, c.Name, why)}}
		}
	}
	b.results = results
	b.cancelled = true
	b.setStateLocked(stateCancelled)
	b.cancel()
}

// expireUndecided ends an API batch still waiting for a decision (or
// for results) timeout after it was planned: a client that walked away
// must not hold its place and its bytes for the server's life. A held
// MCP call has its own, shorter, hold.
func (b *batch) expireUndecided(now time.Time, timeout time.Duration) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.mcp || b.plan == nil || timeout <= 0 || now.Sub(b.created) <= timeout {
		return
	}
	if b.state == stateAwaiting || b.state == statePending {
		b.cancelBeforeLocked(fmt.Sprintf("no decision came within %v of batch %s being planned (POST %s, or in parse_only mode POST %s); send the call again in a new batch", timeout, b.id, batchPath(b.id, "decision"), batchPath(b.id, "results")))
	}
}

// expired reports whether b finished more than retention ago.
func (b *batch) expired(now time.Time, retention time.Duration) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	return finished(b.state) && now.Sub(b.ended) > retention
}

func (b *batch) isFinished() bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	return finished(b.state)
}

// eventLog is a batch's events, numbered from 1, the oldest evicted
// past the bounds. Readers wait on changed, which is closed and
// replaced at every append, so a reader never holds the batch: it
// copies what it has not sent and writes it with no lock held.
type eventLog struct {
	events        []logEvent
	bytes         int
	budget        *logBudget // shared with the other batches' logs; nil: none
	next          int64      // the id of the next event, less one
	evicted       int64      // events no longer kept
	engineDropped int64      // events the engine could not deliver (Done's count)
	changed       chan struct{}
	ended         bool
	// bell rings at every append, for the readers of every batch (the
	// console's event stream); nil until the batch is in a registry.
	bell *bell
}

// bell is a change signal for any number of waiters: wait returns a
// channel closed at the next ring.
type bell struct {
	mu sync.Mutex
	ch chan struct{}
}

func (b *bell) ring() {
	if b == nil {
		return
	}
	b.mu.Lock()
	if b.ch != nil {
		close(b.ch)
		b.ch = nil
	}
	b.mu.Unlock()
}

func (b *bell) wait() <-chan struct{} {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.ch == nil {
		b.ch = make(chan struct{})
	}
	return b.ch
}

func (l *eventLog) append(kind string, data json.RawMessage, final bool) {
	if l.ended {
		return
	}
	l.makeRoom(len(data))
	l.next++
	l.events = append(l.events, logEvent{ID: l.next, Kind: kind, Data: data, final: final})
	l.bytes += len(data)
	if l.budget != nil {
		l.budget.used.Add(int64(len(data)))
	}
	l.ended = final
	close(l.changed)
	l.changed = make(chan struct{})
	l.bell.ring()
}

// makeRoom evicts the oldest events until one of size bytes fits. The
// event appended is always kept, so every reader learns the end.
func (l *eventLog) makeRoom(size int) {
	for len(l.events) > 0 && (len(l.events)+1 > maxLogEvents || l.bytes+size > maxLogBytes || l.budget.over(size)) {
		l.bytes -= len(l.events[0].Data)
		if l.budget != nil {
			l.budget.used.Add(-int64(len(l.events[0].Data)))
		}
		l.events[0] = logEvent{}
		l.events = l.events[1:]
		l.evicted++
	}
}

// since returns the events after id, how many of them are no longer
// kept, whether the log has ended, and a channel closed at the next
// append.
func (l *eventLog) since(id int64) (events []logEvent, missed int64, ended bool, changed <-chan struct{}) {
	first := l.next - int64(len(l.events)) + 1 // the oldest kept
	if id < first-1 {
		missed = first - 1 - id
		id = first - 1
	}
	if i := id - first + 1; i < int64(len(l.events)) {
		events = slices.Clone(l.events[i:])
	}
	return events, missed, l.ended, l.changed
}

// registry is the batches of the batch API and the held MCP calls, by
// id. Finished batches are kept for retention, and at most max batches
// in all: a new one evicts the oldest finished one, and when every
// batch kept is unfinished a new one is refused.
type registry struct {
	// changes rings whenever a batch is added, removed or logs an event.
	changes   bell
	max       int
	retention time.Duration
	// maxBytes bounds the bytes the batches kept hold (their arguments,
	// approval views and results); logs is the budget their event logs
	// share.
	maxBytes int64
	logs     *logBudget
	// reclaim gives the memory of what the batches let go back to the
	// system once freed (unreclaimed, under mu) passes reclaimAt: the
	// runtime would keep it for minutes, or for good in an idle server.
	reclaim     reclaim.Reclaimer
	unreclaimed int64
	// idle gives the memory back reclaimIdle after the last batch ended,
	// whatever it held: what its calls left behind (the request, the
	// plugins' memory) is garbage the runtime would otherwise keep.
	idle *time.Timer
	// maxStreams and maxBatchStreams bound the event streams open, in all
	// and on one batch; streamWriteTimeout bounds a write to one.
	maxStreams, maxBatchStreams int
	streamWriteTimeout          time.Duration
	// decisionTimeout ends an API batch that waits this long for a
	// decision or for results.
	decisionTimeout time.Duration

	mu      sync.Mutex
	batches map[string]*batch
	order   []*batch // by creation
	bytes   int64    // what the batches in order hold, by their kept
	streams int      // event streams open
}

// logBudget is the bytes every batch's event log may hold together.
type logBudget struct {
	max  int64
	used atomic.Int64
}

// over reports whether size more bytes would pass the budget; a nil
// budget never is.
func (b *logBudget) over(size int) bool {
	return b != nil && b.used.Load()+int64(size) > b.max
}

func newRegistry() *registry {
	return &registry{max: defaultMaxBatches, retention: defaultBatchRetention, maxBytes: defaultMaxKeptBytes,
		logs: &logBudget{max: defaultMaxLogBytes}, maxStreams: defaultMaxStreams, maxBatchStreams: defaultMaxBatchStreams,
		streamWriteTimeout: defaultStreamWriteTimeout, decisionTimeout: defaultBatchRetention, batches: map[string]*batch{}}
}

// reclaimAt is how much the batches let go before the memory is given
// back to the system: a collection costs milliseconds on the live heap,
// worth it for tens of MiB, not for every small batch.
const reclaimAt = 32 << 20

// reclaimIdle is how long after the last batch ended the memory is
// given back: a server busy with batches is not slowed by it.
const reclaimIdle = 2 * time.Second

// released records that a batch ended, letting go of n bytes it held,
// and has the memory given back once enough was, or once no batch ended
// for reclaimIdle.
func (r *registry) released(n int64) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.releasedLocked(n)
	if r.idle == nil {
		r.idle = time.AfterFunc(reclaimIdle, r.reclaim.Request)
	} else {
		r.idle.Reset(reclaimIdle)
	}
}

func (r *registry) releasedLocked(n int64) {
	r.unreclaimed += n
	if r.unreclaimed >= reclaimAt {
		r.unreclaimed = 0
		r.reclaim.Request()
	}
}

// errTooManyBatches refuses a batch when every place is taken by an
// unfinished one, or when the unfinished ones hold so much that it does
// not fit the budget (maxBytes > 0).
type errTooManyBatches struct {
	max                  int
	held, size, maxBytes int64
}

func (e errTooManyBatches) Error() string {
	const what = "decide (POST /v1/batches/ID/decision), or submit the results of (POST /v1/batches/ID/results), or cancel (POST /v1/batches/ID/cancel) some of those listed by GET /v1/batches?state=awaiting_approval and GET /v1/batches?state=pending_results, then retry"
	if e.maxBytes > 0 {
		return fmt.Sprintf("the unfinished batches hold %s of arguments, approval views and results, and this batch's %s would pass the %s this server keeps: %s, or send smaller arguments", mib(e.held), mib(e.size), mib(e.maxBytes), what)
	}
	return fmt.Sprintf("%d batches are unfinished, the most this server keeps: %s", e.max, what)
}

// mib says n bytes in MiB, for a person.
func mib(n int64) string { return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20)) }

// add registers b, evicting expired and, if need be, the oldest
// finished batch.
func (r *registry) add(b *batch) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.sweepLocked(time.Now())
	if _, dup := r.batches[b.id]; dup {
		return fmt.Errorf("batch id %s is already in use", b.id)
	}
	size := b.argBytes + b.views
	for len(r.order) >= r.max || r.bytes+size > r.maxBytes {
		i := slices.IndexFunc(r.order, (*batch).isFinished)
		switch {
		case i >= 0:
			r.removeLocked(i)
		case len(r.order) >= r.max:
			return errTooManyBatches{max: r.max}
		default:
			return errTooManyBatches{held: r.bytes, size: size, maxBytes: r.maxBytes}
		}
	}
	r.batches[b.id] = b
	r.order = append(r.order, b)
	r.bytes += size
	b.kept = size
	b.reg = r
	b.mu.Lock()
	b.log.budget = r.logs
	b.log.bell = &r.changes
	r.logs.used.Add(int64(b.log.bytes))
	b.mu.Unlock()
	r.changes.ring()
	return nil
}

// fits reports, before a batch is planned, whether size bytes would fit
// beside what the unfinished batches hold (finished ones would make
// room): a batch refused anyway is not planned, nor its views built
// with a dry run each.
func (r *registry) fits(size int64) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.sweepLocked(time.Now())
	var held int64
	for _, b := range r.order {
		if !b.isFinished() {
			held += b.kept
		}
	}
	if held+size > r.maxBytes {
		return errTooManyBatches{held: held, size: size, maxBytes: r.maxBytes}
	}
	return nil
}

// errTooManyStreams refuses an event stream past a limit.
type errTooManyStreams struct {
	batch string // the batch at its limit; "" when the server is at its
	max   int
}

func (e errTooManyStreams) Error() string {
	const what = "close one (a reconnect with the header Last-Event-ID resumes where it stopped), then retry"
	if e.batch != "" {
		return fmt.Sprintf("batch %s has %d event streams open, the most one batch may have: %s", e.batch, e.max, what)
	}
	return fmt.Sprintf("%d event streams are open, the most this server serves at once: %s", e.max, what)
}

// acquireStream takes a place for an event stream of b; release gives
// it back, once however often it is called.
func (r *registry) acquireStream(b *batch) (release func(), err error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	switch {
	case b.streams >= r.maxBatchStreams:
		return nil, errTooManyStreams{batch: b.id, max: r.maxBatchStreams}
	case r.streams >= r.maxStreams:
		return nil, errTooManyStreams{max: r.maxStreams}
	}
	b.streams++
	r.streams++
	return sync.OnceFunc(func() {
		r.mu.Lock()
		defer r.mu.Unlock()
		b.streams--
		r.streams--
	}), nil
}

// openStreams counts the event streams open.
func (r *registry) openStreams() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.streams
}

// charge counts n more bytes for b (its results), then evicts the
// oldest finished batches but b while the batches pass their budgets.
func (r *registry) charge(b *batch, n int64) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.batches[b.id] != b {
		return // already forgotten
	}
	b.kept += n
	r.bytes += n
	r.trimLocked(b, 0)
}

// reserve counts n more bytes for b, an unfinished batch (the results a
// client submits), evicting the oldest finished batches to fit; when the
// unfinished ones leave no room it counts nothing and refuses.
func (r *registry) reserve(b *batch, n int64) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.batches[b.id] != b {
		return nil // already forgotten: it holds nothing here
	}
	b.kept += n
	r.bytes += n
	r.trimLocked(b, 0)
	if r.bytes > r.maxBytes {
		b.kept -= n
		r.bytes -= n
		return errTooManyBatches{held: r.bytes, size: n, maxBytes: r.maxBytes}
	}
	return nil
}

// trim evicts the oldest finished batches but keep while the batches
// pass their budgets, or would with an event of need bytes more.
func (r *registry) trim(keep *batch, need int64) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.trimLocked(keep, need)
}

func (r *registry) trimLocked(keep *batch, need int64) {
	for r.bytes > r.maxBytes || r.logs.used.Load()+need > r.logs.max {
		i := slices.IndexFunc(r.order, func(b *batch) bool { return b != keep && b.isFinished() })
		if i < 0 {
			return
		}
		r.removeLocked(i)
	}
}

func (r *registry) get(id string) (*batch, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.sweepLocked(time.Now())
	b, ok := r.batches[id]
	return b, ok
}

// list is the batches kept, oldest first.
func (r *registry) list() []*batch {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.sweepLocked(time.Now())
	return slices.Clone(r.order)
}

func (r *registry) sweepLocked(now time.Time) {
	for _, b := range r.order {
		b.expireUndecided(now, r.decisionTimeout)
	}
	for i := 0; i < len(r.order); {
		if r.order[i].expired(now, r.retention) {
			r.removeLocked(i)
			continue
		}
		i++
	}
	r.trimLocked(nil, 0)
}

// removeLocked forgets the batch at i; what it held no longer counts.
func (r *registry) removeLocked(i int) {
	b := r.order[i]
	r.changes.ring()
	delete(r.batches, b.id)
	r.order = slices.Delete(r.order, i, i+1)
	r.bytes -= b.kept
	r.releasedLocked(b.kept)
	b.mu.Lock()
	if b.log.budget != nil {
		b.log.budget.used.Add(-int64(b.log.bytes))
		b.log.budget = nil
	}
	b.mu.Unlock()
}
