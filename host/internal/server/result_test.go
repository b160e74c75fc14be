package server

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolhost/toolhost/abi"
	"github.com/toolhost/toolhost/host/internal/engine"
)

// TestToResult: text always carries the whole result; structuredContent
// is the tool's structured object, else a composing tool's JSON object
// text as the host encodes a plugin's object (sorted, a repeated name
// once, strings sanitized) while the text stays as it is; a failure is
// isError with its kind first.
func TestToResult(t *testing.T) {
	listing := `{"path":".","entries":[],"truncated":false}`
	sorted := `{"entries":[],"path":".","truncated":false}`
	hostile := `{"status":"ok","status":"\u001b]52;c;cHduZWQ=\u0007\u001b[2J\u001b[31mpwned","k\u009b":{"n":1,"n":2}}`
	for _, tc := range []struct {
		name       string
		r          engine.Result
		structured bool
		wantText   string
		wantSC     string // "" for none
		wantErr    bool
	}{
		{name: "file text", r: engine.Result{OK: true, Content: "a\nb\n"}, wantText: "a\nb\n"},
		{name: "JSON file read", r: engine.Result{OK: true, Content: "{\n \"a\": 1\n}\n"}, wantText: "{\n \"a\": 1\n}\n"},
		{name: "listing", r: engine.Result{OK: true, Content: listing}, structured: true, wantText: listing, wantSC: sorted},
		{name: "listing after spaces", r: engine.Result{OK: true, Content: " \n" + listing + "\n"}, structured: true, wantText: " \n" + listing + "\n", wantSC: sorted},
		{name: "repeated names and escaped controls", r: engine.Result{OK: true, Content: hostile}, structured: true, wantText: hostile, wantSC: `{"k":{"n":2},"status":"pwned"}`},
		{name: "two objects are no structuredContent", r: engine.Result{OK: true, Content: `{"a":1}{"b":2}`}, structured: true, wantText: `{"a":1}{"b":2}`},
		{name: "listing cut short, not JSON", r: engine.Result{OK: true, Content: `{"path":".","entries":[` + "\n[truncated]"}, structured: true, wantText: `{"path":".","entries":[` + "\n[truncated]"},
		{name: "array is no structuredContent", r: engine.Result{OK: true, Content: `[1,2]`}, structured: true, wantText: `[1,2]`},
		{name: "empty", r: engine.Result{OK: true}, structured: true, wantText: ""},
		{name: "the tool's structured object", r: engine.Result{OK: true, Content: "1 file", Structured: json.RawMessage(`{"files":1}`)},
			wantText: "1 file", wantSC: `{"files":1}`},
		{name: "the tool's object before a composed text", r: engine.Result{OK: true, Content: listing, Structured: json.RawMessage(`{"n":0}`)},
			structured: true, wantText: listing, wantSC: `{"n":0}`},
		{name: "no object beside an error", r: engine.Result{Structured: json.RawMessage(`{"n":0}`), Error: &engine.ToolError{Kind: abi.KindExecutionFailed, Message: "no"}},
			wantText: "ExecutionFailed: no", wantErr: true},
		{name: "error", r: engine.Result{Error: &engine.ToolError{Kind: abi.KindSandboxViolation, Message: `path "../x" is not allowed`}},
			wantText: `SandboxViolation: path "../x" is not allowed`, wantErr: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res := toResult(tc.r, tc.structured)
			if res.IsError != tc.wantErr || len(res.Content) != 1 {
				t.Fatalf("isError %v, %d contents; want %v, 1", res.IsError, len(res.Content), tc.wantErr)
			}
			if text := res.Content[0].(*mcp.TextContent).Text; text != tc.wantText {
				t.Errorf("text %q, want %q", text, tc.wantText)
			}
			switch sc, _ := res.StructuredContent.(json.RawMessage); {
			case tc.wantSC == "" && res.StructuredContent != nil:
				t.Errorf("structuredContent %v, want none", res.StructuredContent)
			case tc.wantSC != "" && string(sc) != tc.wantSC:
				t.Errorf("structuredContent %s, want %s", sc, tc.wantSC)
			}
		})
	}
}

