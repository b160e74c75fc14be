package server

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolhost/toolhost/host/internal/engine"
)

// DefaultProgressInterval is the longest a call with a progress token
// goes without a notifications/progress: clients reset their request
// timers on progress (the TypeScript SDK's callTool gives up after 60 s
// without), and a person deciding on an approval takes longer than that.
const DefaultProgressInterval = 10 * time.Second

// progressGap is the quiet time left between the last progress
// notification and the result. The TypeScript SDK client dispatches a
// notification in a microtask but a result at once, so when both arrive
// in one read it drops the notification (typescript-sdk #2580). A gap
// makes that rare, never impossible: a client starved of CPU for longer
// still reads both together. The full output is always in the result.
const progressGap = 10 * time.Millisecond

// progress streams one call's output and keepalives to its client as
// notifications/progress. Each notification carries a
// progress greater than the last, as the protocol requires; output
// chunks (sanitized by the engine) are their messages, and when nothing
// was sent for interval a keepalive says what the call is doing.
//
// Notifications are sent under mu, so their order on the wire is the
// order of their progress values, and none is sent after close.
type progress struct {
	// send is the session's NotifyProgress; ctx is the request's, which
	// over HTTP routes each notification to the request's stream.
	send     func(context.Context, *mcp.ProgressNotificationParams) error
	ctx      context.Context
	token    any
	call     string
	interval time.Duration

	mu     sync.Mutex
	n      float64
	last   time.Time // of the last notification, or the call's start
	start  time.Time
	state  string // what a keepalive says the call is doing
	closed bool

	stop chan struct{}
	done chan struct{}
}

// newProgress starts reporting a call's progress under token; with no
// token it returns nil, whose methods do nothing, so a client that did
// not ask gets no notifications.
func newProgress(ctx context.Context, ss *mcp.ServerSession, token any, call string, interval time.Duration) *progress {
	if token == nil || ss == nil {
		return nil
	}
	return startProgress(ctx, ss.NotifyProgress, token, call, interval)
}

// startProgress starts reporting through send.
func startProgress(ctx context.Context, send func(context.Context, *mcp.ProgressNotificationParams) error, token any, call string, interval time.Duration) *progress {
	if interval <= 0 {
		interval = DefaultProgressInterval
	}
	now := time.Now()
	p := &progress{send: send, ctx: ctx, token: token, call: call, interval: interval,
		last: now, start: now, state: "planning", stop: make(chan struct{}), done: make(chan struct{})}
	go p.keepAlive()
	return p
}

// Send takes the engine's events: output chunks become notifications,
// batch states change what keepalives say. It never fails the engine's
// delivery: a client that stopped reading loses notifications, not the
// call.
func (p *progress) Send(_ context.Context, ev engine.Event) error {
	switch ev.Kind {
	case engine.EventStdoutChunk, engine.EventStderrChunk:
		if ev.Chunk != "" {
			p.notify(ev.Chunk)
		}
	case engine.EventAwaitingApproval:
		p.setState("waiting for approval")
	case engine.EventExecuting:
		p.setState("running")
	}
	return nil
}

// sink is p as the engine's event sink, nil when p is.
func (p *progress) sink() engine.EventSink {
	if p == nil {
		return nil
	}
	return p
}

func (p *progress) setState(s string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.state = s
}

// notify sends one notification with message, unless p is closed.
func (p *progress) notify(message string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.notifyLocked(message)
}

func (p *progress) notifyLocked(message string) {
	if p.closed {
		return
	}
	p.n++
	err := p.send(p.ctx, &mcp.ProgressNotificationParams{ProgressToken: p.token, Progress: p.n, Message: message})
	p.last = time.Now()
	if err != nil {
		// The request was cancelled or the session is gone: the result
		// will not reach the client either, so no more notifications.
		p.closed = true
	}
}

// keepAlive sends a notification whenever interval passes without one,
// until close.
func (p *progress) keepAlive() {
	defer close(p.done)
	t := time.NewTimer(p.interval)
	defer t.Stop()
	for {
		select {
		case <-p.stop:
			return
		case <-t.C:
		}
		p.mu.Lock()
		wait := p.interval - time.Since(p.last)
		if wait <= 0 {
			p.notifyLocked(fmt.Sprintf("call %s: %s (%s so far)", p.call, p.state, time.Since(p.start).Round(time.Second)))
			wait = p.interval
		}
		p.mu.Unlock()
		t.Reset(wait)
	}
}

// close stops the notifications and returns once the last one is
// progressGap old, so the result that follows cannot overtake it.
func (p *progress) close() {
	if p == nil {
		return
	}
	close(p.stop)
	<-p.done
	p.mu.Lock()
	p.closed = true
	since := time.Since(p.last)
	sent := p.n > 0
	p.mu.Unlock()
	if sent && since < progressGap {
		time.Sleep(progressGap - since)
	}
}
