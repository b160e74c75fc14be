package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// mcpServer is `toolhost serve` in a workspace, driven by the official
// Go SDK's client: over stdio (serveMCP) or streamable
// HTTP (serveMCPHTTP).
type mcpServer struct {
	session *mcp.ClientSession
	stderr  *lockedBuffer
	// wire is every message the client wrote and read, one a line
	// ("write: {...}", "read: {...}"), including answers the client drops.
	wire  *lockedBuffer
	ready time.Duration // spawn to an answered tools/list, when measured
}

// mcpConnect starts toolhost serve with args in w over one transport
// (serveMCP, serveMCPHTTP) and connects the Go SDK client with opts, so
// the TestMCPStdio* and TestMCPHTTP* tests share their checks ("Done when": the Go SDK client over HTTP for the same).
type mcpConnect func(t *testing.T, w *workspace, opts *mcp.ClientOptions, args ...string) *mcpServer

// lockedBuffer is the server's stderr, written by the process while the
// test reads it.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// serveMCP starts toolhost serve --stdio with args and connects a client
// with opts (an ElicitationHandler makes it a client that can be asked).
func serveMCP(t *testing.T, w *workspace, opts *mcp.ClientOptions, args ...string) *mcpServer {
	t.Helper()
	cmd := w.command(w.argv(append([]string{"serve", "--stdio"}, args...)...)...)
	s := &mcpServer{stderr: &lockedBuffer{}, wire: &lockedBuffer{}}
	cmd.Stderr = s.stderr
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	client := mcp.NewClient(&mcp.Implementation{Name: "toolhost-e2e", Version: "1"}, opts)
	start := time.Now()
	session, err := client.Connect(ctx, &mcp.LoggingTransport{Transport: &mcp.CommandTransport{Command: cmd}, Writer: s.wire}, nil)
	if err != nil {
		t.Fatalf("connecting to toolhost serve --stdio: %v\nstderr: %s", err, s.stderr)
	}
	s.session = session
	t.Cleanup(func() {
		session.Close()
		if t.Failed() {
			t.Logf("toolhost serve stderr:\n%s", s.stderr)
		}
	})
	if _, err := session.ListTools(ctx, nil); err != nil {
		t.Fatalf("tools/list: %v", err)
	}
	s.ready = time.Since(start)
	return s
}

// call runs tools/call and returns the result and its text content.
func (s *mcpServer) call(t *testing.T, ctx context.Context, tool string, args map[string]any) (*mcp.CallToolResult, string) {
	t.Helper()
	res, err := s.session.CallTool(ctx, &mcp.CallToolParams{Name: tool, Arguments: args})
	if err != nil {
		t.Fatalf("tools/call %s: %v", tool, err)
	}
	var text strings.Builder
	for _, c := range res.Content {
		tc, ok := c.(*mcp.TextContent)
		if !ok {
			t.Fatalf("tools/call %s: content %T, want text", tool, c)
		}
		text.WriteString(tc.Text)
	}
	return res, text.String()
}

func testContext(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	t.Cleanup(cancel)
	return ctx
}

