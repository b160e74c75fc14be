package hostile_test

// Red team: attacks on toolhost serve (MCP over HTTP, the /v1
// batch API, held approvals, profiles) through host/server's exported
// API on a real Host, as a client holding the token, as a slow or
// misbehaving MCP client, and as a prompt-injected model.

import (
	"context"
	"io"
	"net"
	"net/http"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolhost/toolhost/host"
	"github.com/toolhost/toolhost/host/internal/config"
	"github.com/toolhost/toolhost/host/internal/engine"
	"github.com/toolhost/toolhost/host/internal/server"
)

const serveToken = "serve-test-token-0123456789abcdef"

// served is a toolhost server on a real Host, serving HTTP on a
// loopback port.
type served struct {
	s    *server.Server
	root string
	base string
	hc   *http.Client
}

// serveHost serves a fresh workspace over HTTP with opts and hopts (the
// token is set here).
func serveHost(t *testing.T, opts server.Options, hopts server.HTTPOptions, mutate func(*config.Config, *host.Options)) *served {
	t.Helper()
	h, root := openHost(t, mutate)
	s, err := server.New(h, opts)
	if err != nil {
		t.Fatal(err)
	}
	ln, err := server.Listen("127.0.0.1:0", false)
	if err != nil {
		t.Fatal(err)
	}
	hopts.Token = serveToken
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- s.ServeHTTPOn(ctx, ln, hopts) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("ServeHTTPOn: %v", err)
		}
	})
	return &served{s: s, root: root, base: server.URL(ln.Addr(), ""), hc: &http.Client{Transport: withToken{http.DefaultTransport}}}
}

type withToken struct{ base http.RoundTripper }

func (b withToken) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+serveToken)
	return b.base.RoundTrip(r)
}

// do sends a request with body (nil: none) and headers, and returns the
// status and the body of the answer.
func (sv *served) do(t *testing.T, method, path, body string, header http.Header) (int, string) {
	t.Helper()
	var r io.Reader
	if body != "" {
		r = strings.NewReader(body)
	}
	req, err := http.NewRequest(method, sv.base+path, r)
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range header {
		req.Header[k] = v
	}
	resp, err := sv.hc.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	out, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(out)
}

// connect opens an MCP session on path (/mcp or /mcp/PROFILE).
func (sv *served) connect(t *testing.T, path string, copts *mcp.ClientOptions) (*mcp.ClientSession, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "hostile", Version: "1"}, copts).Connect(ctx,
		&mcp.StreamableClientTransport{Endpoint: sv.base + path, HTTPClient: sv.hc, MaxRetries: -1, DisableStandaloneSSE: true}, nil)
	if err == nil {
		t.Cleanup(func() { cs.Close() })
	}
	return cs, err
}

// reviewer is a read-only profile, as toolhost config init writes one.
var reviewer = map[string]engine.Narrowing{"reviewer": {Tools: []string{"read_file", "list_directory"}}}

// Attack (client): with --max-sessions 1, open a session
// on a profile's endpoint, then DELETE its id on /mcp, where it is not a
// session: the DELETE is refused, but must not free the session's place,
// or a client could open sessions without bound.
func TestServeDeleteOnAnotherEndpointKeepsTheSessionLimit(t *testing.T) {
	sv := serveHost(t, server.Options{Profiles: reviewer}, server.HTTPOptions{MaxSessions: 1}, nil)
	cs, err := sv.connect(t, "/mcp/reviewer", nil)
	if err != nil {
		t.Fatal(err)
	}
	status, body := sv.do(t, "DELETE", "/mcp", "", http.Header{"Mcp-Session-Id": {cs.ID()}})
	if status != http.StatusNotFound {
		t.Errorf("DELETE /mcp with a session of /mcp/reviewer: %d %s, want 404", status, body)
	}
	if _, err := sv.connect(t, "/mcp", nil); err == nil {
		t.Fatal("a second session opened with --max-sessions 1: the DELETE on another endpoint freed the place of a session still open")
	}
	// The session is still there and still confined to its profile.
	res, err := cs.ListTools(context.Background(), nil)
	if err != nil {
		t.Fatalf("the profile's session after the foreign DELETE: %v", err)
	}
	if len(res.Tools) != 2 {
		t.Errorf("the reviewer session lists %d tools, want 2", len(res.Tools))
	}
}

