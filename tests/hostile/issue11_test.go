package hostile_test

// Issue 11 red team: attacks on toolhost serve (MCP over HTTP, the /v1
// batch API, held approvals, profiles) through host/server's exported
// API on a real Host, as a client holding the token, as a slow or
// misbehaving MCP client, and as a prompt-injected model.

import (
	"context"
	"io"
	"net/http"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolhost/toolhost/host"
	"github.com/toolhost/toolhost/host/config"
	"github.com/toolhost/toolhost/host/engine"
	"github.com/toolhost/toolhost/host/server"
)

const serveToken = "issue11-test-token-0123456789abcdef"

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

// Attack (client, issue 11 item 2): with --max-sessions 1, open a session
// on a profile's endpoint, then DELETE its id on /mcp, where it is not a
// session: the DELETE is refused, but must not free the session's place,
// or a client could open sessions without bound.
func TestIssue11_DeleteOnAnotherEndpointKeepsTheSessionLimit(t *testing.T) {
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

// Attack (slow MCP client, issue 11 item 4): a client declares
// elicitation, then never answers the question. The call must not wait
// forever: after the ask timeout it is denied, saying nobody answered,
// and nothing is written.
func TestIssue11_ElicitationNobodyAnswersIsDenied(t *testing.T) {
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
