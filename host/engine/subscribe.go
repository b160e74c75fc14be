package engine

import "sync"

// Subscription is a bounded queue of a batch's events for a consumer on
// another goroutine (a console, an SSE stream). Publish blocks while the
// queue is full: a slow consumer slows the batch and loses nothing
// (FR-OUT-01). Pass Publish as RunOptions.Events, range over Events, and
// call Finish when the batch is done.
type Subscription struct {
	c        chan Event
	gone     chan struct{} // closed by Cancel
	cancel   sync.Once
	finish   sync.Once
	finished chan struct{}
}

// Subscribe returns a subscription holding up to size undelivered events
// (at least 1).
func Subscribe(size int) *Subscription {
	return &Subscription{c: make(chan Event, max(size, 1)), gone: make(chan struct{}), finished: make(chan struct{})}
}

// Events is the stream; it is closed after Finish once drained.
func (s *Subscription) Events() <-chan Event { return s.c }

// Publish queues ev, waiting for room. After Cancel it returns at once:
// the consumer has said it wants nothing more.
func (s *Subscription) Publish(ev Event) {
	select {
	case <-s.finished:
		return
	default:
	}
	select {
	case s.c <- ev:
	case <-s.gone:
	}
}

// Finish ends the stream: no more events will be published. Call it from
// the publishing side, after Run returns.
func (s *Subscription) Finish() {
	s.finish.Do(func() {
		close(s.finished)
		close(s.c)
	})
}

// Cancel is the consumer leaving: Publish stops waiting for it.
func (s *Subscription) Cancel() { s.cancel.Do(func() { close(s.gone) }) }