// Attack (slow MCP client): a client declares
// elicitation, then never answers the question. The call must not wait
// forever: after the ask timeout it is denied, saying nobody answered,
// and nothing is written.
func TestServeElicitationNobodyAnswersIsDenied(t *testing.T) {
	sv := serveHost(t, server.Options{AskTimeout: time.Second}, server.HTTPOptions{}, nil)
	mustWrite(t, sv.root+"/a.txt", "old\n")
	asked := make(chan struct{}, 1)
	stop := make(chan struct{})
	cs, err := sv.connect(t, "/mcp", &mcp.ClientOptions{ElicitationHandler: func(ctx context.Context, _ *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
		select {
		case asked <- struct{}{}:
		default:
		}
		select { // never answers; only the server giving up, or the test's end, ends this
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-stop:
			return nil, context.Canceled
		}
	}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { close(stop) })
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	// Read first: replacing a file unread is refused without asking.
	if _, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "read_file", Arguments: map[string]any{"path": "a.txt"}}); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "write_file", Arguments: map[string]any{"path": "a.txt", "content": "new\n"}})
	if err != nil {
		t.Fatalf("write_file with an unanswered question: %v after %v; want a denial once the ask timeout passes", err, time.Since(start))
	}
	select {
	case <-asked:
	default:
		t.Fatal("the client was never asked")
	}
	text := res.Content[0].(*mcp.TextContent).Text
	if !res.IsError || !strings.Contains(text, "answer") || !strings.Contains(text, "1s") {
		t.Errorf("the result: %q, want a denial saying nobody answered within 1s", text)
	}
	if b, _ := os.ReadFile(sv.root + "/a.txt"); string(b) != "old\n" {
		t.Errorf("a.txt holds %q: the unanswered write ran", b)
	}
}

// Attack (web page or local process): reach the server
// by DNS rebinding (a Host that is not this server's address, in any
// spelling), from a foreign or opaque Origin, with the token in the
// query string instead of the header, or by a CORS preflight. Every one
// is refused before a handler runs, the answer saying why.
func TestServeHostOriginAndTokenSpellingsAreRefused(t *testing.T) {
	sv := serveHost(t, server.Options{}, server.HTTPOptions{}, nil)
	_, port, _ := strings.Cut(strings.TrimPrefix(sv.base, "http://"), ":")
	for _, tc := range []struct {
		name, method, path, host, origin string
		token                            bool
		want                             int
		kind                             string
	}{
		{"rebound name", "GET", "/v1/tools", "evil.example:" + port, "", true, 403, "ForbiddenHost"},
		{"localhost with a trailing dot", "GET", "/v1/tools", "localhost.:" + port, "", true, 403, "ForbiddenHost"},
		{"another port", "GET", "/v1/tools", "127.0.0.1:1", "", true, 403, "ForbiddenHost"},
		{"no port", "GET", "/v1/tools", "localhost", "", true, 403, "ForbiddenHost"},
		{"0.0.0.0", "GET", "/v1/tools", "0.0.0.0:" + port, "", true, 403, "ForbiddenHost"},
		{"a subdomain of localhost", "GET", "/v1/tools", "a.localhost:" + port, "", true, 403, "ForbiddenHost"},
		{"origin null", "GET", "/v1/tools", "", "null", true, 403, "ForbiddenOrigin"},
		{"foreign origin", "POST", "/mcp", "", "https://evil.example", true, 403, "ForbiddenOrigin"},
		{"origin that only starts like localhost", "GET", "/v1/tools", "", "http://localhost.evil.example", true, 403, "ForbiddenOrigin"},
		{"preflight from a foreign page", "OPTIONS", "/v1/batches", "", "https://evil.example", false, 403, "ForbiddenOrigin"},
		{"preflight from a loopback page carries no token", "OPTIONS", "/v1/batches", "", "http://localhost:3000", false, 401, "Unauthorized"},
		{"token in the query string", "GET", "/v1/tools?access_token=" + serveToken, "", "", false, 401, "Unauthorized"},
		{"IPv6 loopback is this machine", "GET", "/v1/health", "[::1]:" + port, "", false, 200, ""},
		{"uppercase LOCALHOST is this machine", "GET", "/v1/tools", "LOCALHOST:" + port, "", true, 200, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			req, err := http.NewRequest(tc.method, sv.base+tc.path, nil)
			if err != nil {
				t.Fatal(err)
			}
			if tc.host != "" {
				req.Host = tc.host
			}
			if tc.origin != "" {
				req.Header.Set("Origin", tc.origin)
			}
			if tc.token {
				req.Header.Set("Authorization", "Bearer "+serveToken)
			}
			resp, err := http.DefaultTransport.RoundTrip(req)
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			out, _ := io.ReadAll(resp.Body)
			if resp.StatusCode != tc.want || !strings.Contains(string(out), tc.kind) {
				t.Errorf("%d %s, want %d %s", resp.StatusCode, out, tc.want, tc.kind)
			}
			if resp.Header.Get("Access-Control-Allow-Origin") != "" {
				t.Errorf("the answer allows a cross-origin reader: %q", resp.Header.Get("Access-Control-Allow-Origin"))
			}
		})
	}
}

