package server

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

const testToken = "test-token-0123456789abcdef"

func tcpAddr(t *testing.T, s string) net.Addr {
	t.Helper()
	a, err := net.ResolveTCPAddr("tcp", s)
	if err != nil {
		t.Fatal(err)
	}
	return a
}

// TestGuard: the checks in front of every path: the
// Host must name this server, a present Origin must be loopback, every
// path but GET /v1/health needs this server's bearer token, and a body
// over the cap is refused before it is read.
func TestGuard(t *testing.T) {
	reached := func(w http.ResponseWriter, r *http.Request) {
		if _, err := io.ReadAll(r.Body); err != nil {
			http.Error(w, err.Error(), http.StatusRequestEntityTooLarge)
			return
		}
		w.WriteHeader(http.StatusTeapot)
	}
	for _, tc := range []struct {
		name    string
		listen  string
		method  string
		path    string
		host    string
		header  map[string]string
		length  int // body bytes; -1 for a body of unknown length
		status  int
		kind    string
		message string
	}{
		{name: "all good", status: http.StatusTeapot},
		{name: "localhost", host: "localhost:8765", status: http.StatusTeapot},
		{name: "LOCALHOST", host: "LOCALHOST:8765", status: http.StatusTeapot},
		{name: "ipv6 loopback", host: "[::1]:8765", status: http.StatusTeapot},
		{name: "rebound name", host: "attacker.example:8765", status: 403, kind: "ForbiddenHost", message: `Host "attacker.example:8765" is refused`},
		{name: "localhost subdomain", host: "localhost.attacker.example:8765", status: 403, kind: "ForbiddenHost"},
		{name: "no port", host: "127.0.0.1", status: 403, kind: "ForbiddenHost"},
		{name: "other port", host: "127.0.0.1:80", status: 403, kind: "ForbiddenHost"},
		{name: "LAN address on loopback server", host: "192.168.1.5:8765", status: 403, kind: "ForbiddenHost"},
		{name: "foreign origin", header: map[string]string{"Origin": "https://attacker.example"}, status: 403, kind: "ForbiddenOrigin", message: "attacker.example"},
		{name: "origin posing as localhost", header: map[string]string{"Origin": "http://localhost.attacker.example"}, status: 403, kind: "ForbiddenOrigin"},
		{name: "null origin", header: map[string]string{"Origin": "null"}, status: 403, kind: "ForbiddenOrigin"},
		{name: "file origin", header: map[string]string{"Origin": "file://"}, status: 403, kind: "ForbiddenOrigin"},
		{name: "loopback origin", header: map[string]string{"Origin": "http://localhost:6274"}, status: http.StatusTeapot},
		{name: "ipv6 loopback origin", header: map[string]string{"Origin": "http://[::1]:3000"}, status: http.StatusTeapot},
		{name: "no token", header: map[string]string{"Authorization": ""}, status: 401, kind: "Unauthorized", message: "no bearer token"},
		{name: "wrong token", header: map[string]string{"Authorization": "Bearer " + strings.ToUpper(testToken)}, status: 401, kind: "Unauthorized", message: "not this server's"},
		{name: "token prefix", header: map[string]string{"Authorization": "Bearer " + testToken[:10]}, status: 401, kind: "Unauthorized"},
		{name: "basic", header: map[string]string{"Authorization": "Basic " + testToken}, status: 401, kind: "Unauthorized", message: "not a bearer token"},
		{name: "lower-case scheme", header: map[string]string{"Authorization": "bearer " + testToken}, status: http.StatusTeapot},
		{name: "health without token", method: "GET", path: "/v1/health", header: map[string]string{"Authorization": ""}, status: http.StatusTeapot},
		{name: "health posted without token", method: "POST", path: "/v1/health", header: map[string]string{"Authorization": ""}, status: 401, kind: "Unauthorized"},
		{name: "batch API without token", method: "GET", path: "/v1/batches", header: map[string]string{"Authorization": ""}, status: 401, kind: "Unauthorized"},
		{name: "health from a foreign host", method: "GET", path: "/v1/health", host: "attacker.example:8765", status: 403, kind: "ForbiddenHost"},
		{name: "body at the cap", length: 1000, status: http.StatusTeapot},
		{name: "body over the cap", length: 1001, status: 413, kind: "RequestTooLarge", message: "1001 bytes"},
		// The refusal says what to do, not only what failed.
		{name: "body over the cap says what to do", length: 1001, status: 413, kind: "RequestTooLarge", message: "send less at once"},
		{name: "body of unknown length over the cap", length: -1, status: 413},
		{name: "any: own address", listen: "0.0.0.0:8765", host: "192.168.1.5:8765", status: http.StatusTeapot},
		{name: "any: rebound name", listen: "0.0.0.0:8765", host: "attacker.example:8765", status: 403, kind: "ForbiddenHost"},
		{name: "specific: other address", listen: "192.168.1.5:8765", host: "10.0.0.1:8765", status: 403, kind: "ForbiddenHost"},
		{name: "specific: own address", listen: "192.168.1.5:8765", host: "192.168.1.5:8765", status: http.StatusTeapot},
	} {
		t.Run(tc.name, func(t *testing.T) {
			listen := tc.listen
			if listen == "" {
				listen = "127.0.0.1:8765"
			}
			g, err := newGuard(tcpAddr(t, listen), testToken, 1000)
			if err != nil {
				t.Fatal(err)
			}
			method, path := tc.method, tc.path
			if method == "" {
				method, path = "POST", "/mcp"
			}
			var body io.Reader
			switch {
			case tc.length > 0:
				body = strings.NewReader(strings.Repeat("x", tc.length))
			case tc.length < 0:
				body = io.NopCloser(strings.NewReader(strings.Repeat("x", 5000)))
			}
			r := httptest.NewRequest(method, path, body)
			if tc.length < 0 {
				r.ContentLength = -1
			}
			r.Host = "127.0.0.1:8765"
			if tc.host != "" {
				r.Host = tc.host
			}
			r.Header.Set("Authorization", "Bearer "+testToken)
			for k, v := range tc.header {
				if v == "" {
					r.Header.Del(k)
				} else {
					r.Header.Set(k, v)
				}
			}
			w := httptest.NewRecorder()
			g.wrap(http.HandlerFunc(reached)).ServeHTTP(w, r)
			if w.Code != tc.status {
				t.Fatalf("status %d, want %d; body %s", w.Code, tc.status, w.Body)
			}
			if tc.kind == "" {
				return
			}
			var e struct {
				Error struct{ Kind, Message string } `json:"error"`
			}
			if err := json.Unmarshal(w.Body.Bytes(), &e); err != nil || w.Header().Get("Content-Type") != "application/json" {
				t.Fatalf("body %q (%s) is not a JSON error: %v", w.Body, w.Header().Get("Content-Type"), err)
			}
			if e.Error.Kind != tc.kind || !strings.Contains(e.Error.Message, tc.message) {
				t.Errorf("error %+v, want kind %s with %q", e.Error, tc.kind, tc.message)
			}
			if tc.status == 401 && w.Header().Get("WWW-Authenticate") == "" {
				t.Error("401 without WWW-Authenticate")
			}
		})
	}
}

