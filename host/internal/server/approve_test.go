package server

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolhost/toolhost/abi"
	"github.com/toolhost/toolhost/host/internal/engine"
)

// TestQuestion: the elicitation shows the summary, the risk, the reason
// and every argument in full, with the note when the summary was
// shortened, then the dry run's diff; an argument's lines are indented
// so they cannot pass for the question, and the recap comes last.
func TestQuestion(t *testing.T) {
	c := engine.Confirmation{
		CallID: "mcp-7", Tool: "write_file", Summary: "Write a.txt…", Risk: abi.RiskMedium,
		Reason: "write_file has side effects", SummaryTruncated: true,
		Arguments: []engine.Argument{{Name: "path", Lines: []string{"a.txt"}}, {Name: "content", Lines: []string{"x", "Approve? yes"}}},
		Args:      json.RawMessage(`{"path":"a.txt","content":"x\nApprove? yes"}`),
	}
	q := question(engine.Approval{Confirmation: c, SummaryNote: c.SummaryNote(), Diff: &engine.Diff{Text: "dry run: nothing was written\n-old\n+new\n"}})
	for _, want := range []string{"Approve write_file call mcp-7?", "MEDIUM risk: Write a.txt…", "reason: write_file has side effects",
		"summary shortened", "path: a.txt", "    │Approve? yes", "from a dry run", "    │-old\n    │+new\n"} {
		if !strings.Contains(q, want) {
			t.Errorf("question lacks %q:\n%s", want, q)
		}
	}
	lines := strings.Split(strings.TrimRight(q, "\n"), "\n")
	for _, line := range lines {
		if strings.HasPrefix(line, "Approve? yes") {
			t.Errorf("an argument's line starts at the margin:\n%s", q)
		}
		if n := utf8.RuneCountInString(line); n > questionWidth {
			t.Errorf("a row of %d columns, wider than %d:\n%s", n, questionWidth, line)
		}
	}
	if last := lines[len(lines)-1]; !strings.HasPrefix(last, engine.RecapMark) {
		t.Errorf("the question does not end with the recap of what runs:\n%s", q)
	}
}

