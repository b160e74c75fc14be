package engine

import (
	"context"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"
)

// eventPatience bounds how long the batch waits for room for an event
// that belongs to no running call (batch states, Started, Completed) and,
// at the end of a batch, for the consumer to take what is queued. A chunk
// waits for room until its call's deadline instead: a slow consumer slows
// the command's output and loses nothing, but never holds the call past
// its end.
const eventPatience = time.Second

// abandonGrace is how long the end of a batch waits for a sink that
// ignores its context to return, before leaving it behind.
const abandonGrace = 100 * time.Millisecond

// eventQueue bounds the events waiting for the sink; chunks are at most
// 32 KiB each, so the queue holds at most about a megabyte.
const eventQueue = 32

// emitter delivers one batch's events to its sink, in order, from a
// goroutine of its own: the batch and its calls only ever wait for room in
// a bounded queue, and only as long as the event's context or the
// patience allows, so no consumer — slow, blocked, or deaf to its context
// — can keep a call past its deadline or the batch past its end. Once an
// event has been dropped, the consumer counts as stalled and later events
// are dropped at once rather than waited for, until one fits again.
// Dropped events are counted; Completed and Done carry the counts, and
// Done has a place of its own in the queue, so a consumer that catches up
// before the batch ends always learns what it missed.
type emitter struct {
	sink    EventSink
	log     *slog.Logger
	q       chan queued
	final   chan queued   // Done, delivered after everything in q
	done    chan struct{} // closed when the delivery goroutine returns
	ctx     context.Context
	cancel  context.CancelFunc
	stalled atomic.Bool
	dropped atomic.Int64

	mu      sync.RWMutex // held for reading while sending; closing takes it
	closed  bool
	closing chan struct{}
}

// queued is an event with the drop counter of the call it belongs to
// (nil for batch events).
type queued struct {
	ev   Event
	call *atomic.Int64
}

// newEmitter starts delivering to sink; a nil sink makes a nil emitter,
// whose methods do nothing. Delivery keeps ctx's values but not its
// cancellation: a cancelled batch still tells a live consumer how it
// ended, within the patience.
func newEmitter(ctx context.Context, sink EventSink, log *slog.Logger) *emitter {
	if sink == nil {
		return nil
	}
	em := &emitter{
		sink: sink, log: log,
		q: make(chan queued, eventQueue), final: make(chan queued, 1),
		done: make(chan struct{}), closing: make(chan struct{}),
	}
	em.ctx, em.cancel = context.WithCancel(context.WithoutCancel(ctx))
	go em.deliver()
	return em
}

func (em *emitter) deliver() {
	defer close(em.done)
	for q := range em.q {
		em.deliver1(q)
	}
	for q := range em.final {
		em.deliver1(q)
	}
}

func (em *emitter) deliver1(q queued) {
	// Every earlier event has been offered by now, so the counts are
	// complete up to this one.
	switch q.ev.Kind {
	case EventCompleted:
		q.ev.Dropped = q.call.Load()
	case EventDone:
		q.ev.Dropped = em.dropped.Load()
	}
	if err := em.sink.Send(em.ctx, q.ev); err != nil {
		em.drop(q.call)
	}
}

// batchEvent queues a batch state change.
func (em *emitter) batchEvent(ctx context.Context, ev Event) {
	em.send(ctx, queued{ev: ev}, eventPatience)
}

// doneEvent queues Done in its own place: it never waits and is never
// dropped here.
func (em *emitter) doneEvent(ev Event) {
	if em == nil {
		return
	}
	select {
	case em.final <- queued{ev: ev}:
	default: // a second Done: the first already ends the stream
	}
}

// callEvent queues Started or Completed for the call counted by dropped.
func (em *emitter) callEvent(ctx context.Context, ev Event, dropped *atomic.Int64) {
	em.send(ctx, queued{ev: ev, call: dropped}, eventPatience)
}

// chunk queues streamed output, waiting for room until the call's ctx
// ends. It reports whether the chunk was queued.
func (em *emitter) chunk(ctx context.Context, ev Event, dropped *atomic.Int64) bool {
	return em.send(ctx, queued{ev: ev, call: dropped}, 0)
}

// send queues q, waiting for room until ctx ends or, when patience is
// positive, for at most patience. It reports whether q was queued.
func (em *emitter) send(ctx context.Context, q queued, patience time.Duration) bool {
	if em == nil {
		return true
	}
	em.mu.RLock()
	defer em.mu.RUnlock()
	if em.closed {
		em.drop(q.call)
		return false
	}
	select {
	case em.q <- q:
		em.stalled.Store(false)
		return true
	default:
	}
	if em.stalled.Load() || ctx.Err() != nil {
		em.drop(q.call)
		return false
	}
	var timeout <-chan time.Time
	if patience > 0 {
		t := time.NewTimer(patience)
		defer t.Stop()
		timeout = t.C
	}
	select {
	case em.q <- q:
		return true
	case <-ctx.Done():
	case <-timeout:
	case <-em.closing:
	}
	em.stalled.Store(true)
	em.drop(q.call)
	return false
}

func (em *emitter) drop(call *atomic.Int64) {
	em.dropped.Add(1)
	if call != nil {
		call.Add(1)
	}
}

// close ends the stream. While the batch's ctx lives it waits up to
// eventPatience for the consumer to take what is queued (Done last); then
// delivery is cancelled, what is left is counted as dropped, and a sink
// that does not return is left behind.
func (em *emitter) close(ctx context.Context, batch string) {
	if em == nil {
		return
	}
	close(em.closing)
	em.mu.Lock()
	em.closed = true
	close(em.q)
	close(em.final)
	em.mu.Unlock()
	if ctx.Err() == nil {
		t := time.NewTimer(eventPatience)
		select {
		case <-em.done:
		case <-t.C:
		}
		t.Stop()
	}
	em.cancel()
	t := time.NewTimer(abandonGrace)
	defer t.Stop()
	select {
	case <-em.done:
	case <-t.C:
		em.log.Warn("the event consumer did not return after the batch ended; it was left behind", "batch", batch)
	}
	if n := em.dropped.Load(); n > 0 {
		em.log.Warn("events were not delivered: the consumer did not take them in time", "batch", batch, "dropped", n)
	}
}