// TestErrorText: details a model needs are kept, a command's output as
// plain text, and what the message already says is not repeated.
func TestErrorText(t *testing.T) {
	for _, tc := range []struct {
		name string
		err  *engine.ToolError
		want []string
		not  []string
	}{
		{
			name: "command output unescaped",
			err:  &engine.ToolError{Kind: abi.KindExecutionFailed, Message: "exit code 2", Details: json.RawMessage(`{"tool":"run_command","exit_code":2,"output":"line 1\nno such file\n"}`)},
			want: []string{"ExecutionFailed: exit code 2\n", `"exit_code":2`, "\noutput:\nline 1\nno such file\n"},
			not:  []string{`\n`},
		},
		{
			name: "denial said once",
			err: &engine.ToolError{Kind: abi.KindSandboxViolation, Message: "Denied by policy: the MCP client cannot be asked: call mcp-1 (write_file) was not approved and did not run",
				Details: json.RawMessage(`{"reason":"NotAsked","denied_by":"policy: the MCP client cannot be asked"}`)},
			want: []string{"SandboxViolation: Denied by policy", `"reason":"NotAsked"`},
			not:  []string{"denied_by"},
		},
		{name: "details not an object", err: &engine.ToolError{Kind: abi.KindBadArgs, Message: "bad", Details: json.RawMessage(`[1]`)}, want: []string{"BadArgs: bad\ndetails: [1]"}},
		{name: "nil", want: []string{"ExecutionFailed: "}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := errorText(tc.err)
			for _, w := range tc.want {
				if !strings.Contains(got, w) {
					t.Errorf("%q lacks %q", got, w)
				}
			}
			for _, n := range tc.not {
				if strings.Contains(got, n) {
					t.Errorf("%q holds %q", got, n)
				}
			}
		})
	}
}

// TestStoppedByClient: a call stopped because the client cancelled its
// request, or because its connection ended, says which and that its
// commands were killed, naming the call; anything else keeps its own
// words.
func TestStoppedByClient(t *testing.T) {
	cancelled := func() engine.Result {
		return engine.Result{ID: "mcp-7", Name: "run_command", Error: &engine.ToolError{Kind: abi.KindCancelled, Message: "Cancelled by user"}}
	}
	for _, tc := range []struct {
		name  string
		r     engine.Result
		cause error
		want  []string // in the message; nil: left alone
	}{
		{name: "notifications/cancelled", r: cancelled(), cause: context.Canceled,
			want: []string{"call mcp-7 (run_command)", "the MCP client cancelled the request (notifications/cancelled)", "command it started was killed"}},
		{name: "connection gone", r: cancelled(), cause: io.EOF,
			want: []string{"call mcp-7 (run_command)", "connection ended (EOF)", "command it started was killed"}},
		{name: "request still live", r: cancelled()},
		{name: "other failure", r: engine.Result{ID: "mcp-7", Error: &engine.ToolError{Kind: abi.KindTimeout, Message: "timed out"}}, cause: context.Canceled},
		{name: "success", r: engine.Result{ID: "mcp-7", OK: true, Content: "done"}, cause: context.Canceled},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := tc.r
			var before string
			if r.Error != nil {
				before = r.Error.Message
			}
			got := stoppedByClient(&r, tc.cause)
			if got != (tc.want != nil) {
				t.Fatalf("stoppedByClient = %v, want %v", got, tc.want != nil)
			}
			if tc.want == nil {
				if r.Error != nil && r.Error.Message != before {
					t.Errorf("message changed to %q", r.Error.Message)
				}
				return
			}
			text := errorText(r.Error)
			if !strings.HasPrefix(text, "Cancelled: ") {
				t.Errorf("%q does not start with its kind", text)
			}
			for _, w := range tc.want {
				if !strings.Contains(text, w) {
					t.Errorf("%q lacks %q", text, w)
				}
			}
		})
	}
	// callTool passes the cause of its own context, derived from the
	// request's: the request's cause must reach it, nil (jsonrpc2's
	// Cancel on notifications/cancelled) as context.Canceled.
	for _, cause := range []error{nil, io.EOF} {
		req, cancel := context.WithCancelCause(context.Background())
		ctx, stop := context.WithCancel(req)
		cancel(cause)
		want := cause
		if want == nil {
			want = context.Canceled
		}
		if got := context.Cause(ctx); !errors.Is(got, want) {
			t.Errorf("request cancelled with cause %v: the call's context gives %v", cause, got)
		}
		stop()
	}
}
