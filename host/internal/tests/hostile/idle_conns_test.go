package hostile_test

// Attack (any local process, no token): open as many connections as
// toolhost serve allows, send each one request a client without the
// token may send (GET /v1/health), or one it is refused (401), or
// nothing, and hold them; open a new one a second after the server
// closes one. A client holding the token must still be answered at once: a
// connection that has not shown the token is closed once it is
// answered and counts against a budget of its own, the oldest going
// first when it is full.

import (
	"bufio"
	"context"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// idleFlood holds n connections to addr, each sending first (nothing
// when empty) and then idling, and reopens each one the server closes a
// second later, until ctx ends. It returns once n connections were opened; wait on
// what it returns after ending ctx.
func idleFlood(t *testing.T, ctx context.Context, addr, first string, n int) *sync.WaitGroup {
	t.Helper()
	var opened sync.WaitGroup
	opened.Add(n)
	var done sync.WaitGroup
	for range n {
		done.Go(func() {
			once := sync.OnceFunc(opened.Done)
			defer once()
			for ctx.Err() == nil {
				c, err := (&net.Dialer{}).DialContext(ctx, "tcp", addr)
				if err != nil {
					if ctx.Err() == nil {
						time.Sleep(10 * time.Millisecond)
					}
					continue
				}
				stop := context.AfterFunc(ctx, func() { c.Close() })
				if first != "" {
					c.Write([]byte(first))
				}
				once()
				// Read whatever comes (the answer) and wait, idle, until the
				// server closes the connection or the test ends.
				io.Copy(io.Discard, bufio.NewReader(c))
				stop()
				c.Close()
				select {
				case <-ctx.Done():
				case <-time.After(time.Second):
				}
			}
		})
	}
	opened.Wait()
	return &done
}

// A thousand and twenty-four connections without the token, each idle
// after one request (or none), reopened whenever closed: an
// authenticated request is answered within a few seconds, well before
// the header timeout (10 s) or the idle timeout (2 minutes) would free
// their places.
func TestIdleConnectionsDoNotLockOutTheToken(t *testing.T) {
	s := pinServe(t, realPlugins(t))
	addr := strings.TrimPrefix(s.base, "http://")
	for _, tc := range []struct{ name, first string }{
		{"health then idle", "GET /v1/health HTTP/1.1\r\nHost: " + addr + "\r\n\r\n"},
		{"refused then idle", "GET /v1/batches HTTP/1.1\r\nHost: " + addr + "\r\n\r\n"},
		{"silent", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx, cancel := context.WithCancel(context.Background())
			flood := idleFlood(t, ctx, addr, tc.first, 1024)
			defer func() { cancel(); flood.Wait() }()
			time.Sleep(500 * time.Millisecond) // the answers are read, the connections idle

			hc := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{DisableKeepAlives: true}}
			var answered atomic.Int32
			start := time.Now()
			for i := range 3 {
				req, _ := http.NewRequest("GET", s.base+"/v1/tools", nil)
				req.Header.Set("Authorization", "Bearer "+s.token)
				resp, err := hc.Do(req)
				if err != nil {
					t.Errorf("authenticated request %d with 1024 idle connections open: %v after %v", i+1, err, time.Since(start))
					continue
				}
				io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				if resp.StatusCode != http.StatusOK {
					t.Errorf("authenticated request %d: %d", i+1, resp.StatusCode)
					continue
				}
				answered.Add(1)
			}
			t.Logf("%d of 3 authenticated requests answered in %v with 1024 connections (%s) held open", answered.Load(), time.Since(start), tc.name)

			// Health is still answered to a client without the token.
			resp, err := hc.Get(s.base + "/v1/health")
			if err != nil {
				t.Fatalf("GET /v1/health during the flood: %v", err)
			}
			resp.Body.Close()
			if resp.StatusCode != http.StatusOK {
				t.Errorf("GET /v1/health during the flood: %d", resp.StatusCode)
			}
		})
	}
}