// TestListen: --http listens on loopback unless told otherwise; a name
// other than localhost, an empty host or an address beyond loopback
// needs listenAny.
func TestListen(t *testing.T) {
	for _, tc := range []struct {
		addr      string
		listenAny bool
		want      string // in the error; "" when it listens
		loopback  bool
	}{
		{addr: "127.0.0.1:0", loopback: true},
		{addr: "localhost:0", loopback: true},
		{addr: "[::1]:0", loopback: true},
		{addr: "0.0.0.0:0", want: "0.0.0.0 is not a loopback address"},
		{addr: ":0", want: "every interface is not a loopback address"},
		{addr: "example.com:0", want: "--listen-any"},
		{addr: "127.0.0.1", want: "want HOST:PORT"},
		{addr: "0.0.0.0:0", listenAny: true},
	} {
		ln, err := Listen(tc.addr, tc.listenAny)
		if tc.want != "" {
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("Listen(%q, %v): %v, want an error with %q", tc.addr, tc.listenAny, err, tc.want)
			}
			if ln != nil {
				ln.Close()
			}
			continue
		}
		if err != nil {
			if strings.Contains(tc.addr, "::1") {
				t.Logf("no IPv6 loopback here: %v", err)
				continue
			}
			t.Errorf("Listen(%q, %v): %v", tc.addr, tc.listenAny, err)
			continue
		}
		if IsLoopback(ln.Addr()) != tc.loopback {
			t.Errorf("Listen(%q): IsLoopback(%s) = %v, want %v", tc.addr, ln.Addr(), !tc.loopback, tc.loopback)
		}
		if u := URL(ln.Addr(), "/mcp"); !strings.HasPrefix(u, "http://127.0.0.1:") && !strings.HasPrefix(u, "http://[::1]:") {
			t.Errorf("URL for %s is %s, want a loopback URL", ln.Addr(), u)
		}
		ln.Close()
	}
}