// TestMCPStdioListsTools: tools/list offers the policy's tools with their
// schemas and all four hints, so clients' review modes let reads through.
// The protocol is capped at 2025-11-25: the SDK client
// asks for 2026-07-28 first and must fall back.
func TestMCPStdioListsTools(t *testing.T) {
	w := newWorkspace(t)
	s := serveMCP(t, w, nil)
	t.Logf("spawn to tools/list answered: %v", s.ready)
	if v := s.session.InitializeResult().ProtocolVersion; v != "2025-11-25" {
		t.Errorf("negotiated protocol %s, want 2025-11-25 (approvals by in-request elicitation only)", v)
	}
	res, err := s.session.ListTools(testContext(t), nil)
	if err != nil {
		t.Fatal(err)
	}
	tools := map[string]*mcp.Tool{}
	for _, tool := range res.Tools {
		tools[tool.Name] = tool
	}
	for _, name := range []string{"read_file", "write_file", "list_directory", "apply_patch"} {
		if tools[name] == nil {
			t.Fatalf("tools/list lacks %s; it lists %v", name, toolNames(res.Tools))
		}
	}
	if tools["run_command"] != nil {
		t.Error("tools/list offers run_command, which the default policy denies")
	}
	type hints struct{ readOnly, destructive, idempotent, openWorld bool }
	for _, tc := range []struct {
		tool string
		want hints
	}{
		{"read_file", hints{readOnly: true, idempotent: true}},
		{"list_directory", hints{readOnly: true, idempotent: true}},
		{"write_file", hints{destructive: true}},
		{"apply_patch", hints{destructive: true}},
	} {
		tool := tools[tc.tool]
		a := tool.Annotations
		if a == nil || a.DestructiveHint == nil || a.OpenWorldHint == nil {
			t.Errorf("%s: annotations %+v, want all four hints set", tc.tool, a)
			continue
		}
		got := hints{a.ReadOnlyHint, *a.DestructiveHint, a.IdempotentHint, *a.OpenWorldHint}
		if got != tc.want {
			t.Errorf("%s: hints %+v, want %+v", tc.tool, got, tc.want)
		}
		schema, _ := tool.InputSchema.(map[string]any)
		props, _ := schema["properties"].(map[string]any)
		if schema["type"] != "object" || props["path"] == nil && props["patch"] == nil {
			t.Errorf("%s: inputSchema %v, want the manifest's object schema", tc.tool, tool.InputSchema)
		}
	}
}

func toolNames(ts []*mcp.Tool) []string {
	var out []string
	for _, t := range ts {
		out = append(out, t.Name)
	}
	return out
}

// TestMCPStdioResults: file text arrives whole as text, never as a lossy
// structuredContent (a JSON file stays text); a listing is compact text,
// with its entries as structuredContent only when asked; an escape is an isError result a model can read.
func TestMCPStdioResults(t *testing.T) {
	w := newWorkspace(t)
	w.file(t, "notes.txt", "first line\nsecond line\n")
	w.file(t, "data.json", "{\n  \"b\": 1,\n  \"a\": [1, 2]\n}\n")
	s := serveMCP(t, w, nil)
	ctx := testContext(t)

	res, text := s.call(t, ctx, "read_file", map[string]any{"path": "notes.txt"})
	if res.IsError || text != "first line\nsecond line\n" {
		t.Errorf("read_file notes.txt: isError %v, text %q", res.IsError, text)
	}
	res, text = s.call(t, ctx, "read_file", map[string]any{"path": "data.json"})
	if res.IsError || text != "{\n  \"b\": 1,\n  \"a\": [1, 2]\n}\n" || res.StructuredContent != nil {
		t.Errorf("read_file data.json: isError %v, text %q, structuredContent %v; want the file's text and no structuredContent", res.IsError, text, res.StructuredContent)
	}

	res, text = s.call(t, ctx, "list_directory", map[string]any{})
	if res.IsError || !strings.Contains(text, "notes.txt  23\n") {
		t.Fatalf("list_directory: isError %v, text %q; want notes.txt listed like ls", res.IsError, text)
	}
	if res.StructuredContent != nil {
		t.Errorf("list_directory: structuredContent %v; want none unless asked", res.StructuredContent)
	}
	res, _ = s.call(t, ctx, "list_directory", map[string]any{"structured": true})
	listing, _ := res.StructuredContent.(map[string]any)
	if entries, _ := listing["entries"].([]any); res.IsError || len(entries) != 2 {
		t.Errorf("list_directory structured: structuredContent %v; want its two entries", res.StructuredContent)
	}

	res, text = s.call(t, ctx, "read_file", map[string]any{"path": "../x"})
	if !res.IsError || !strings.HasPrefix(text, "SandboxViolation: ") || !strings.Contains(text, `"../x"`) || res.StructuredContent != nil {
		t.Errorf("read_file ../x: isError %v, text %q; want an isError result starting SandboxViolation and naming the path", res.IsError, text)
	}
}

