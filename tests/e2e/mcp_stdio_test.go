package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"maps"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// mcpServer is `toolhost serve --stdio` in a workspace, driven by the
// official Go SDK's client (issue 11 item 1).
type mcpServer struct {
	session *mcp.ClientSession
	stderr  *lockedBuffer
	ready   time.Duration // spawn to an answered tools/list, when measured
}

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
	s := &mcpServer{stderr: &lockedBuffer{}}
	cmd.Stderr = s.stderr
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	client := mcp.NewClient(&mcp.Implementation{Name: "toolhost-e2e", Version: "1"}, opts)
	start := time.Now()
	session, err := client.Connect(ctx, &mcp.CommandTransport{Command: cmd}, nil)
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
// schemas and all four hints, so clients' review modes let reads through
// (issue 11 item 1). The protocol is capped at 2025-11-25: the SDK client
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
// structuredContent (a JSON file stays text); a listing carries both,
// equivalent; an escape is an isError result a model can read (issue 11
// item 1).
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
	var fromText any
	if err := json.Unmarshal([]byte(text), &fromText); err != nil || res.IsError {
		t.Fatalf("list_directory: isError %v, text %q is not JSON (%v)", res.IsError, text, err)
	}
	if !reflect.DeepEqual(res.StructuredContent, fromText) {
		t.Errorf("list_directory: structuredContent %v differs from the text's JSON %v", res.StructuredContent, fromText)
	}
	if !strings.Contains(text, `"notes.txt"`) {
		t.Errorf("list_directory: %s lacks notes.txt", text)
	}

	res, text = s.call(t, ctx, "read_file", map[string]any{"path": "../x"})
	if !res.IsError || !strings.HasPrefix(text, "SandboxViolation: ") || !strings.Contains(text, `"../x"`) || res.StructuredContent != nil {
		t.Errorf("read_file ../x: isError %v, text %q; want an isError result starting SandboxViolation and naming the path", res.IsError, text)
	}
}

// TestMCPStdioApproval: a write that needs confirmation asks the client by
// elicitation with the summary, the risk, the reason, the whole content
// and the diff of a dry run; accept writes, decline does not; a client that cannot be
// asked is denied with how to allow the tool (issue 11 item 4).
func TestMCPStdioApproval(t *testing.T) {
	for _, tc := range []struct {
		name    string
		action  string // the client's answer; "" for a client without elicitation
		written bool
		want    []string // in the result text
	}{
		{name: "accept", action: "accept", written: true},
		{name: "decline", action: "decline", want: []string{"SandboxViolation: ", "Denied by the MCP client's user", "decline", "did not run"}},
		{name: "cancel", action: "cancel", want: []string{"Denied by the MCP client's user", "cancel"}},
		{name: "no elicitation", want: []string{"cannot be asked", "does not support elicitation", "tools.approval.allowlist", "--allow write_file"}},
	} {
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
			s := serveMCP(t, w, opts)
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
// --conversation carries reads across sessions (issue 11 item 6).
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
// command, its process killed, and the server goes on answering (issue
// 11 item 1; the full item 5 adds progress and the cancelled result).
func TestMCPStdioCancelRunCommand(t *testing.T) {
	w := newWorkspace(t).withConfig(t, "[tools.approval]\nmode = \"auto\"\ndenylist = []\n")
	accept := &mcp.ClientOptions{ElicitationHandler: func(context.Context, *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
		return &mcp.ElicitResult{Action: "accept"}, nil
	}}
	s := serveMCP(t, w, accept)
	marker := filepath.Join(w.dir, "started")
	ctx, cancel := context.WithCancel(testContext(t))
	done := make(chan error, 1)
	go func() {
		_, err := s.session.CallTool(ctx, &mcp.CallToolParams{Name: "run_command", Arguments: map[string]any{
			"command": "touch started; sleep " + mcpSleep + "; touch finished",
		}})
		done <- err
	}()
	deadline := time.Now().Add(30 * time.Second)
	for {
		if _, err := os.Stat(marker); err == nil && sleepRunning(t) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the command never started\nstderr: %s", s.stderr)
		}
		time.Sleep(20 * time.Millisecond)
	}
	cancelled := time.Now()
	cancel()
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled tools/call returned %v, want context.Canceled", err)
	}
	// The command's process is killed with the call, promptly.
	for sleepRunning(t) {
		if time.Since(cancelled) > 10*time.Second {
			t.Fatalf("the command still runs %v after the cancel", time.Since(cancelled))
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Logf("cancel to the command's process gone: %v", time.Since(cancelled))
	res, text := s.call(t, testContext(t), "run_command", map[string]any{"command": "echo after"})
	if res.IsError || !strings.Contains(text, "after") {
		t.Errorf("call after the cancel: isError %v, text %q", res.IsError, text)
	}
	if _, err := os.Stat(filepath.Join(w.dir, "finished")); err == nil {
		t.Error("the cancelled command ran to its end")
	}
}

// TestMCPStdioProgress: a tools/call with a progress token gets
// run_command's output as notifications/progress, a chunk a message, and
// a call printing nothing gets keepalives every --progress-interval; a
// call without a token gets none (issue 11 item 5).
func TestMCPStdioProgress(t *testing.T) {
	w := newWorkspace(t).withConfig(t, "[tools.approval]\nmode = \"auto\"\ndenylist = []\n")
	var mu sync.Mutex
	got := map[any][]*mcp.ProgressNotificationParams{}
	opts := &mcp.ClientOptions{ProgressNotificationHandler: func(_ context.Context, req *mcp.ProgressNotificationClientRequest) {
		mu.Lock()
		defer mu.Unlock()
		got[req.Params.ProgressToken] = append(got[req.Params.ProgressToken], req.Params)
	}}
	s := serveMCP(t, w, opts, "--allow", "run_command", "--progress-interval", "200ms")
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

// mcpSleep is the cancelled command's sleep, odd enough to find it among
// the machine's processes.
const mcpSleep = "29.713"

// sleepRunning reports whether a process runs `sleep mcpSleep`.
func sleepRunning(t *testing.T) bool {
	t.Helper()
	dirs, err := filepath.Glob("/proc/[0-9]*/cmdline")
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range dirs {
		b, err := os.ReadFile(d)
		if err == nil && bytes.Equal(b, []byte("sleep\x00"+mcpSleep+"\x00")) {
			return true
		}
	}
	return false
}

// TestMCPServeUsage: serve without a transport, or with --http before it
// exists, is a usage error saying what to pass.
func TestMCPServeUsage(t *testing.T) {
	w := newWorkspace(t)
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"serve"}, "pass --stdio"},
		{[]string{"serve", "--stdio", "--http", "127.0.0.1:0"}, "not both"},
	} {
		out, stderr, code := w.run(t, tc.args...)
		if code != 2 || out != "" || !strings.Contains(stderr, tc.want) {
			t.Errorf("toolhost %v: exit %d, stdout %q, stderr %q; want exit 2 and %q on stderr", tc.args, code, out, stderr, tc.want)
		}
	}
}
