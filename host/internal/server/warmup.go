package server

import (
	"context"
	"errors"
	"maps"
	"slices"
	"time"

	"github.com/toolhost/toolhost/host"
)

// Warm-up states, as GET /v1/health reports them.
const (
	warmupOff     = "off" // not asked for (toolhost serve --warm=false)
	warmupRunning = "running"
	warmupDone    = "done"
)

// warmupDelay is how long the warm-up waits for a client's first
// tools/list before it starts anyway.
const warmupDelay = 250 * time.Millisecond

// warmup is the progress of the server's warm-up.
type warmup struct {
	State  string `json:"state"`
	Tools  int    `json:"tools"` // whose plugin is ready so far: compiled, one instance started
	Failed bool   `json:"failed,omitempty"`
	// Seconds is how long it took, once done.
	Seconds float64 `json:"seconds,omitempty"`
}

// WarmUp readies, in the background, the plugins of every tool the
// server offers (Host.WarmUp), so that no agent's first call of a tool
// pays for compiling it. tools/list and calls are served meanwhile; a
// call for a plugin still compiling waits for that compile. GET
// /v1/health reports the progress, and the log says when it is done.
// The returned channel is closed when the warm-up ends: done, or stopped
// by ctx after the plugin in progress.
func (s *Server) WarmUp(ctx context.Context) <-chan struct{} {
	s.warm.Store(&warmup{State: warmupRunning})
	done := make(chan struct{})
	go func() {
		defer close(done)
		// Instantiating the plugins takes both cores for a moment: start
		// once the first client has its tool list (measured: an agent's
		// spawn to tools/list went from 13 to 28 ms when the two raced),
		// or after warmupDelay when no client lists.
		select {
		case <-s.listed:
		case <-time.After(warmupDelay):
		case <-ctx.Done():
		}
		start := time.Now()
		// One tool at a time, so health shows the progress, the ones
		// agents call first first; a plugin serving several tools is
		// readied once (the rest find it so).
		n := 0
		var errs []error
		for _, name := range host.WarmOrder(s.servedTools()) {
			k, err := s.h.WarmUp(ctx, []string{name})
			if err != nil {
				errs = append(errs, err)
			}
			n += k
			s.warm.Store(&warmup{State: warmupRunning, Tools: n, Failed: len(errs) > 0})
			if ctx.Err() != nil {
				break
			}
		}
		err := errors.Join(errs...)
		took := time.Since(start)
		s.warm.Store(&warmup{State: warmupDone, Tools: n, Failed: err != nil, Seconds: took.Seconds()})
		switch {
		case ctx.Err() != nil:
			s.log.Info("plugin warm-up stopped", "tools", n, "elapsed", took)
		case err != nil:
			s.log.Warn("plugins warmed up, some failed: their first calls try again", "tools", n, "elapsed", took, "err", err)
		default:
			s.log.Info("plugins warmed up: first calls will not wait for a compile", "tools", n, "elapsed", took)
		}
	}()
	return done
}

// warmupState is the warm-up's progress for GET /v1/health.
func (s *Server) warmupState() warmup {
	if w := s.warm.Load(); w != nil {
		return *w
	}
	return warmup{State: warmupOff}
}

// servedTools names every tool an endpoint offers, sorted: newMCP
// records each one it adds in structured.
func (s *Server) servedTools() []string {
	return slices.Sorted(maps.Keys(s.structured))
}
