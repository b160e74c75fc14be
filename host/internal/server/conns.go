package server

import (
	"container/list"
	"context"
	"net"
	"net/http"
	"sync"
)

// connLimiter admits the server's connections in two budgets, so that
// connections without the token can never keep out a client holding
// it. A connection is anonymous until a request on it carries the
// token: anonymous ones (new, silent, or asking only for health) are
// bounded by maxAnon, and when that budget is full a new connection
// closes the oldest of them not in the middle of a request rather than
// waiting for it, so a flood of them churns among themselves while a
// client with the token, who sends its request at once, is served. An answer to a request without
// the token closes its connection (guard), so none of them idles.
// Connections that showed the token are bounded by maxAuthed; past it
// Accept waits for one to close, as only token holders can fill it.
// Together they bound the descriptors the server holds.
type connLimiter struct {
	net.Listener
	maxAuthed, maxAnon int

	mu     sync.Mutex
	authed int        // open connections that showed the token
	anon   *list.List // open anonymous connections, oldest first
	room   chan struct{}
	closed chan struct{}
	once   sync.Once
}

func limitConnections(ln net.Listener, maxAuthed, maxAnon int) *connLimiter {
	return &connLimiter{Listener: ln, maxAuthed: maxAuthed, maxAnon: max(maxAnon, 1), anon: list.New(),
		room: make(chan struct{}, 1), closed: make(chan struct{})}
}

func (l *connLimiter) Accept() (net.Conn, error) {
	for {
		l.mu.Lock()
		full := l.authed >= l.maxAuthed
		l.mu.Unlock()
		if !full {
			break
		}
		select {
		case <-l.room:
		case <-l.closed:
			return nil, net.ErrClosed
		}
	}
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	tc := &trackedConn{Conn: c, l: l}
	l.mu.Lock()
	tc.elem = l.anon.PushBack(tc)
	var evict *trackedConn
	if l.anon.Len() > l.maxAnon {
		evict = l.anon.Front().Value.(*trackedConn)
		for e := l.anon.Front(); e != tc.elem; e = e.Next() {
			if c := e.Value.(*trackedConn); !c.active {
				evict = c
				break
			}
		}
	}
	l.mu.Unlock()
	if evict != nil {
		evict.Close()
	}
	return tc, nil
}

// Close also ends an Accept waiting for room, so shutdown never waits
// on it.
func (l *connLimiter) Close() error {
	l.once.Do(func() { close(l.closed) })
	return l.Listener.Close()
}

// authenticate moves c from the anonymous budget to the token holders'.
func (l *connLimiter) authenticate(c *trackedConn) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if c.elem == nil || c.gone {
		return
	}
	l.anon.Remove(c.elem)
	c.elem = nil
	l.authed++
}

// connState records whether a connection is in the middle of a request
// (http.Server.ConnState).
func connState(c net.Conn, st http.ConnState) {
	if tc, ok := c.(*trackedConn); ok {
		tc.l.mu.Lock()
		tc.active = st == http.StateActive
		tc.l.mu.Unlock()
	}
}

// release forgets a closed connection.
func (l *connLimiter) release(c *trackedConn) {
	l.mu.Lock()
	defer l.mu.Unlock()
	c.gone = true
	if c.elem != nil {
		l.anon.Remove(c.elem)
		c.elem = nil
		return
	}
	l.authed--
	select {
	case l.room <- struct{}{}:
	default:
	}
}

// trackedConn is a connection the limiter counts; elem is its place
// among the anonymous ones, nil once it showed the token.
type trackedConn struct {
	net.Conn
	l      *connLimiter
	elem   *list.Element // under l.mu
	gone   bool          // closed (under l.mu)
	active bool          // a request is being read or answered (under l.mu)
	once   sync.Once
}

func (c *trackedConn) Close() error {
	err := c.Conn.Close()
	c.once.Do(func() { c.l.release(c) })
	return err
}

// connKey carries a request's connection in its context (ConnContext).
type connKey struct{}

func withConn(ctx context.Context, c net.Conn) context.Context {
	if tc, ok := c.(*trackedConn); ok {
		return context.WithValue(ctx, connKey{}, tc)
	}
	return ctx
}

// authenticated records that the connection of a request carrying the
// token showed it.
func authenticated(ctx context.Context) {
	if tc, ok := ctx.Value(connKey{}).(*trackedConn); ok {
		tc.l.authenticate(tc)
	}
}
