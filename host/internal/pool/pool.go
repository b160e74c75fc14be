// Package pool keeps a plugin's idle instances between calls, for both
// kinds of plugin the host runs (toolhost/v1 modules in runtime, Extism
// modules in extism). It only holds values: making, checking and closing
// an instance stay with the package that knows what one is.
package pool

import (
	"errors"
	"sync"
)

// ErrClosed is Get's error once the pool is closed.
var ErrClosed = errors.New("pool closed")

// Pool is a bounded stack of idle values: the one put last is taken
// first, so the warmest instance serves the next call. It is safe for
// concurrent use; the zero Pool holds nothing.
type Pool[T any] struct {
	max int

	mu     sync.Mutex
	idle   []T
	closed bool
}

// New returns a pool that keeps at most max values.
func New[T any](max int) *Pool[T] { return &Pool[T]{max: max} }

// Get takes an idle value; ok is false when there is none. After Close it
// returns ErrClosed.
func (p *Pool[T]) Get() (v T, ok bool, err error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return v, false, ErrClosed
	}
	n := len(p.idle)
	if n == 0 {
		return v, false, nil
	}
	v = p.idle[n-1]
	var zero T
	p.idle[n-1] = zero // the pool must not keep a taken value reachable
	p.idle = p.idle[:n-1]
	return v, true, nil
}

// Put keeps v for a later Get, and reports whether it did: not when the
// pool is full or closed, and then the caller closes v.
func (p *Pool[T]) Put(v T) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed || len(p.idle) >= p.max {
		return false
	}
	p.idle = append(p.idle, v)
	return true
}

// Room is how many more values Put would keep now.
func (p *Pool[T]) Room() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return 0
	}
	return p.max - len(p.idle)
}

// Len is how many idle values the pool holds.
func (p *Pool[T]) Len() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.idle)
}

// Close empties the pool for good and returns what it held, for the
// caller to close. first is false when the pool was closed before: the
// caller's own Close then has nothing left to do.
func (p *Pool[T]) Close() (idle []T, first bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	first = !p.closed
	p.closed = true
	idle = p.idle
	p.idle = nil
	return idle, first
}
