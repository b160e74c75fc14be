package server

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolhost/toolhost/host"
	"github.com/toolhost/toolhost/host/internal/config"
	"github.com/toolhost/toolhost/host/internal/engine"
	"github.com/toolhost/toolhost/internal/testplugin"
)

// testClient is an SDK client connected in memory to a Server on a real
// Host with the built-in plugins, in a fresh workspace.
type testClient struct {
	session *mcp.ClientSession
	root    string

	mu       sync.Mutex
	progress []*mcp.ProgressNotificationParams
	asked    []string
}

// notes are the progress notifications the client got so far.
func (c *testClient) notes() []*mcp.ProgressNotificationParams {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]*mcp.ProgressNotificationParams(nil), c.progress...)
}

func (c *testClient) questions() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]string(nil), c.asked...)
}

// serveTest serves a Host over an in-memory transport. auto lets every
// call run without asking (run_command included); otherwise writes ask
// and answer answers each elicitation (nil: the client cannot elicit).
func serveTest(t *testing.T, opts Options, auto bool, answer func(*testClient, *mcp.ElicitRequest) string) *testClient {
	t.Helper()
	s, root := testServer(t, opts, auto)
	ctx, cancel := context.WithCancel(context.Background())
	st, ct := mcp.NewInMemoryTransports()
	served := make(chan error, 1)
	go func() { served <- s.Serve(ctx, st) }()
	t.Cleanup(func() {
		cancel()
		if err := <-served; err != nil {
			t.Errorf("Serve: %v", err)
		}
	})
	return connectTest(t, ct, root, answer)
}

// serveTestHTTP is serveTest over streamable HTTP on a loopback port.
func serveTestHTTP(t *testing.T, opts Options, auto bool) *testClient {
	t.Helper()
	s, root := testServer(t, opts, auto)
	ln, err := Listen("127.0.0.1:0", false)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	served := make(chan error, 1)
	go func() { served <- s.ServeHTTPOn(ctx, ln, HTTPOptions{Token: testToken}) }()
	t.Cleanup(func() {
		cancel()
		if err := <-served; err != nil {
			t.Errorf("ServeHTTPOn: %v", err)
		}
	})
	hc := &http.Client{Transport: bearer{http.DefaultTransport}}
	return connectTest(t, &mcp.StreamableClientTransport{Endpoint: URL(ln.Addr(), "/mcp"), HTTPClient: hc, MaxRetries: -1}, root, nil)
}

// testServer is a Server on a real Host with the built-in plugins, in a
// fresh workspace, its root.
func testServer(t *testing.T, opts Options, auto bool) (*Server, string) {
	t.Helper()
	root := t.TempDir()
	cfg := config.Default()
	cfg.Tools.Sandbox.AllowedRoots = []string{root}
	unconfined(cfg) // the server's tests are not about the sandbox
	if auto {
		cfg.Tools.Approval.Mode = config.ApprovalAuto
		cfg.Tools.Approval.Denylist = nil
		opts.Allow = append(opts.Allow, "run_command") // it asks in every mode
	}
	h, err := host.Open(context.Background(), host.Options{PluginDir: testplugin.BuiltIns(t), Config: cfg, CacheDir: testplugin.CacheDir(t)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { h.Close(context.Background()) })
	s, err := New(h, opts)
	if err != nil {
		t.Fatal(err)
	}
	return s, root
}

// connectTest connects an SDK client that records progress and
// elicitations through transport.
func connectTest(t *testing.T, transport mcp.Transport, root string, answer func(*testClient, *mcp.ElicitRequest) string) *testClient {
	t.Helper()
	tc := &testClient{root: root}
	copts := &mcp.ClientOptions{ProgressNotificationHandler: func(_ context.Context, req *mcp.ProgressNotificationClientRequest) {
		tc.mu.Lock()
		defer tc.mu.Unlock()
		tc.progress = append(tc.progress, req.Params)
	}}
	if answer != nil {
		copts.ElicitationHandler = func(_ context.Context, req *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
			tc.mu.Lock()
			tc.asked = append(tc.asked, req.Params.Message)
			tc.mu.Unlock()
			return &mcp.ElicitResult{Action: answer(tc, req)}, nil
		}
	}
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "test", Version: "1"}, copts).Connect(context.Background(), transport, nil)
	if err != nil {
		t.Fatal(err)
	}
	tc.session = cs
	t.Cleanup(func() { cs.Close() }) // before the server stops: cleanups run last first
	return tc
}

// call runs a tool, with a progress token when token is not nil, and
// returns its text.
func (c *testClient) call(t *testing.T, tool string, args map[string]any, token any) (*mcp.CallToolResult, string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	p := &mcp.CallToolParams{Name: tool, Arguments: args}
	if token != nil {
		p.SetProgressToken(token)
	}
	res, err := c.session.CallTool(ctx, p)
	if err != nil {
		t.Fatalf("tools/call %s: %v", tool, err)
	}
	var b strings.Builder
	for _, ct := range res.Content {
		if tc, ok := ct.(*mcp.TextContent); ok {
			b.WriteString(tc.Text)
		}
	}
	return res, b.String()
}

// waitNotes waits until the client holds at least n notifications: the
// SDK hands notifications to the handler apart from the result.
func (c *testClient) waitNotes(n int) []*mcp.ProgressNotificationParams {
	deadline := time.Now().Add(2 * time.Second)
	for len(c.notes()) < n && time.Now().Before(deadline) {
		time.Sleep(5 * time.Millisecond)
	}
	return c.notes()
}