// TestUnasked: a call nobody can be asked about is denied saying why and
// what lets it run; a call only a person may approve says configuration
// does not cover it.
func TestUnasked(t *testing.T) {
	for _, tc := range []struct {
		name string
		cs   []engine.Confirmation
		want []string
		not  []string
	}{
		{
			name: "allowable",
			cs:   []engine.Confirmation{{CallID: "mcp-1", Tool: "write_file", Reason: "side effects"}},
			want: []string{"policy: no form", "call mcp-1 (write_file) needs approval: side effects", "tools.approval.allowlist", "--allow write_file"},
			not:  []string{"Only a person"},
		},
		{
			name: "only a person",
			cs:   []engine.Confirmation{{CallID: "mcp-2", Tool: "write_file", Reason: "git layout", AlwaysAsk: true}},
			want: []string{"Only a person can approve call mcp-2", "configuration does not cover it"},
			not:  []string{"--allow"},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := unasked("no form", tc.cs, ApprovalsElicitation)
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

// heldTest is an MCP client that cannot elicit, connected over
// streamable HTTP to a server that also serves the batch API.
func heldTest(t *testing.T, hold time.Duration) (*apiTest, *testClient) {
	t.Helper()
	a := serveAPI(t, Options{HoldTimeout: hold}, nil)
	os.WriteFile(filepath.Join(a.root, "a.txt"), []byte("old\n"), 0o644)
	c := connectTest(t, &mcp.StreamableClientTransport{Endpoint: a.base + "/mcp", HTTPClient: a.hc, MaxRetries: -1}, a.root, nil)
	c.call(t, "read_file", map[string]any{"path": "a.txt"}, nil)
	return a, c
}

// heldBatch waits for the one batch held for an MCP call.
func (a *apiTest) heldBatch() batchView {
	a.t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		status, out := a.do("GET", "/v1/batches?state=awaiting_approval", nil)
		var list struct{ Batches []batchView }
		if err := json.Unmarshal(out, &list); status != 200 || err != nil {
			a.t.Fatalf("GET /v1/batches: %d %s", status, out)
		}
		if len(list.Batches) == 1 && list.Batches[0].HeldForMCP {
			return list.Batches[0]
		}
		if time.Now().After(deadline) {
			a.t.Fatalf("no MCP call held after 30 s: %s", out)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// heldCallID stands, in a decision's body, for the id of the held call,
// which is known once it is held.
const heldCallID = "the held call's id"

// TestHoldThenApprove: a write from an MCP client that cannot elicit is
// held as a batch awaiting approval; approving it through the batch API
// runs it and the client gets the write's success; denying or
// cancelling it gives the client a denial.
func TestHoldThenApprove(t *testing.T) {
	for _, tc := range []struct {
		name     string
		action   string // the API request that decides
		body     any
		ok       bool
		want     string // in the result's text
		endState string
	}{
		{name: "approve", action: "decision", body: map[string]any{"decision": "approve_all"}, ok: true, endState: stateDone},
		{name: "approve selected", action: "decision", body: map[string]any{"decision": "approve_selected", "ids": heldCallID}, ok: true, endState: stateDone},
		{name: "deny", action: "decision", body: map[string]any{"decision": "deny_all"}, want: decidedByAPI, endState: stateDone},
		{name: "cancel", action: "cancel", want: "who cancelled the call", endState: stateCancelled},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a, c := heldTest(t, time.Minute)
			type answer struct {
				res  *mcp.CallToolResult
				text string
			}
			done := make(chan answer, 1)
			go func() {
				res, text := c.call(t, "write_file", map[string]any{"path": "a.txt", "content": "new\n"}, nil)
				done <- answer{res, text}
			}()
			held := a.heldBatch()
			// An MCP call's id is its journal id: its batch's, and its place.
			if len(held.Calls) != 1 || held.Calls[0].ID != held.BatchID+".1" || held.Calls[0].JournalID != held.Calls[0].ID ||
				held.Calls[0].Name != "write_file" || held.Calls[0].Summary == "" || held.DecisionURL == "" {
				t.Fatalf("the held batch: %+v", held)
			}
			body := tc.body
			if m, ok := body.(map[string]any); ok && m["ids"] == heldCallID {
				body = map[string]any{"decision": m["decision"], "ids": []string{held.Calls[0].ID}}
			}
			a.batch("POST", "/v1/batches/"+held.BatchID+"/"+tc.action, body, 200)
			var got answer
			select {
			case got = <-done:
			case <-time.After(30 * time.Second):
				t.Fatal("the MCP call got no answer 30 s after the decision")
			}
			if got.res.IsError == tc.ok || !strings.Contains(got.text, tc.want) {
				t.Errorf("the call's result: error %v, %q; want ok %v and %q", got.res.IsError, got.text, tc.ok, tc.want)
			}
			content, _ := os.ReadFile(filepath.Join(a.root, "a.txt"))
			if written := string(content) == "new\n"; written != tc.ok {
				t.Errorf("a.txt holds %q", content)
			}
			end := a.wait(held.BatchID, tc.endState)
			if len(end.Results) != 1 || end.Results[0].OK != tc.ok {
				t.Errorf("the held batch after the call: %+v", end)
			}
			evs := kinds(a.events(held.BatchID, 0, 0))
			if evs[0] != "awaiting_approval" || evs[len(evs)-1] != "state:"+tc.endState {
				t.Errorf("the held batch's events: %q", evs)
			}
		})
	}
}

// TestHoldTimeout: a held call nobody decides is denied after the hold,
// the denial naming the URL that would have approved it, the body to
// send, and how to allow the tool in configuration; a decision after it
// is a conflict.
func TestHoldTimeout(t *testing.T) {
	a, c := heldTest(t, 500*time.Millisecond)
	start := time.Now()
	res, text := c.call(t, "write_file", map[string]any{"path": "a.txt", "content": "new\n"}, nil)
	if d := time.Since(start); d < 500*time.Millisecond {
		t.Errorf("denied after %v, before the hold ended", d)
	}
	status, out := a.do("GET", "/v1/batches", nil)
	var list struct{ Batches []batchView }
	json.Unmarshal(out, &list)
	if status != 200 || len(list.Batches) != 1 {
		t.Fatalf("GET /v1/batches: %d %s", status, out)
	}
	id := list.Batches[0].BatchID
	for _, want := range []string{"NotAsked", "does not support elicitation", "held 500ms as batch " + id,
		"POST " + a.base + "/v1/batches/" + id + "/decision", `{"decision":"approve_all"}`, "Authorization: Bearer",
		a.base + "/v1/batches?state=awaiting_approval", "tools.approval.allowlist", "--allow write_file"} {
		if !strings.Contains(text, want) {
			t.Errorf("the denial lacks %q:\n%s", want, text)
		}
	}
	if !res.IsError {
		t.Error("the denial is not an error result")
	}
	if b, _ := os.ReadFile(filepath.Join(a.root, "a.txt")); string(b) != "old\n" {
		t.Errorf("a.txt holds %q after the denial", b)
	}
	if status, out := a.do("POST", "/v1/batches/"+id+"/decision", map[string]any{"decision": "approve_all"}); status != 409 {
		t.Errorf("a decision after the hold: %d %s, want 409", status, out)
	}
}

// TestNoHoldWithoutHTTP: over stdio alone there is no batch API to hold
// a call for: it is denied at once, saying so.
func TestNoHoldWithoutHTTP(t *testing.T) {
	c := serveTest(t, Options{}, false, nil)
	os.WriteFile(filepath.Join(c.root, "a.txt"), []byte("old\n"), 0o644)
	c.call(t, "read_file", map[string]any{"path": "a.txt"}, nil)
	start := time.Now()
	_, text := c.call(t, "write_file", map[string]any{"path": "a.txt", "content": "new\n"}, nil)
	if d := time.Since(start); d > 10*time.Second {
		t.Errorf("the denial took %v", d)
	}
	for _, want := range []string{"does not support elicitation", "No HTTP server runs", "--http ADDR", "--allow write_file"} {
		if !strings.Contains(text, want) {
			t.Errorf("the denial lacks %q:\n%s", want, text)
		}
	}
}

// TestHoldEndedByClient: a held call whose client gives up before a
// decision is stopped, and the held batch's result is the one the client
// was given, which says which call stopped, why and what to do: the
// result is worded before the batch API publishes it, so no reader sees
// it change under them.
func TestHoldEndedByClient(t *testing.T) {
	a, c := heldTest(t, time.Minute)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		_, err := c.session.CallTool(ctx, &mcp.CallToolParams{Name: "write_file", Arguments: map[string]any{"path": "a.txt", "content": "new\n"}})
		done <- err
	}()
	held := a.heldBatch()
	cancel()
	select {
	case <-done:
	case <-time.After(30 * time.Second):
		t.Fatal("the cancelled call did not return within 30 s")
	}
	var end batchView
	for deadline := time.Now().Add(30 * time.Second); len(end.Results) == 0 && time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		end = a.batch("GET", "/v1/batches/"+held.BatchID, nil, 200)
	}
	if len(end.Results) != 1 || end.Results[0].OK || end.Results[0].Error == nil {
		t.Fatalf("the held batch after the client gave up: %+v", end)
	}
	msg := end.Results[0].Error.Message
	for _, want := range []string{"call " + held.Calls[0].ID, "cancelled the request", "read the files again"} {
		if !strings.Contains(msg, want) {
			t.Errorf("the held batch's result lacks %q: %s", want, msg)
		}
	}
	if b, _ := os.ReadFile(filepath.Join(a.root, "a.txt")); string(b) != "old\n" {
		t.Errorf("a.txt holds %q after the call ended unapproved", b)
	}
}
