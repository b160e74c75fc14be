package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// httpServe is `toolhost serve --http 127.0.0.1:0` in a workspace: the
// address, URL and token it printed, and its stderr.
type httpServe struct {
	cmd    *exec.Cmd
	stderr *lockedBuffer
	url    string // the MCP endpoint, http://127.0.0.1:PORT/mcp
	base   string // http://127.0.0.1:PORT
	host   string // 127.0.0.1:PORT
	token  string
	exited chan error
}

var (
	endpointLine = regexp.MustCompile(`MCP at (http://(127\.0\.0\.1:\d+)/mcp)`)
	tokenLine    = regexp.MustCompile(`bearer token: ([A-Za-z0-9]+) \(made at start`)
)

// serveHTTP starts toolhost serve --http 127.0.0.1:0 with args and waits
// for it to print where it listens. Cleanup stops it.
func serveHTTP(t *testing.T, w *workspace, args ...string) *httpServe {
	t.Helper()
	s := &httpServe{stderr: &lockedBuffer{}, exited: make(chan error, 1)}
	s.cmd = w.command(w.argv(append([]string{"serve", "--http", "127.0.0.1:0"}, args...)...)...)
	s.cmd.Stderr = s.stderr
	if err := s.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { s.exited <- s.cmd.Wait() }()
	t.Cleanup(func() {
		s.cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-s.exited:
		case <-time.After(15 * time.Second):
			s.cmd.Process.Kill()
			<-s.exited
		}
		if t.Failed() {
			t.Logf("toolhost serve stderr:\n%s", s.stderr)
		}
	})
	deadline := time.Now().Add(time.Minute)
	for {
		// The line to connect an agent comes last.
		out := s.stderr.String()
		if m := endpointLine.FindStringSubmatch(out); m != nil && strings.Contains(out, "connect Claude Code: ") {
			s.url, s.host, s.base = m[1], m[2], "http://"+m[2]
			if tm := tokenLine.FindStringSubmatch(out); tm != nil {
				s.token = tm[1]
			}
			return s
		}
		select {
		case err := <-s.exited:
			t.Fatalf("toolhost serve --http exited (%v) before listening\nstderr: %s", err, out)
		case <-time.After(20 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			t.Fatalf("toolhost serve --http printed no endpoint within a minute\nstderr: %s", out)
		}
	}
}

// headers adds fixed headers to every request a client sends.
type headers struct {
	base http.RoundTripper
	h    http.Header
}

func (a headers) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	for k, v := range a.h {
		r.Header[k] = v
	}
	return a.base.RoundTrip(r)
}

// httpClient is a client sending the server's token and extra headers
// (name, value pairs).
func (s *httpServe) httpClient(extra ...string) *http.Client {
	h := http.Header{"Authorization": {"Bearer " + s.token}}
	for i := 0; i+1 < len(extra); i += 2 {
		h.Set(extra[i], extra[i+1])
	}
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.MaxIdleConnsPerHost = 16
	return &http.Client{Transport: headers{base: tr, h: h}}
}

// connect opens an MCP session with the Go SDK's streamable HTTP client.
func (s *httpServe) connect(t *testing.T, ctx context.Context, opts *mcp.ClientOptions, hc *http.Client) *mcp.ClientSession {
	t.Helper()
	if hc == nil {
		hc = s.httpClient()
	}
	client := mcp.NewClient(&mcp.Implementation{Name: "toolhost-e2e", Version: "1"}, opts)
	cs, err := client.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: s.url, HTTPClient: hc, MaxRetries: -1}, nil)
	if err != nil {
		t.Fatalf("connecting to %s: %v\nstderr: %s", s.url, err, s.stderr)
	}
	t.Cleanup(func() { cs.Close() })
	return cs
}

// serveMCPHTTP starts toolhost serve --http with args in w and connects
// the Go SDK's streamable HTTP client with opts and the token, logging
// the wire; an mcpConnect, so the stdio tests' checks run over HTTP too.
func serveMCPHTTP(t *testing.T, w *workspace, opts *mcp.ClientOptions, args ...string) *mcpServer {
	t.Helper()
	hs := serveHTTP(t, w, args...)
	s := &mcpServer{stderr: hs.stderr, wire: &lockedBuffer{}}
	client := mcp.NewClient(&mcp.Implementation{Name: "toolhost-e2e", Version: "1"}, opts)
	tr := &mcp.StreamableClientTransport{Endpoint: hs.url, HTTPClient: hs.httpClient(), MaxRetries: -1}
	cs, err := client.Connect(testContext(t), &mcp.LoggingTransport{Transport: tr, Writer: s.wire}, nil)
	if err != nil {
		t.Fatalf("connecting to %s: %v\nstderr: %s", hs.url, err, hs.stderr)
	}
	t.Cleanup(func() { cs.Close() })
	s.session = cs
	return s
}