// TestMCPStdioApproval: a write that needs confirmation asks the client by
// elicitation with the summary, the risk, the reason, the whole content
// and the diff of a dry run; accept writes, decline does not; a client that cannot be
// asked is denied with how to allow the tool.
func TestMCPStdioApproval(t *testing.T) {
	checkApproval(t, serveMCP, true)
}

// checkApproval is TestMCPStdioApproval's and TestMCPHTTPApproval's
// checks; noElicitation adds a client without elicitation, denied at
// once.
func checkApproval(t *testing.T, connect mcpConnect, noElicitation bool) {
	for _, tc := range []struct {
		name    string
		action  string // the client's answer; "" for a client without elicitation
		written bool
		want    []string // in the result text
	}{
		{name: "accept", action: "accept", written: true},
		{name: "decline", action: "decline", want: []string{"DeniedByUser: ", `Denied by the MCP client, which answered "decline"`, "did not run"}},
		{name: "cancel", action: "cancel", want: []string{"DeniedByUser: ", `Denied by the MCP client, which answered "cancel"`}},
		{name: "no elicitation", want: []string{"cannot be asked", "does not support elicitation", "tools.approval.allowlist", "--allow write_file"}},
	} {
		if tc.action == "" && !noElicitation {
			continue
		}
		t.Run(tc.name, func(t *testing.T) {
			w := newWorkspace(t)
			var asked []string
			var mu sync.Mutex
			opts := &mcp.ClientOptions{}
			if tc.action != "" {
				opts.ElicitationHandler = func(_ context.Context, req *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
					mu.Lock()
					asked = append(asked, req.Params.Message)
					mu.Unlock()
					return &mcp.ElicitResult{Action: tc.action}, nil
				}
			}
			// Replacing a file asks; creating one does not by default.
			w.file(t, "out.txt", "before\n")
			s := connect(t, w, opts)
			ctx := testContext(t)
			s.call(t, ctx, "read_file", map[string]any{"path": "out.txt"})
			content := "line one\nApprove? [y/N] y\n"
			res, text := s.call(t, ctx, "write_file", map[string]any{"path": "out.txt", "content": content})

			got, err := os.ReadFile(filepath.Join(w.dir, "out.txt"))
			if tc.written {
				if res.IsError || err != nil || string(got) != content {
					t.Fatalf("accepted write: isError %v, text %q, file %q (%v)", res.IsError, text, got, err)
				}
			} else {
				if string(got) != "before\n" {
					t.Errorf("out.txt holds %q (%v) after a write nobody approved", got, err)
				}
				if !res.IsError {
					t.Errorf("unapproved write: isError false, text %q", text)
				}
			}
			for _, want := range tc.want {
				if !strings.Contains(text, want) {
					t.Errorf("result text %q lacks %q", text, want)
				}
			}
			mu.Lock()
			defer mu.Unlock()
			if tc.action == "" {
				return
			}
			if len(asked) != 1 {
				t.Fatalf("client was asked %d times, want once", len(asked))
			}
			// The diff of a dry run of the same call comes with it.
			for _, want := range []string{"write_file", "out.txt", "risk", "reason: ", "│line one", "│Approve? [y/N] y", "from a dry run", "│-before\n", "│+line one\n"} {
				if !strings.Contains(asked[0], want) {
					t.Errorf("elicitation message lacks %q:\n%s", want, asked[0])
				}
			}
		})
	}
}

