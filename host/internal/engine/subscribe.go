package engine

import (
	"context"
	"errors"
	"sync"
	"time"
)

// Subscription is a bounded queue of a batch's events for a consumer on
// another goroutine (a console, an SSE stream). It is an EventSink: pass it
// as RunOptions.Events, range over Events, and call Finish when the batch
// is done. Publish waits while the queue is full, but only until its ctx
// ends: a slow consumer slows the batch and loses nothing, a stuck one
// loses events (the engine counts them in Event.Dropped) and holds no call
// past its deadline (FR-OUT-01, FR-EXE-03).
type Subscription struct {
	c         chan Event
	gone      chan struct{} // closed by Cancel
	cancel    sync.Once
	finishing chan struct{} // closed first by Finish, to release Publish
	finish    sync.Once

	mu     sync.RWMutex // Publish holds it for reading; Finish closes c under it
	closed bool
}

// Errors Publish returns for events it did not queue.
var (
	ErrUnsubscribed = errors.New("engine: the subscriber cancelled the subscription")
	ErrFinished     = errors.New("engine: the subscription is finished")
)

// Subscribe returns a subscription holding up to size undelivered events
// (at least 1).
func Subscribe(size int) *Subscription {
	return &Subscription{
		c: make(chan Event, max(size, 1)), gone: make(chan struct{}), finishing: make(chan struct{}),
	}
}

// Events is the stream; it is closed after Finish once drained.
func (s *Subscription) Events() <-chan Event { return s.c }

// Publish queues ev, waiting for room until ctx ends. An event that fits
// is queued even when ctx has ended, so a consumer that keeps up still
// hears how a call that timed out ended. After Cancel or Finish it returns
// at once with an error.
func (s *Subscription) Publish(ctx context.Context, ev Event) error {
	if s.offer(ev) {
		return nil
	}
	return s.wait(ctx, ev, nil)
}

// offer queues ev if there is room now.
func (s *Subscription) offer(ev Event) bool {
	s.mu.RLock()
	defer s.mu.RUnlock()
	if s.closed || isDone(s.gone) {
		return false
	}
	select {
	case s.c <- ev:
		return true
	default:
		return false
	}
}

// wait queues ev, waiting for room until ctx ends or timeout fires (nil:
// no timeout).
func (s *Subscription) wait(ctx context.Context, ev Event, timeout <-chan time.Time) error {
	s.mu.RLock()
	defer s.mu.RUnlock()
	if s.closed {
		return ErrFinished
	}
	select {
	case s.c <- ev:
		return nil
	case <-s.gone:
		return ErrUnsubscribed
	case <-s.finishing:
		return ErrFinished
	case <-ctx.Done():
		return ctx.Err()
	case <-timeout:
		return errTimedOut
	}
}

// errTimedOut is a wait that outlasted the engine's patience.
var errTimedOut = errors.New("engine: the subscriber did not take the event in time")

func isDone(c <-chan struct{}) bool {
	select {
	case <-c:
		return true
	default:
		return false
	}
}

// Send is Publish, so that a Subscription is an EventSink.
func (s *Subscription) Send(ctx context.Context, ev Event) error { return s.Publish(ctx, ev) }

// Finish ends the stream: no more events will be published. Call it from
// the publishing side, after Run returns; a Publish still waiting returns.
func (s *Subscription) Finish() {
	s.finish.Do(func() {
		close(s.finishing)
		s.mu.Lock()
		defer s.mu.Unlock()
		s.closed = true
		close(s.c)
	})
}

// Cancel is the consumer leaving: Publish stops waiting for it.
func (s *Subscription) Cancel() { s.cancel.Do(func() { close(s.gone) }) }