// callText runs tools/call on a session and returns the result and its
// text.
func callText(ctx context.Context, cs *mcp.ClientSession, tool string, args map[string]any) (*mcp.CallToolResult, string, error) {
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: tool, Arguments: args})
	if err != nil {
		return nil, "", err
	}
	var text strings.Builder
	for _, c := range res.Content {
		if tc, ok := c.(*mcp.TextContent); ok {
			text.WriteString(tc.Text)
		}
	}
	return res, text.String(), nil
}

// TestMCPHTTPListAndRead: the server prints its URL, a token and a line
// to connect an agent; the Go SDK client over streamable HTTP with the
// token lists the tools with their hints and reads a file whole; health
// needs no token.
func TestMCPHTTPListAndRead(t *testing.T) {
	w := newWorkspace(t)
	w.file(t, "notes.txt", "first line\nsecond line\n")
	s := serveHTTP(t, w)
	if s.token == "" || len(s.token) < 20 {
		t.Fatalf("no token of at least 20 characters printed:\n%s", s.stderr)
	}
	want := fmt.Sprintf(`claude mcp add --transport http toolhost %s --header "Authorization: Bearer %s"`, s.url, s.token)
	if !strings.Contains(s.stderr.String(), want) {
		t.Errorf("stderr lacks the line to connect an agent %q:\n%s", want, s.stderr)
	}
	ctx := testContext(t)
	cs := s.connect(t, ctx, nil, nil)
	if v := cs.InitializeResult().ProtocolVersion; v != "2025-11-25" {
		t.Errorf("negotiated protocol %s, want 2025-11-25", v)
	}
	tools, err := cs.ListTools(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	var read *mcp.Tool
	for _, tool := range tools.Tools {
		if tool.Name == "read_file" {
			read = tool
		}
	}
	if read == nil || read.Annotations == nil || !read.Annotations.ReadOnlyHint {
		t.Fatalf("tools/list: read_file %+v, want it listed read-only; tools %v", read, toolNames(tools.Tools))
	}
	res, text, err := callText(ctx, cs, "read_file", map[string]any{"path": "notes.txt"})
	if err != nil || res.IsError || text != "first line\nsecond line\n" {
		t.Errorf("read_file over HTTP: err %v, result %+v, text %q", err, res, text)
	}
	resp, err := http.Get(s.base + "/v1/health")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || !strings.HasPrefix(string(body), `{"status":"ok",`) {
		t.Errorf("GET /v1/health without a token: %d %s, want 200 {\"status\":\"ok\", ...}", resp.StatusCode, body)
	}
}

// initialize is an MCP initialize request's body.
const initialize = `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}`

// rawRequest sends one request to the server and returns the status,
// the error kind of a JSON error body, and the body.
func (s *httpServe) rawRequest(t *testing.T, method, path string, body io.Reader, length int64, header http.Header) (status int, kind, text string) {
	t.Helper()
	req, err := http.NewRequest(method, s.base+path, body)
	if err != nil {
		t.Fatal(err)
	}
	req.ContentLength = length
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	for k, v := range header {
		if k == "Host" {
			req.Host = v[0]
			continue
		}
		req.Header[k] = v
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<16))
	var e struct {
		Error struct{ Kind, Message string } `json:"error"`
	}
	json.Unmarshal(b, &e)
	return resp.StatusCode, e.Error.Kind, string(b)
}