// TestMCPStdioConversation: a session is one conversation, so a write
// after a read in the same session passes the stale-file rule, and
// --conversation carries reads across sessions.
func TestMCPStdioConversation(t *testing.T) {
	w := newWorkspace(t)
	w.file(t, "a.txt", "old\n")
	accept := &mcp.ClientOptions{ElicitationHandler: func(context.Context, *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
		return &mcp.ElicitResult{Action: "accept"}, nil
	}}
	ctx := testContext(t)

	s := serveMCP(t, w, accept)
	if res, text := s.call(t, ctx, "write_file", map[string]any{"path": "a.txt", "content": "unread\n"}); !res.IsError || !strings.HasPrefix(text, "StaleFile: ") {
		t.Fatalf("overwrite of an unread file: isError %v, text %q; want StaleFile", res.IsError, text)
	}
	s.call(t, ctx, "read_file", map[string]any{"path": "a.txt"})
	if res, text := s.call(t, ctx, "write_file", map[string]any{"path": "a.txt", "content": "same session\n"}); res.IsError {
		t.Fatalf("overwrite after a read in the same session: %s", text)
	}

	pinned := serveMCP(t, w, accept, "--conversation", "pinned")
	pinned.call(t, ctx, "read_file", map[string]any{"path": "a.txt"})
	pinned.session.Close()
	again := serveMCP(t, w, accept, "--conversation", "pinned")
	if res, text := again.call(t, ctx, "write_file", map[string]any{"path": "a.txt", "content": "pinned\n"}); res.IsError {
		t.Fatalf("overwrite in a new session of the pinned conversation: %s", text)
	}
	other := serveMCP(t, w, accept)
	if res, text := other.call(t, ctx, "write_file", map[string]any{"path": "a.txt", "content": "other\n"}); !res.IsError || !strings.HasPrefix(text, "StaleFile: ") {
		t.Errorf("overwrite in a new unpinned session: isError %v, text %q; want StaleFile", res.IsError, text)
	}
}

// TestMCPStdioCancelRunCommand: notifications/cancelled stops a running
// command, its shell and the shell's child killed within seconds, the
// server still answers the cancelled request with a Cancelled result
// (which the client drops, so it is read off the wire), and it goes on
// answering.
func TestMCPStdioCancelRunCommand(t *testing.T) {
	checkCancelRunCommand(t, serveMCP, true)
}

// cancelCommand prints its shell's pid and its child's, then waits for
// the child, which sleeps long enough never to end by itself.
const cancelCommand = "echo shell=$$; sleep 300.25 & echo child=$!; wait; touch finished"

