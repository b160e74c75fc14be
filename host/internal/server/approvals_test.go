package server

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolhost/toolhost/host/internal/engine"
)

// TestApprovalsModes: where server.approvals sends a write's question,
// with clients that answer by themselves as agent CLIs do headless (one
// accepting at once, like a permissive sandbox mode or an approving
// hook; one declining at once; one never answering).
func TestApprovalsModes(t *testing.T) {
	// never answers until the question is withdrawn, as a client waiting
	// for a person who is not there.
	const never = ""
	const accept, decline = "accept", "decline"
	for _, tt := range []struct {
		name    string
		mode    Approvals
		answer  string
		console string // the decision the console sends, "" for none
		// asked says whether the client is asked; written whether the
		// write runs; result is in the client's result.
		asked   bool
		written bool
		result  string
	}{
		{"console: an accepting client is not asked", ApprovalsConsole, accept, "approve_all", false, true, ""},
		{"console: the console denies", ApprovalsConsole, accept, "deny_all", false, false, "a person in the web console"},
		{"both: the client's answer comes first", ApprovalsBoth, decline, "", true, false, `answered "decline"`},
		{"both: the console decides while the client says nothing", ApprovalsBoth, never, "approve_all", true, true, ""},
		{"elicitation: the client alone decides", ApprovalsElicitation, accept, "", true, true, ""},
	} {
		t.Run(tt.name, func(t *testing.T) {
			a := serveAPI(t, Options{Approvals: tt.mode}, nil)
			os.WriteFile(filepath.Join(a.root, "a.txt"), []byte("old\n"), 0o644)
			c := connectAnswering(t, a, tt.answer)
			c.call(t, "read_file", map[string]any{"path": "a.txt"}, nil)
			type answer struct {
				res  *mcp.CallToolResult
				text string
			}
			done := make(chan answer, 1)
			go func() {
				res, text := c.call(t, "write_file", map[string]any{"path": "a.txt", "content": "new\n"}, nil)
				done <- answer{res, text}
			}()
			if tt.console != "" {
				held := a.heldBatch()
				// Under both, the question goes out after its dry run: the
				// console decides once the client has it.
				for deadline := time.Now().Add(10 * time.Second); tt.asked && time.Now().Before(deadline); time.Sleep(5 * time.Millisecond) {
					c.mu.Lock()
					n := len(c.asked)
					c.mu.Unlock()
					if n > 0 {
						break
					}
				}
				if got, _ := os.ReadFile(filepath.Join(a.root, "a.txt")); string(got) != "old\n" {
					t.Fatalf("the write ran before any decision: a.txt holds %q", got)
				}
				cl := login(t, a)
				if status, out := cl.do("POST", batchPath(held.BatchID, "decision"), `{"decision":"`+tt.console+`"}`, nil); status != 200 {
					t.Fatalf("the console's decision: %d %s", status, out)
				}
			}
			var got answer
			select {
			case got = <-done:
			case <-time.After(30 * time.Second):
				t.Fatal("no result within 30 s")
			}
			content, _ := os.ReadFile(filepath.Join(a.root, "a.txt"))
			if written := string(content) == "new\n"; written != tt.written || got.res.IsError == tt.written {
				t.Errorf("written %v, error %v: %s; want written %v", written, got.res.IsError, got.text, tt.written)
			}
			if !strings.Contains(got.text, tt.result) {
				t.Errorf("the result %q lacks %q", got.text, tt.result)
			}
			c.mu.Lock()
			asked := len(c.asked) > 0
			c.mu.Unlock()
			if asked != tt.asked {
				t.Errorf("the client was asked: %v; want %v", asked, tt.asked)
			}
		})
	}
}

// connectAnswering connects a client to a's /mcp that answers each
// elicitation with answer at once, or, when answer is "", not until the
// server withdraws the question.
func connectAnswering(t *testing.T, a *apiTest, answer string) *testClient {
	t.Helper()
	return connectAnsweringAt(t, a, "/mcp", answer)
}