// TestProgressStreamsOutput: with a progress token, each output chunk of
// run_command reaches the client as a progress notification carrying
// the chunk, with progress increasing, over stdio's in-memory twin and
// over streamable HTTP (where each must go to the request's stream);
// without a token nothing is sent.
func TestProgressStreamsOutput(t *testing.T) {
	t.Run("in memory", func(t *testing.T) {
		testProgressStreamsOutput(t, serveTest(t, Options{ProgressInterval: time.Minute}, true, nil))
	})
	t.Run("http", func(t *testing.T) {
		testProgressStreamsOutput(t, serveTestHTTP(t, Options{ProgressInterval: time.Minute}, true))
	})
}

func testProgressStreamsOutput(t *testing.T, c *testClient) {
	res, text := c.call(t, "run_command", map[string]any{"command": "for i in 1 2 3; do echo line$i; sleep 0.2; done; echo oops >&2"}, "tok-1")
	if res.IsError || !strings.Contains(text, "line3") {
		t.Fatalf("run_command: isError %v, text %q", res.IsError, text)
	}
	notes := c.waitNotes(4)
	var all strings.Builder
	for i, n := range notes {
		if n.ProgressToken != "tok-1" {
			t.Errorf("notification %d has token %v, want tok-1", i, n.ProgressToken)
		}
		if i > 0 && n.Progress <= notes[i-1].Progress {
			t.Errorf("progress %v after %v: not increasing", n.Progress, notes[i-1].Progress)
		}
		all.WriteString(n.Message)
	}
	if len(notes) < 3 {
		t.Fatalf("%d progress notifications, want one per chunk (at least 3): %v", len(notes), messages(notes))
	}
	for _, want := range []string{"line1\n", "line2\n", "line3\n", "oops\n"} {
		if !strings.Contains(all.String(), want) {
			t.Errorf("the notifications' messages %q lack %q", all.String(), want)
		}
	}

	before := len(c.notes())
	c.call(t, "run_command", map[string]any{"command": "echo quiet"}, nil)
	time.Sleep(100 * time.Millisecond)
	if n := len(c.notes()); n != before {
		t.Errorf("a call without a progress token got %d notifications", n-before)
	}
}

// TestProgressKeepalive: a call that prints nothing, and one waiting for
// its approval, still send progress every interval, so the client's
// request timer is kept alive.
func TestProgressKeepalive(t *testing.T) {
	t.Run("running", func(t *testing.T) {
		c := serveTest(t, Options{ProgressInterval: 200 * time.Millisecond}, true, nil)
		start := time.Now()
		c.call(t, "run_command", map[string]any{"command": "sleep 1"}, 7)
		took := time.Since(start)
		notes := c.waitNotes(3)
		// One per interval: at least 3 in the sleep alone, no more than
		// the whole call's intervals.
		if most := int(took / (200 * time.Millisecond)); len(notes) < 3 || len(notes) > most {
			t.Fatalf("%d keepalives over a call of %v at 200 ms, want 3 to %d: %v", len(notes), took, most, messages(notes))
		}
		if !strings.Contains(notes[len(notes)-1].Message, "running") {
			t.Errorf("keepalive %q does not say the call is running", notes[len(notes)-1].Message)
		}
	})
	t.Run("awaiting approval", func(t *testing.T) {
		c := serveTest(t, Options{ProgressInterval: 200 * time.Millisecond}, false, func(*testClient, *mcp.ElicitRequest) string {
			time.Sleep(time.Second) // a person reading the question
			return "decline"
		})
		os.WriteFile(filepath.Join(c.root, "a.txt"), []byte("old\n"), 0o644)
		c.call(t, "read_file", map[string]any{"path": "a.txt"}, nil)
		c.call(t, "write_file", map[string]any{"path": "a.txt", "content": "new\n"}, "t")
		notes := c.waitNotes(3)
		waiting := 0
		for _, n := range notes {
			if strings.Contains(n.Message, "waiting for approval") {
				waiting++
			}
		}
		if waiting < 3 {
			t.Errorf("%d keepalives said the call waits for approval during a 1 s elicitation at 200 ms, want at least 3: %v", waiting, messages(notes))
		}
	})
}

func messages(notes []*mcp.ProgressNotificationParams) []string {
	var out []string
	for _, n := range notes {
		out = append(out, fmt.Sprintf("%v %q", n.Progress, n.Message))
	}
	return out
}

// TestProgressGap: the last notification is at least progressGap old
// when close returns and the result goes out, however late it was sent
// (the TypeScript client drops one that arrives with the result), and
// nothing is sent after close.
func TestProgressGap(t *testing.T) {
	var mu sync.Mutex
	var sent []time.Time
	send := func(context.Context, *mcp.ProgressNotificationParams) error {
		mu.Lock()
		defer mu.Unlock()
		sent = append(sent, time.Now())
		return nil
	}
	for i := range 20 {
		p := startProgress(context.Background(), send, "t", fmt.Sprint(i), time.Millisecond)
		time.Sleep(3 * time.Millisecond)
		p.Send(context.Background(), engine.Event{Kind: engine.EventStdoutChunk, Chunk: "x"})
		p.close()
		closed := time.Now()
		mu.Lock()
		last := sent[len(sent)-1]
		mu.Unlock()
		if gap := closed.Sub(last); gap < progressGap {
			t.Fatalf("close returned %v after the last notification, want at least %v", gap, progressGap)
		}
		p.Send(context.Background(), engine.Event{Kind: engine.EventStdoutChunk, Chunk: "late"})
		mu.Lock()
		if !sent[len(sent)-1].Equal(last) {
			t.Fatal("a notification was sent after close")
		}
		mu.Unlock()
	}
}
