package server

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolhost/toolhost/abi"
	"github.com/toolhost/toolhost/host/engine"
)

// TestToResult: text always carries the whole result; structuredContent
// only for a composing tool's JSON object, byte for byte the text; a
// failure is isError with its kind first (issue 11 item 1).
func TestToResult(t *testing.T) {
	listing := `{"path":".","entries":[],"truncated":false}`
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
		{name: "listing", r: engine.Result{OK: true, Content: listing}, structured: true, wantText: listing, wantSC: listing},
		{name: "listing cut short, not JSON", r: engine.Result{OK: true, Content: `{"path":".","entries":[` + "\n[truncated]"}, structured: true, wantText: `{"path":".","entries":[` + "\n[truncated]"},
		{name: "array is no structuredContent", r: engine.Result{OK: true, Content: `[1,2]`}, structured: true, wantText: `[1,2]`},
		{name: "empty", r: engine.Result{OK: true}, structured: true, wantText: ""},
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