// checkCancelRunCommand is TestMCPStdioCancelRunCommand's and
// TestMCPHTTPCancelRunCommand's checks: the client learns the pids from
// the call's progress notifications, then cancels the call's context
// (the SDK sends notifications/cancelled). readsAnswer says the client
// still reads the server's answer to the cancelled request: over stdio
// it does (and drops it); over HTTP the SDK ends the request's response
// stream with the context, so the answer never reaches it. The command
// runs unconfined so that the pids it prints are the host's (see workspace.unconfined).
func checkCancelRunCommand(t *testing.T, connect mcpConnect, readsAnswer bool) {
	w := newWorkspace(t).withConfig(t, "[tools.approval]\nmode = \"auto\"\ndenylist = []\n").unconfined()
	var mu sync.Mutex
	var output strings.Builder
	opts := &mcp.ClientOptions{ProgressNotificationHandler: func(_ context.Context, req *mcp.ProgressNotificationClientRequest) {
		mu.Lock()
		defer mu.Unlock()
		output.WriteString(req.Params.Message)
	}}
	s := connect(t, w, opts, "--allow", "run_command", "--log-level", "info")
	ctx, cancel := context.WithCancel(testContext(t))
	done := make(chan error, 1)
	go func() {
		p := &mcp.CallToolParams{Name: "run_command", Arguments: map[string]any{"command": cancelCommand}}
		p.SetProgressToken("cancel")
		_, err := s.session.CallTool(ctx, p)
		done <- err
	}()
	var shell, child int
	for deadline := time.Now().Add(30 * time.Second); shell == 0 || child == 0; time.Sleep(20 * time.Millisecond) {
		mu.Lock()
		out := output.String()
		mu.Unlock()
		if strings.Contains(out, "child=") && strings.HasSuffix(out, "\n") {
			shell, child = pidAfter(out, "shell="), pidAfter(out, "child=")
		}
		select {
		case err := <-done:
			t.Fatalf("the command ended before the cancel: %v; output %q", err, out)
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("the command did not print its pids within 30 s; output %q\nstderr: %s", out, s.stderr)
		}
	}
	wantWorkspaceProcess(t, w, shell)
	wantWorkspaceProcess(t, w, child)
	cancelled := time.Now()
	cancel()
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled tools/call returned %v, want context.Canceled", err)
	}
	// Both processes are killed with the call, promptly.
	waitProcessGone(t, shell, "/bin/sh\x00-c\x00", 10*time.Second)
	waitProcessGone(t, child, "sleep\x00300.25\x00", 10*time.Second)
	t.Logf("cancel to the command's processes gone: %v", time.Since(cancelled))

	// The server answers the cancelled request, after the fact.
	if readsAnswer {
		answer := lateAnswer(t, s.wire, cancelCommand, 10*time.Second)
		t.Logf("the server's answer to the cancelled request, %v after the cancel: %s", time.Since(cancelled).Round(time.Millisecond), answer)
		if !strings.Contains(answer, `"isError":true`) || !strings.Contains(answer, `"text":"Cancelled: `) || !strings.Contains(answer, "the MCP client cancelled the request (notifications/cancelled)") {
			t.Errorf("answer to the cancelled request %s; want an isError Cancelled result", answer)
		}
	}

	// toolhost's log says the call was stopped because its client cancelled it.
	for deadline := time.Now().Add(5 * time.Second); !strings.Contains(s.stderr.String(), "tools/call stopped by its client"); time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("toolhost's log does not say the call was stopped by its client:\n%s", s.stderr)
		}
	}
	if log := s.stderr.String(); !strings.Contains(log, "the MCP client cancelled the request (notifications/cancelled)") {
		t.Errorf("toolhost's log lacks why the call stopped:\n%s", log)
	}
	res, text := s.call(t, testContext(t), "run_command", map[string]any{"command": "echo after"})
	if res.IsError || !strings.Contains(text, "after") {
		t.Errorf("call after the cancel: isError %v, text %q", res.IsError, text)
	}
	if fileExists(filepath.Join(w.dir, "finished")) {
		t.Error("the cancelled command ran to its end")
	}
}