// connectAnsweringAt is connectAnswering to the MCP endpoint at path.
func connectAnsweringAt(t *testing.T, a *apiTest, path, answer string) *testClient {
	t.Helper()
	tc := &testClient{root: a.root}
	opts := &mcp.ClientOptions{ElicitationHandler: func(ctx context.Context, req *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
		tc.mu.Lock()
		tc.asked = append(tc.asked, req.Params.Message)
		tc.mu.Unlock()
		if answer == "" {
			<-ctx.Done()
			return nil, ctx.Err()
		}
		return &mcp.ElicitResult{Action: answer}, nil
	}}
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "test", Version: "1"}, opts).Connect(context.Background(),
		&mcp.StreamableClientTransport{Endpoint: a.base + path, HTTPClient: a.hc, MaxRetries: -1}, nil)
	if err != nil {
		t.Fatal(err)
	}
	tc.session = cs
	t.Cleanup(func() { cs.Close() })
	return tc
}

// TestApprovalsProfile: a profile with approvals = "console" takes its
// calls' decisions away from an accepting client, while the main
// endpoint still asks it.
func TestApprovalsProfile(t *testing.T) {
	a := serveAPI(t, Options{Profiles: map[string]engine.Narrowing{"p": {Tools: []string{"read_file", "write_file"}}}, ConsoleProfiles: map[string]bool{"p": true}}, nil)
	os.WriteFile(filepath.Join(a.root, "a.txt"), []byte("old\n"), 0o644)
	for _, tt := range []struct {
		path  string
		asked bool
	}{
		{"/mcp/p", false},
		{"/mcp", true},
	} {
		t.Run(tt.path, func(t *testing.T) {
			c := connectAnsweringAt(t, a, tt.path, "accept")
			c.call(t, "read_file", map[string]any{"path": "a.txt"}, nil)
			done := make(chan string, 1)
			go func() {
				_, text := c.call(t, "write_file", map[string]any{"path": "a.txt", "content": tt.path + "\n"}, nil)
				done <- text
			}()
			if !tt.asked {
				held := a.heldBatch()
				a.batch("POST", batchPath(held.BatchID, "decision"), map[string]any{"decision": "approve_all"}, 200)
			}
			select {
			case <-done:
			case <-time.After(30 * time.Second):
				t.Fatal("no result within 30 s")
			}
			c.mu.Lock()
			asked := len(c.asked) > 0
			c.mu.Unlock()
			if got, _ := os.ReadFile(filepath.Join(a.root, "a.txt")); asked != tt.asked || string(got) != tt.path+"\n" {
				t.Errorf("client asked %v (want %v), a.txt holds %q", asked, tt.asked, got)
			}
		})
	}
}

// TestApprovalsBothWithoutHTTP: under both, with no HTTP server to hold
// the call for, the client alone decides, and a question it leaves
// unanswered denies the call when the question times out, rather than
// holding it with nobody able to decide.
func TestApprovalsBothWithoutHTTP(t *testing.T) {
	for _, tt := range []struct {
		name, answer, want string
		late               time.Duration // how long the client takes to answer
	}{
		{"the client declines", "decline", `answered "decline"`, 0},
		{"the client accepts", "accept", "a.txt", 0},
		{"the client answers too late", "decline", "did not answer", 3 * time.Second},
	} {
		t.Run(tt.name, func(t *testing.T) {
			c := serveTest(t, Options{Approvals: ApprovalsBoth, AskTimeout: time.Second}, false, func(*testClient, *mcp.ElicitRequest) string {
				time.Sleep(tt.late)
				return tt.answer
			})
			os.WriteFile(filepath.Join(c.root, "a.txt"), []byte("old\n"), 0o644)
			c.call(t, "read_file", map[string]any{"path": "a.txt"}, nil)
			res, text := c.call(t, "write_file", map[string]any{"path": "a.txt", "content": "new\n"}, nil)
			if res.IsError == (tt.answer == "accept") || !strings.Contains(text, tt.want) {
				t.Errorf("the write's result: error %v, %q; want %q", res.IsError, text, tt.want)
			}
		})
	}
}