// TestMCPHTTPRefusals: each request the HTTP server must refuse, through
// the real binary: no token, a wrong one, a foreign Host or Origin
// (DNS rebinding, cross-site pages), an oversized body with or without
// a length, an unknown session id (the protocol's 404), a bad
// conversation header; and what it must let through.
func TestMCPHTTPRefusals(t *testing.T) {
	w := newWorkspace(t)
	s := serveHTTP(t, w)
	auth := "Bearer " + s.token
	huge := int64(5 << 20)
	for _, tc := range []struct {
		name   string
		method string
		path   string
		header http.Header
		body   func() (io.Reader, int64)
		status int
		kind   string // the JSON error's kind, when the server's own
		want   string // in the body
	}{
		{name: "no token", path: "/mcp", status: 401, kind: "Unauthorized", want: "no bearer token"},
		{name: "wrong token", path: "/mcp", header: http.Header{"Authorization": {"Bearer " + strings.Repeat("A", len(s.token))}}, status: 401, kind: "Unauthorized", want: "not this server's"},
		{name: "basic auth", path: "/mcp", header: http.Header{"Authorization": {"Basic dXNlcjpwYXNz"}}, status: 401, kind: "Unauthorized", want: "not a bearer token"},
		{name: "token on another path", method: "GET", path: "/v1/nothing", status: 401, kind: "Unauthorized"},
		{name: "foreign host", path: "/mcp", header: http.Header{"Authorization": {auth}, "Host": {"attacker.example:" + portOf(s.host)}}, status: 403, kind: "ForbiddenHost", want: "DNS rebinding"},
		{name: "host of another port", path: "/mcp", header: http.Header{"Authorization": {auth}, "Host": {"127.0.0.1:1"}}, status: 403, kind: "ForbiddenHost"},
		{name: "foreign host on health", method: "GET", path: "/v1/health", header: http.Header{"Host": {"attacker.example:" + portOf(s.host)}}, status: 403, kind: "ForbiddenHost"},
		{name: "foreign origin", path: "/mcp", header: http.Header{"Authorization": {auth}, "Origin": {"https://attacker.example"}}, status: 403, kind: "ForbiddenOrigin", want: "attacker.example"},
		{name: "null origin", path: "/mcp", header: http.Header{"Authorization": {auth}, "Origin": {"null"}}, status: 403, kind: "ForbiddenOrigin"},
		{name: "oversized body", path: "/mcp", header: http.Header{"Authorization": {auth}}, body: func() (io.Reader, int64) {
			return bytes.NewReader(make([]byte, huge)), huge
		}, status: 413, kind: "RequestTooLarge"},
		{name: "oversized chunked body", path: "/mcp", header: http.Header{"Authorization": {auth}}, body: func() (io.Reader, int64) {
			return io.MultiReader(strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"ping","params":{"x":"`), strings.NewReader(strings.Repeat("a", int(huge))), strings.NewReader(`"}}`)), -1
		}, status: 413},
		{name: "unknown session", path: "/mcp", header: http.Header{"Authorization": {auth}, "Mcp-Session-Id": {"NOSUCHSESSION"}}, status: 404, want: "session not found"},
		{name: "bad conversation", path: "/mcp", header: http.Header{"Authorization": {auth}, "X-Toolhost-Conversation": {"../../etc"}}, status: 400, kind: "InvalidConversation"},
		{name: "unknown path", method: "GET", path: "/v2", header: http.Header{"Authorization": {auth}}, status: 404, kind: "NotFound"},
		{name: "token and loopback origin", path: "/mcp", header: http.Header{"Authorization": {auth}, "Origin": {"http://localhost:6274"}}, status: 200},
		{name: "localhost host", path: "/mcp", header: http.Header{"Authorization": {auth}, "Host": {"localhost:" + portOf(s.host)}}, status: 200},
	} {
		t.Run(tc.name, func(t *testing.T) {
			method := tc.method
			if method == "" {
				method = "POST"
			}
			var body io.Reader
			var length int64
			if method == "POST" {
				body, length = strings.NewReader(initialize), int64(len(initialize))
			}
			if tc.body != nil {
				body, length = tc.body()
			}
			status, kind, text := s.rawRequest(t, method, tc.path, body, length, tc.header)
			if status != tc.status || kind != tc.kind || !strings.Contains(text, tc.want) {
				t.Errorf("%s %s: %d kind %q\n%s\nwant %d kind %q with %q", method, tc.path, status, kind, text, tc.status, tc.kind, tc.want)
			}
		})
	}
}

func portOf(hostport string) string {
	return hostport[strings.LastIndex(hostport, ":")+1:]
}

// TestMCPHTTPSessionLimit: sessions beyond --max-sessions are refused
// with 503 and a message saying what to do; a session the client closes
// or that expires frees its place, and an expired session's id gets the
// protocol's 404.
func TestMCPHTTPSessionLimit(t *testing.T) {
	w := newWorkspace(t)
	w.file(t, "a.txt", "a\n")
	s := serveHTTP(t, w, "--max-sessions", "2", "--session-timeout", "5s")
	ctx := testContext(t)
	first := s.connect(t, ctx, nil, nil)
	second := s.connect(t, ctx, nil, nil)

	status, kind, text := s.rawRequest(t, "POST", "/mcp", strings.NewReader(initialize), int64(len(initialize)), http.Header{"Authorization": {"Bearer " + s.token}})
	if status != 503 || kind != "TooManySessions" || !strings.Contains(text, "--max-sessions") {
		t.Fatalf("a third session: %d %s %s; want 503 TooManySessions naming --max-sessions", status, kind, text)
	}
	// The client's close (DELETE) frees a place.
	first.Close()
	third := s.connect(t, ctx, nil, nil)
	if _, text, err := callText(ctx, third, "read_file", map[string]any{"path": "a.txt"}); err != nil || text != "a\n" {
		t.Fatalf("read in the session opened after a close: %q, %v", text, err)
	}
	// An idle session expires: its id is then unknown (404), and its
	// place is free.
	id := second.ID()
	time.Sleep(6500 * time.Millisecond)
	status, _, text = s.rawRequest(t, "POST", "/mcp", strings.NewReader(`{"jsonrpc":"2.0","id":2,"method":"ping"}`), -1, http.Header{"Authorization": {"Bearer " + s.token}, "Mcp-Session-Id": {id}, "Mcp-Protocol-Version": {"2025-11-25"}})
	if status != 404 {
		t.Errorf("request in an expired session: %d %s, want 404", status, text)
	}
	s.connect(t, ctx, nil, nil)
	s.connect(t, ctx, nil, nil)
}

// TestMCPHTTPConversationHeader: X-Toolhost-Conversation pins calls to a
// conversation across sessions, so a write after a read made in an
// earlier session passes the stale-file rule; without it each session is
// its own conversation.
func TestMCPHTTPConversationHeader(t *testing.T) {
	w := newWorkspace(t)
	w.file(t, "a.txt", "old\n")
	s := serveHTTP(t, w)
	ctx := testContext(t)
	accept := &mcp.ClientOptions{ElicitationHandler: func(context.Context, *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
		return &mcp.ElicitResult{Action: "accept"}, nil
	}}
	pinned := s.httpClient("X-Toolhost-Conversation", "agent-7")

	reader := s.connect(t, ctx, accept, pinned)
	if _, _, err := callText(ctx, reader, "read_file", map[string]any{"path": "a.txt"}); err != nil {
		t.Fatal(err)
	}
	reader.Close()
	other := s.connect(t, ctx, accept, nil)
	if res, text, err := callText(ctx, other, "write_file", map[string]any{"path": "a.txt", "content": "other\n"}); err != nil || !res.IsError || !strings.HasPrefix(text, "StaleFile: ") {
		t.Errorf("overwrite in an unpinned session: %v %q; want StaleFile", err, text)
	}
	writer := s.connect(t, ctx, accept, pinned)
	if res, text, err := callText(ctx, writer, "write_file", map[string]any{"path": "a.txt", "content": "pinned\n"}); err != nil || res.IsError {
		t.Fatalf("overwrite in a new session of the pinned conversation: %v %q", err, text)
	}
	if b, _ := os.ReadFile(filepath.Join(w.dir, "a.txt")); string(b) != "pinned\n" {
		t.Errorf("a.txt holds %q", b)
	}
}

// TestMCPHTTPApproval: TestMCPStdioApproval's checks with the Go SDK
// client over streamable HTTP: a write asks by elicitation with the dry
// run's diff, accept writes, decline and cancel do not.
// A client without elicitation is held for the batch API over HTTP, a
// case TestMCPTypeScriptClient_Approval covers.
func TestMCPHTTPApproval(t *testing.T) {
	checkApproval(t, serveMCPHTTP, false)
}

// TestMCPHTTPProgress: TestMCPStdioProgress's checks over streamable
// HTTP: output chunks and keepalives reach the client on its request's
// stream, and only under the request's token.
func TestMCPHTTPProgress(t *testing.T) {
	checkProgress(t, serveMCPHTTP)
}

// TestMCPHTTPCancelRunCommand: TestMCPStdioCancelRunCommand's checks
// over streamable HTTP: notifications/cancelled, posted apart from the
// call's request, kills the command's shell and child within seconds,
// and the server goes on answering. The Go SDK client
// closes the request's response stream on cancel, so the server's
// Cancelled answer is seen over HTTP by the TypeScript client only
// (TestMCPTypeScriptClient_CancelsACommand).
func TestMCPHTTPCancelRunCommand(t *testing.T) {
	checkCancelRunCommand(t, serveMCPHTTP, false)
}

// TestMCPHTTPConcurrentSessions: 200 sessions open at once, each reading
// its own file, every result correct (done-when).
func TestMCPHTTPConcurrentSessions(t *testing.T) {
	const n = 200
	w := newWorkspace(t)
	for i := range n {
		w.file(t, fmt.Sprintf("f/%03d.txt", i), fmt.Sprintf("file %d\n%s\n", i, strings.Repeat(fmt.Sprint(i), 50)))
	}
	s := serveHTTP(t, w, "--max-sessions", "256")
	ctx := testContext(t)
	hc := s.httpClient()
	hc.Transport.(headers).base.(*http.Transport).MaxIdleConnsPerHost = 2 * n
	start := time.Now()
	sessions := make([]*mcp.ClientSession, n)
	errs := make(chan error, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			client := mcp.NewClient(&mcp.Implementation{Name: "toolhost-e2e", Version: "1"}, nil)
			cs, err := client.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: s.url, HTTPClient: hc, MaxRetries: -1}, nil)
			if err != nil {
				errs <- fmt.Errorf("session %d: connect: %w", i, err)
				return
			}
			sessions[i] = cs
		})
	}
	wg.Wait()
	opened := time.Since(start)
	for i, cs := range sessions {
		if cs == nil {
			continue
		}
		wg.Go(func() {
			want := fmt.Sprintf("file %d\n%s\n", i, strings.Repeat(fmt.Sprint(i), 50))
			res, text, err := callText(ctx, cs, "read_file", map[string]any{"path": fmt.Sprintf("f/%03d.txt", i)})
			switch {
			case err != nil:
				errs <- fmt.Errorf("session %d: read: %w", i, err)
			case res.IsError || text != want:
				errs <- fmt.Errorf("session %d: read gave %q, want %q", i, text, want)
			}
		})
	}
	wg.Wait()
	read := time.Since(start) - opened
	for _, cs := range sessions {
		if cs != nil {
			wg.Go(func() { cs.Close() })
		}
	}
	wg.Wait()
	close(errs)
	failed := 0
	for err := range errs {
		if failed++; failed <= 5 {
			t.Error(err)
		}
	}
	if failed > 0 {
		t.Fatalf("%d of %d sessions failed", failed, n)
	}
	t.Logf("%d sessions: opened in %v, %d concurrent reads in %v, all closed after %v", n, opened.Round(time.Millisecond), n, read.Round(time.Millisecond), time.Since(start).Round(time.Millisecond))
}

// httpSleep is the command the shutdown test runs, odd enough to find
// among the machine's processes.
const httpSleep = "31.417"

// TestMCPHTTPShutdown: SIGTERM while a run_command runs stops the server
// promptly with exit 0, kills the command, and still answers the call in
// flight.
func TestMCPHTTPShutdown(t *testing.T) {
	w := newWorkspace(t).withConfig(t, "[tools.approval]\nmode = \"auto\"\ndenylist = []\n")
	s := serveHTTP(t, w, "--allow", "run_command")
	ctx := testContext(t)
	cs := s.connect(t, ctx, nil, nil)
	type answer struct {
		res  *mcp.CallToolResult
		text string
		err  error
	}
	done := make(chan answer, 1)
	go func() {
		res, text, err := callText(ctx, cs, "run_command", map[string]any{"command": "touch started; sleep " + httpSleep + "; touch finished"})
		done <- answer{res, text, err}
	}()
	deadline := time.Now().Add(30 * time.Second)
	for !fileExists(filepath.Join(w.dir, "started")) || !processRunning(t, "sleep", httpSleep) {
		select {
		case a := <-done:
			t.Fatalf("the command ended before it ran: %v %q", a.err, a.text)
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("the command never started\nstderr: %s", s.stderr)
		}
		time.Sleep(20 * time.Millisecond)
	}
	signalled := time.Now()
	s.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case err := <-s.exited:
		s.exited <- err // for the cleanup
		if err != nil {
			t.Errorf("toolhost serve --http after SIGTERM: %v, want exit 0", err)
		}
	case <-time.After(15 * time.Second):
		t.Fatalf("toolhost serve --http still runs 15 s after SIGTERM")
	}
	t.Logf("SIGTERM to exit: %v", time.Since(signalled).Round(time.Millisecond))
	if processRunning(t, "sleep", httpSleep) {
		t.Error("the command's process outlived the server")
	}
	select {
	case a := <-done:
		if a.err != nil || a.res == nil || !a.res.IsError || !strings.HasPrefix(a.text, "Cancelled: ") || !strings.Contains(a.text, "shutting down") {
			t.Errorf("the call in flight: err %v, result %+v; want an answer saying it was stopped", a.err, a.res)
		}
		t.Logf("answer to the call in flight: %q", a.text)
	case <-time.After(5 * time.Second):
		t.Error("the call in flight got no answer")
	}
	if fileExists(filepath.Join(w.dir, "finished")) {
		t.Error("the command ran to its end")
	}
}

func fileExists(p string) bool {
	_, err := os.Stat(p)
	return err == nil
}

// processRunning reports whether a process runs exactly argv.
func processRunning(t *testing.T, argv ...string) bool {
	t.Helper()
	cmdlines, err := filepath.Glob("/proc/[0-9]*/cmdline")
	if err != nil {
		t.Fatal(err)
	}
	want := []byte(strings.Join(argv, "\x00") + "\x00")
	for _, c := range cmdlines {
		if b, err := os.ReadFile(c); err == nil && bytes.Equal(b, want) {
			return true
		}
	}
	return false
}

// TestMCPHTTPServeUsage: an address beyond loopback needs --listen-any,
// and then comes with a warning; a short $TOOLHOST_TOKEN is refused; a
// fixed token is not echoed.
func TestMCPHTTPServeUsage(t *testing.T) {
	w := newWorkspace(t)
	for _, tc := range []struct {
		args []string
		env  []string
		want string
	}{
		{args: []string{"serve", "--http", "0.0.0.0:0"}, want: "not a loopback address"},
		{args: []string{"serve", "--http", ":0"}, want: "every interface is not a loopback address"},
		{args: []string{"serve", "--http", "127.0.0.1:0"}, env: []string{"TOOLHOST_TOKEN=short"}, want: "at least 16"},
	} {
		out, stderr, code := w.withEnv(tc.env...).run(t, tc.args...)
		if code != 2 || out != "" || !strings.Contains(stderr, tc.want) {
			t.Errorf("toolhost %v: exit %d, stdout %q, stderr %q; want exit 2 and %q", tc.args, code, out, stderr, tc.want)
		}
	}

	fixed := "fixed-token-0123456789"
	s := serveHTTP(t, w.withEnv("TOOLHOST_TOKEN="+fixed), "--listen-any")
	if strings.Contains(s.stderr.String(), fixed) || !strings.Contains(s.stderr.String(), `--header "Authorization: Bearer $TOOLHOST_TOKEN"`) {
		t.Errorf("stderr echoes the fixed token or lacks the connect line naming $TOOLHOST_TOKEN:\n%s", s.stderr)
	}
	s.token = fixed
	if status, _, text := s.rawRequest(t, "POST", "/mcp", strings.NewReader(initialize), int64(len(initialize)), http.Header{"Authorization": {"Bearer " + fixed}}); status != 200 {
		t.Errorf("initialize with the fixed token: %d %s", status, text)
	}

	wide := serveHTTPAt(t, w, "0.0.0.0:0", "--listen-any")
	if !strings.Contains(wide.String(), "WARNING: listening on 0.0.0.0:") {
		t.Errorf("--listen-any on 0.0.0.0 gave no warning:\n%s", wide)
	}
}

// serveHTTPAt starts toolhost serve --http addr, waits until it listens
// and stops it, returning its stderr.
func serveHTTPAt(t *testing.T, w *workspace, addr string, args ...string) *lockedBuffer {
	t.Helper()
	cmd := w.command(w.argv(append([]string{"serve", "--http", addr}, args...)...)...)
	out := &lockedBuffer{}
	cmd.Stderr = out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() {
		cmd.Process.Signal(syscall.SIGTERM)
		cmd.Wait()
	}()
	for deadline := time.Now().Add(time.Minute); !strings.Contains(out.String(), "connect Claude Code: "); time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("toolhost serve --http %s printed no endpoint:\n%s", addr, out)
		}
	}
	return out
}