// lateAnswer waits up to limit for the response the client read to the
// tools/call it wrote with command, and returns it as read off the wire.
func lateAnswer(t *testing.T, wire *lockedBuffer, command string, limit time.Duration) string {
	t.Helper()
	type message struct {
		ID     json.RawMessage `json:"id"`
		Method string          `json:"method"`
		Params struct {
			Arguments struct {
				Command string `json:"command"`
			} `json:"arguments"`
		} `json:"params"`
		Result json.RawMessage `json:"result"`
	}
	deadline := time.Now().Add(limit)
	for {
		var id json.RawMessage
		for line := range strings.Lines(wire.String()) {
			dir, msg, _ := strings.Cut(line, ": ")
			var m message
			if json.Unmarshal([]byte(msg), &m) != nil {
				continue
			}
			switch {
			case dir == "write" && m.Method == "tools/call" && m.Params.Arguments.Command == command:
				id = m.ID
			case dir == "read" && id != nil && bytes.Equal(m.ID, id) && m.Result != nil:
				return string(m.Result)
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("the client read no answer to the cancelled tools/call within %v; the wire:\n%s", limit, wire)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// TestMCPStdioProgress: a tools/call with a progress token gets
// run_command's output as notifications/progress, a chunk a message, and
// a call printing nothing gets keepalives every --progress-interval; a
// call without a token gets none.
func TestMCPStdioProgress(t *testing.T) {
	checkProgress(t, serveMCP)
}

// checkProgress is TestMCPStdioProgress's and TestMCPHTTPProgress's
// checks.
func checkProgress(t *testing.T, connect mcpConnect) {
	w := newWorkspace(t).withConfig(t, "[tools.approval]\nmode = \"auto\"\ndenylist = []\n")
	var mu sync.Mutex
	got := map[any][]*mcp.ProgressNotificationParams{}
	opts := &mcp.ClientOptions{ProgressNotificationHandler: func(_ context.Context, req *mcp.ProgressNotificationClientRequest) {
		mu.Lock()
		defer mu.Unlock()
		got[req.Params.ProgressToken] = append(got[req.Params.ProgressToken], req.Params)
	}}
	s := connect(t, w, opts, "--allow", "run_command", "--progress-interval", "200ms")
	ctx := testContext(t)
	// notes waits for the SDK to hand over at least n notifications of
	// token (it delivers them apart from the result).
	notes := func(token string, n int) []*mcp.ProgressNotificationParams {
		for deadline := time.Now().Add(2 * time.Second); ; time.Sleep(10 * time.Millisecond) {
			mu.Lock()
			ns := slices.Clone(got[token])
			mu.Unlock()
			if len(ns) >= n || time.Now().After(deadline) {
				return ns
			}
		}
	}
	callWith := func(token, command string) string {
		t.Helper()
		p := &mcp.CallToolParams{Name: "run_command", Arguments: map[string]any{"command": command}}
		if token != "" {
			p.SetProgressToken(token)
		}
		res, err := s.session.CallTool(ctx, p)
		if err != nil || res.IsError {
			t.Fatalf("run_command %q: %v %+v", command, err, res)
		}
		return res.Content[0].(*mcp.TextContent).Text
	}

	if text := callWith("lines", "for i in 1 2 3; do echo line$i; sleep 0.3; done"); !strings.Contains(text, "line3") {
		t.Errorf("result %q lacks the output", text)
	}
	var lines []string
	ns := notes("lines", 3)
	for i, n := range ns {
		if i > 0 && n.Progress <= ns[i-1].Progress {
			t.Errorf("progress %v after %v: not increasing", n.Progress, ns[i-1].Progress)
		}
		if strings.Contains(n.Message, "line") {
			lines = append(lines, n.Message)
		}
	}
	if len(lines) < 3 || !strings.Contains(strings.Join(lines, ""), "line1\nline2\nline3\n") {
		t.Errorf("progress messages %q, want at least 3 carrying line1, line2, line3 in order", lines)
	}

	start := time.Now()
	callWith("quiet", "sleep 1")
	took := time.Since(start)
	ns = notes("quiet", 3)
	if most := int(took / (200 * time.Millisecond)); len(ns) < 3 || len(ns) > most {
		t.Errorf("%d keepalives over a call of %v at 200 ms, want 3 to %d", len(ns), took, most)
	}
	for _, n := range ns {
		if !strings.Contains(n.Message, "running") && !strings.Contains(n.Message, "planning") {
			t.Errorf("keepalive %q does not say what the call does", n.Message)
		}
	}

	callWith("", "echo untracked")
	time.Sleep(300 * time.Millisecond)
	mu.Lock()
	defer mu.Unlock()
	if len(got) != 2 {
		t.Errorf("notifications under tokens %v, want only lines and quiet: a call without a token gets none", slices.Collect(maps.Keys(got)))
	}
}

// TestMCPServeUsage: serve without a transport is a usage error saying
// what to pass (--stdio and --http together serve both, so a stdio
// client's calls can be approved through /v1).
func TestMCPServeUsage(t *testing.T) {
	w := newWorkspace(t)
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"serve"}, "pass --stdio"},
		{[]string{"serve", "--stdio", "--hold", "-1s"}, "or 0 to deny at once"},
	} {
		out, stderr, code := w.run(t, tc.args...)
		if code != 2 || out != "" || !strings.Contains(stderr, tc.want) {
			t.Errorf("toolhost %v: exit %d, stdout %q, stderr %q; want exit 2 and %q on stderr", tc.args, code, out, stderr, tc.want)
		}
	}
}