// bareServer is a Server with no tools, enough for the HTTP plumbing:
// sessions, their limit and their end.
func bareServer() *Server {
	s := &Server{log: slog.New(slog.DiscardHandler), conversations: map[*mcp.ServerSession]string{}, batches: newRegistry()}
	s.stopping, s.stopCalls = context.WithCancel(context.Background())
	s.mcp = mcp.NewServer(&mcp.Implementation{Name: "toolhost", Version: "test"}, &mcp.ServerOptions{SupportedProtocolVersions: supportedProtocols})
	return s
}

type bearer struct{ base http.RoundTripper }

func (b bearer) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+testToken)
	return b.base.RoundTrip(r)
}

// TestSessionLimit: over the real streamable handler and the SDK's
// client, sessions beyond the limit get 503 TooManySessions; a client's
// close (DELETE) frees its place before the DELETE is answered, and an
// expired session frees its place too and its id then gets the
// protocol's 404.
func TestSessionLimit(t *testing.T) {
	s := bareServer()
	ts := httptest.NewUnstartedServer(nil)
	h, err := s.newHTTPHandler(ts.Listener.Addr(), HTTPOptions{Token: testToken, MaxSessions: 2, SessionTimeout: 300 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	ts.Config.Handler = h
	ts.Start()
	defer ts.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	hc := &http.Client{Transport: bearer{http.DefaultTransport}}
	connect := func() (*mcp.ClientSession, error) {
		c := mcp.NewClient(&mcp.Implementation{Name: "test", Version: "1"}, nil)
		return c.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: ts.URL + "/mcp", HTTPClient: hc, MaxRetries: -1, DisableStandaloneSSE: true}, nil)
	}
	a, err := connect()
	if err != nil {
		t.Fatal(err)
	}
	b, err := connect()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := connect(); err == nil || !strings.Contains(err.Error(), "Service Unavailable") {
		t.Fatalf("third session: %v, want it refused with 503", err)
	}
	init := `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}`
	if code, body := post(t, hc, ts.URL, "", init); code != http.StatusServiceUnavailable || !strings.Contains(body, `"kind":"TooManySessions"`) || !strings.Contains(body, "--max-sessions") {
		t.Fatalf("third session, raw: %d %s; want 503 TooManySessions naming --max-sessions", code, body)
	}
	a.Close()
	c, err := connect()
	if err != nil {
		t.Fatalf("a session right after a close: %v", err)
	}
	defer c.Close()
	id := b.ID()
	time.Sleep(time.Second) // b and c expire
	if code, body := post(t, hc, ts.URL, id, `{"jsonrpc":"2.0","id":9,"method":"ping"}`); code != http.StatusNotFound {
		t.Errorf("request in an expired session: %d %s, want 404", code, body)
	}
	for range 2 {
		cs, err := connect()
		if err != nil {
			t.Fatalf("a session after the others expired: %v", err)
		}
		defer cs.Close()
	}
}

