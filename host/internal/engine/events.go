package engine

import (
	"context"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"
)

// eventPatience bounds how long the batch waits for a consumer to take an
// event that belongs to no running call (batch states, Started,
// Completed, Done). A chunk waits until its call's deadline instead: a
// slow consumer slows the command's output and loses nothing, but never
// holds the call past its end.
const eventPatience = time.Second

// abandonGrace is how long the end of a batch waits for a sink that
// ignores its context to return, before leaving it behind.
const abandonGrace = 100 * time.Millisecond

// eventQueue bounds the events waiting for a sink delivered from a
// goroutine; chunks are at most 32 KiB each, so the queue holds at most
// about a megabyte.
const eventQueue = 32

// emitter delivers one batch's events to its sink, in order. The batch and
// its calls only ever wait for the consumer as long as the event's
// context or the patience allows, so no consumer — slow, blocked, or deaf
// to its context — can keep a call past its deadline or the batch past
// its end. Once an event has been dropped, the consumer counts as stalled
// and later events are dropped at once rather than waited for, until one
// fits again. Dropped events are counted; Completed and Done carry the
// counts, and Done is never dropped by a full queue, so a consumer that
// catches up before the batch ends learns what it missed.
//
// A Subscription is delivered to inline: it is the engine's own, never
// blocks past ctx and runs no caller code, and its channel already orders
// the events and hands them to another goroutine. Any other sink is
// caller code that may ignore ctx, so it is called from a goroutine of
// the emitter's own, fed by a bounded queue; that costs a hand-off per
// event.
type emitter struct {
	sink    EventSink
	sub     *Subscription // set for inline delivery
	log     *slog.Logger
	stalled atomic.Bool
	dropped atomic.Int64

	// Delivery from a goroutine (sub == nil).
	broken bool // the sink panicked; touched by the delivery goroutine only
	q      chan queued
	final  chan queued   // Done, delivered after everything in q
	done   chan struct{} // closed when the delivery goroutine returns
	ctx    context.Context
	cancel context.CancelFunc

	mu      sync.RWMutex // held for reading while queueing; closing takes it
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
// whose methods do nothing. Delivery from a goroutine keeps ctx's values
// but not its cancellation: a cancelled batch still tells a live consumer
// how it ended, within the patience.
func newEmitter(ctx context.Context, sink EventSink, log *slog.Logger) *emitter {
	if sink == nil {
		return nil
	}
	em := &emitter{sink: sink, log: log}
	if sub, ok := sink.(*Subscription); ok {
		em.sub = sub
		return em
	}
	em.q, em.final = make(chan queued, eventQueue), make(chan queued, 1)
	em.done, em.closing = make(chan struct{}), make(chan struct{})
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
	em.count(&q)
	if em.broken || em.sendRecovered(q.ev) != nil {
		em.drop(q.call)
	}
}

// sendRecovered calls the sink, turning a panic into an error: the sink
// is caller code, and a panic on the emitter's goroutine would take the
// whole process (every conversation of a server) down. A sink that
// panicked is not called again for this batch.
func (em *emitter) sendRecovered(ev Event) (err error) {
	defer func() {
		if r := recover(); r != nil {
			em.broken = true
			em.log.Error("the event consumer panicked; it gets no more events of this batch", "batch", ev.BatchID, "panic", r)
			err = fmt.Errorf("event consumer panicked: %v", r)
		}
	}()
	return em.sink.Send(em.ctx, ev)
}

// count fills in Completed's and Done's counts. Every earlier event has
// been offered by the time either is delivered, so the counts are
// complete up to it.
func (em *emitter) count(q *queued) {
	switch q.ev.Kind {
	case EventCompleted:
		q.ev.Dropped = q.call.Load()
	case EventDone:
		q.ev.Dropped = em.dropped.Load()
	}
}

// batchEvent delivers a batch state change.
func (em *emitter) batchEvent(ctx context.Context, ev Event) {
	em.send(ctx, queued{ev: ev}, eventPatience)
}

// callEvent delivers Started or Completed of the call counted by dropped,
// or the output its streams held back until it ended.
func (em *emitter) callEvent(ctx context.Context, ev Event, dropped *atomic.Int64) {
	em.send(ctx, queued{ev: ev, call: dropped}, eventPatience)
}

// chunk delivers streamed output, waiting for the consumer until the
// call's ctx ends. It reports whether the chunk was taken.
func (em *emitter) chunk(ctx context.Context, ev Event, dropped *atomic.Int64) bool {
	return em.send(ctx, queued{ev: ev, call: dropped}, 0)
}

// doneEvent delivers Done, the last event, which says what the consumer
// missed: it waits for the consumer up to the patience even when it has
// stalled. Delivered from a goroutine, it has a place of its own in the
// queue, and close does the waiting.
func (em *emitter) doneEvent(ctx context.Context, ev Event) {
	if em == nil {
		return
	}
	if em.sub != nil {
		em.stalled.Store(false)
		em.send(ctx, queued{ev: ev}, eventPatience)
		return
	}
	select {
	case em.final <- queued{ev: ev}:
	default: // a second Done: the first already ends the stream
	}
}

// send hands q on, waiting until ctx ends or, when patience is positive,
// for at most patience. It reports whether q was taken.
func (em *emitter) send(ctx context.Context, q queued, patience time.Duration) bool {
	if em == nil {
		return true
	}
	if em.sub != nil {
		em.count(&q)
		return em.waitFor(ctx, q, patience, em.sub.offer, func(ctx context.Context, timeout <-chan time.Time) bool {
			return em.sub.wait(ctx, q.ev, timeout) == nil
		})
	}
	em.mu.RLock()
	defer em.mu.RUnlock()
	if em.closed {
		em.drop(q.call)
		return false
	}
	return em.waitFor(ctx, q, patience,
		func(Event) bool {
			select {
			case em.q <- q:
				return true
			default:
				return false
			}
		},
		func(ctx context.Context, timeout <-chan time.Time) bool {
			select {
			case em.q <- q:
				return true
			case <-ctx.Done():
			case <-timeout:
			case <-em.closing:
			}
			return false
		})
}

// waitFor is the policy both deliveries share: take the event at once if
// the consumer has room; otherwise, unless it has stalled or ctx has
// ended, wait within the bounds; a miss marks it stalled and is counted.
func (em *emitter) waitFor(ctx context.Context, q queued, patience time.Duration,
	offer func(Event) bool, wait func(context.Context, <-chan time.Time) bool) bool {
	if offer(q.ev) {
		em.stalled.Store(false)
		return true
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
	if wait(ctx, timeout) {
		return true
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

// close ends the stream. Delivered from a goroutine, it waits up to
// eventPatience, while the batch's ctx lives, for the consumer to take
// what is queued (Done last); then delivery is cancelled, what is left is
// counted as dropped, and a sink that does not return is left behind.
func (em *emitter) close(ctx context.Context, batch string) {
	if em == nil {
		return
	}
	if em.sub == nil {
		em.drain(ctx, batch)
	}
	if n := em.dropped.Load(); n > 0 {
		em.log.Warn("events were not delivered: the consumer did not take them in time", "batch", batch, "dropped", n)
	}
}

func (em *emitter) drain(ctx context.Context, batch string) {
	close(em.closing)
	em.mu.Lock()
	em.closed = true
	close(em.q)
	close(em.final)
	em.mu.Unlock()
	// A live consumer learns how the batch ended (Done last): it gets
	// the patience, or, after a cancel, the short grace, before delivery
	// is cancelled.
	wait := eventPatience
	if ctx.Err() != nil {
		wait = abandonGrace
	}
	t := time.NewTimer(wait)
	select {
	case <-em.done:
	case <-t.C:
	}
	t.Stop()
	em.cancel()
	t = time.NewTimer(abandonGrace)
	defer t.Stop()
	select {
	case <-em.done:
	case <-t.C:
		em.log.Warn("the event consumer did not return after the batch ended; it was left behind", "batch", batch)
	}
}