// Attack (model or client): escape a read-only profile:
// use its session id on /mcp, call a write tool by another spelling
// (case, a trailing space, a look-alike letter), and, with the server
// narrowed to the profile (--profile), post the write to /v1. Nothing
// outside the profile runs and nothing is written.
func TestServeProfileCannotBeEscaped(t *testing.T) {
	sv := serveHost(t, server.Options{Profiles: reviewer}, server.HTTPOptions{}, nil)
	mustWrite(t, sv.root+"/a.txt", "old\n")
	cs, err := sv.connect(t, "/mcp/reviewer", nil)
	if err != nil {
		t.Fatal(err)
	}
	msg := `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"write_file","arguments":{"path":"a.txt","content":"pwned\n"}}}`
	status, body := sv.do(t, "POST", "/mcp", msg, http.Header{"Mcp-Session-Id": {cs.ID()}, "Mcp-Protocol-Version": {"2025-11-25"},
		"Content-Type": {"application/json"}, "Accept": {"application/json, text/event-stream"}})
	if status != http.StatusNotFound {
		t.Errorf("the reviewer's session id on /mcp: %d %s, want 404", status, body)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for _, name := range []string{"write_file", "Write_File", "WRITE_FILE", "write_file ", "write_fіle", "apply_patch", "run_command"} {
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: name, Arguments: map[string]any{"path": "a.txt", "content": "pwned\n", "command": "echo pwned > a.txt"}})
		if err == nil && !res.IsError {
			t.Errorf("the reviewer called %q: %+v", name, res.Content)
		}
	}

	narrowed := serveHost(t, server.Options{Narrowing: reviewer["reviewer"]}, server.HTTPOptions{}, nil)
	mustWrite(t, narrowed.root+"/a.txt", "old\n")
	for _, name := range []string{"write_file", "Write_File"} {
		status, body = narrowed.do(t, "POST", "/v1/batches", `{"conversation_id":"c","calls":[{"id":"w","name":"`+name+`","arguments":{"path":"a.txt","content":"pwned\n"}}]}`, nil)
		if status != 201 || !strings.Contains(body, `"pre_resolved"`) || strings.Contains(body, `"awaiting_approval"`) {
			t.Errorf("POST /v1/batches with %s under --profile reviewer: %d %s, want it refused in the plan", name, status, body)
		}
	}
	time.Sleep(200 * time.Millisecond)
	for _, root := range []string{sv.root, narrowed.root} {
		if b, _ := os.ReadFile(root + "/a.txt"); string(b) != "old\n" {
			t.Errorf("a.txt holds %q: the profile was escaped", b)
		}
	}
}

// Attack (local process without the token): open
// connections and send nothing, more of them than the server should
// hold (each costs a descriptor and buffers). Connections that have not
// shown the token get a quarter of HTTPOptions.MaxConnections: past it
// the server closes the oldest of them for each new one, so a flood
// cannot run the process out of descriptors, nor keep out a client
// that comes after it.
func TestServeConnectionFloodIsBounded(t *testing.T) {
	sv := serveHost(t, server.Options{}, server.HTTPOptions{MaxConnections: 8}, nil)
	addr := strings.TrimPrefix(sv.base, "http://")
	var idle []net.Conn
	for range 6 {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		idle = append(idle, c)
	}
	hc := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{DisableKeepAlives: true}}
	resp, err := hc.Get(sv.base + "/v1/health")
	if err != nil {
		t.Fatalf("health after six silent connections: %v", err)
	}
	resp.Body.Close()
	closed := 0
	for _, c := range idle {
		c.SetReadDeadline(time.Now().Add(time.Second))
		if _, err := c.Read(make([]byte, 1)); err == io.EOF {
			closed++
		}
	}
	// Of the six and the health check, at most two stay open (8/4).
	if closed < 5 {
		t.Errorf("the server closed %d of six silent connections, want at least five: it holds more than a quarter of MaxConnections 8 without the token", closed)
	}
}