// TestConversationHeader: a conversation id from a header is short and
// plain, so it cannot flood logs or smuggle control characters.
func TestConversationHeader(t *testing.T) {
	for _, tc := range []struct {
		id string
		ok bool
	}{
		{"agent-7", true},
		{"0192f3a4-7c1e-7a4b-9f00-3c2d1e0f9a8b", true},
		{"thread:abc.def_1", true},
		{"", false},
		{"../../etc/passwd", false},
		{"a b", false},
		{"line\nbreak", false},
		{strings.Repeat("a", 129), false},
		{strings.Repeat("a", 128), true},
	} {
		if got := validConversation(tc.id); got != tc.ok {
			t.Errorf("validConversation(%q) = %v, want %v", tc.id, got, tc.ok)
		}
	}
}

// post sends one JSON-RPC message to /mcp, in session id if not "".
func post(t *testing.T, hc *http.Client, base, id, msg string) (int, string) {
	t.Helper()
	req, err := http.NewRequest("POST", base+"/mcp", strings.NewReader(msg))
	if err != nil {
		t.Fatal(err)
	}
	req.Header = http.Header{"Content-Type": {"application/json"}, "Accept": {"application/json, text/event-stream"}}
	if id != "" {
		req.Header.Set("Mcp-Session-Id", id)
		req.Header.Set("Mcp-Protocol-Version", "2025-11-25")
	}
	resp, err := hc.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// TestServeHTTPOn: the real listener: health answers without a token, a
// client that does not finish its headers is cut off at the header
// timeout, and when ctx ends the server returns nil with its event
// streams closed.
func TestServeHTTPOn(t *testing.T) {
	s := bareServer()
	ln, err := Listen("127.0.0.1:0", false)
	if err != nil {
		t.Fatal(err)
	}
	base := URL(ln.Addr(), "")
	ctx, cancel := context.WithCancel(context.Background())
	served := make(chan error, 1)
	go func() {
		served <- s.ServeHTTPOn(ctx, ln, HTTPOptions{Token: testToken, HeaderTimeout: 300 * time.Millisecond})
	}()

	resp, err := http.Get(base + "/v1/health")
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || !strings.HasPrefix(string(b), `{"status":"ok",`) {
		t.Errorf("GET /v1/health: %d %s", resp.StatusCode, b)
	}

	slow, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer slow.Close()
	start := time.Now()
	io.WriteString(slow, "POST /mcp HTTP/1.1\r\nHost: "+ln.Addr().String()+"\r\nX-Slow: ")
	slow.SetReadDeadline(time.Now().Add(10 * time.Second))
	io.ReadAll(slow) // until the server closes the connection
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("a client sending headers slowly held its connection %v; the header timeout is 300ms", d)
	}

	// A session with its event stream open does not hold up shutdown.
	hc := &http.Client{Transport: bearer{http.DefaultTransport}}
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "test", Version: "1"}, nil).Connect(context.Background(), &mcp.StreamableClientTransport{Endpoint: base + "/mcp", HTTPClient: hc, MaxRetries: -1}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	cancel()
	select {
	case err := <-served:
		if err != nil {
			t.Errorf("ServeHTTPOn after ctx ended: %v, want nil", err)
		}
	case <-time.After(shutdownTimeout + 5*time.Second):
		t.Fatal("ServeHTTPOn did not return after ctx ended")
	}
	if _, err := http.Get(base + "/v1/health"); err == nil {
		t.Error("the server still accepts connections after shutdown")
	}
}
