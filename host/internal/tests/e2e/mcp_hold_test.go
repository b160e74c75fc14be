package e2e

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Hold-then-deny: a call that needs approval from an
// MCP client that cannot elicit is held for a decision through the batch
// API, then denied saying where to approve it.

// heldCall is the answer to a tools/call made in the background.
type heldCall struct {
	res  *mcp.CallToolResult
	text string
	err  error
}

// callInBackground calls tool on cs and delivers the answer.
func callInBackground(ctx context.Context, cs *mcp.ClientSession, tool string, args map[string]any) <-chan heldCall {
	done := make(chan heldCall, 1)
	go func() {
		res, text, err := callText(ctx, cs, tool, args)
		done <- heldCall{res, text, err}
	}()
	return done
}

// awaitHeld waits for the one call held for an MCP client.
func (s *httpServe) awaitHeld(t *testing.T) apiBatch {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	for {
		status, out := s.api(t, "GET", "/v1/batches?state=awaiting_approval", nil)
		var list struct{ Batches []apiBatch }
		if err := json.Unmarshal(out, &list); status != 200 || err != nil {
			t.Fatalf("GET /v1/batches: %d %s", status, out)
		}
		if len(list.Batches) == 1 && list.Batches[0].HeldForMCP {
			return list.Batches[0]
		}
		if time.Now().After(deadline) {
			t.Fatalf("no held call after a minute: %s\nstderr: %s", out, s.stderr)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func answer(t *testing.T, done <-chan heldCall) heldCall {
	t.Helper()
	select {
	case a := <-done:
		if a.err != nil {
			t.Fatalf("tools/call: %v", a.err)
		}
		return a
	case <-time.After(time.Minute):
		t.Fatal("the held call got no answer within a minute")
	}
	return heldCall{}
}

// TestMCPHoldApproved: the Go SDK client without elicitation, over HTTP,
// writes a file; the server logs where to approve it and holds it; the
// test finds it at GET /v1/batches and approves it; the call's result is
// the write's success.
func TestMCPHoldApproved(t *testing.T) {
	w := newWorkspace(t)
	w.file(t, "out.txt", "before\n")
	s := serveHTTP(t, w, "--hold", "2m")
	ctx := testContext(t)
	cs := s.connect(t, ctx, nil, nil)
	if _, text, err := callText(ctx, cs, "read_file", map[string]any{"path": "out.txt"}); err != nil || !strings.Contains(text, "before") {
		t.Fatalf("read_file: %v %q", err, text)
	}
	done := callInBackground(ctx, cs, "write_file", map[string]any{"path": "out.txt", "content": "after\n"})
	held := s.awaitHeld(t)
	if len(held.Calls) != 1 || held.Calls[0].Name != "write_file" || held.Calls[0].Disposition != "confirm" || held.Calls[0].Summary == "" {
		t.Errorf("the held batch: %+v", held)
	}
	logged := regexp.MustCompile(`waits for approval in the web console, toolhost approve or the batch API.*batch=` + held.BatchID + `.*approve="POST ` + regexp.QuoteMeta(s.base) + `/v1/batches/` + held.BatchID + `/decision`)
	// The batch is listed a moment before the line is logged.
	for deadline := time.Now().Add(10 * time.Second); !logged.MatchString(s.stderr.String()) && time.Now().Before(deadline); {
		time.Sleep(20 * time.Millisecond)
	}
	if !logged.MatchString(s.stderr.String()) {
		t.Errorf("stderr does not say where to approve batch %s:\n%s", held.BatchID, s.stderr)
	}
	select {
	case a := <-done:
		t.Fatalf("the call was answered before any decision: %q", a.text)
	case <-time.After(200 * time.Millisecond):
	}
	s.batch(t, "POST", "/v1/batches/"+held.BatchID+"/decision", map[string]any{"decision": "approve_all"}, 200)
	a := answer(t, done)
	if a.res.IsError {
		t.Errorf("the approved write failed: %q", a.text)
	}
	if got, _ := os.ReadFile(filepath.Join(w.dir, "out.txt")); string(got) != "after\n" {
		t.Errorf("out.txt holds %q", got)
	}
	if end := s.waitState(t, held.BatchID, "done"); len(end.Results) != 1 || !end.Results[0].OK {
		t.Errorf("the held batch after the call: %+v", end)
	}
}

// TestMCPHoldTimeout: with --hold 1s a call nobody decides is denied
// after a second, the denial naming the URL and body that approve a held
// call and how to allow the tool in configuration.
func TestMCPHoldTimeout(t *testing.T) {
	w := newWorkspace(t)
	w.file(t, "out.txt", "before\n")
	s := serveHTTP(t, w, "--hold", "1s")
	ctx := testContext(t)
	cs := s.connect(t, ctx, nil, nil)
	callText(ctx, cs, "read_file", map[string]any{"path": "out.txt"})
	start := time.Now()
	a := answer(t, callInBackground(ctx, cs, "write_file", map[string]any{"path": "out.txt", "content": "after\n"}))
	if d := time.Since(start); d < time.Second {
		t.Errorf("denied after %v, before the hold of 1s ended", d)
	}
	url := regexp.MustCompile(`POST (http://127\.0\.0\.1:\d+/v1/batches/batch_[0-9a-f]+/decision) with the body \{"decision":"approve_all"\}`)
	m := url.FindStringSubmatch(a.text)
	if !a.res.IsError || m == nil || !strings.HasPrefix(m[1], s.base) {
		t.Fatalf("the denial does not name the decision URL under %s:\n%s", s.base, a.text)
	}
	for _, want := range []string{"does not support elicitation", "held 1s", "tools.approval.allowlist", "--allow write_file", "Authorization: Bearer"} {
		if !strings.Contains(a.text, want) {
			t.Errorf("the denial lacks %q:\n%s", want, a.text)
		}
	}
	if got, _ := os.ReadFile(filepath.Join(w.dir, "out.txt")); string(got) != "before\n" {
		t.Errorf("out.txt holds %q after the denial", got)
	}
}

// TestMCPHoldStdioWithHTTP: serve --stdio --http serves both, so a stdio
// client that cannot elicit has its write held and approved through the
// batch API; the server ends with its stdio client.
func TestMCPHoldStdioWithHTTP(t *testing.T) {
	w := newWorkspace(t)
	w.file(t, "out.txt", "before\n")
	ms := serveMCP(t, w, nil, "--http", "127.0.0.1:0")
	var s *httpServe
	for deadline := time.Now().Add(time.Minute); s == nil; time.Sleep(20 * time.Millisecond) {
		out := ms.stderr.String()
		if m, tm := endpointLine.FindStringSubmatch(out), tokenLine.FindStringSubmatch(out); m != nil && tm != nil {
			s = &httpServe{stderr: ms.stderr, url: m[1], host: m[2], base: "http://" + m[2], token: tm[1]}
		}
		if time.Now().After(deadline) {
			t.Fatalf("serve --stdio --http printed no endpoint:\n%s", out)
		}
	}
	ctx := testContext(t)
	callText(ctx, ms.session, "read_file", map[string]any{"path": "out.txt"})
	done := callInBackground(ctx, ms.session, "write_file", map[string]any{"path": "out.txt", "content": "after\n"})
	held := s.awaitHeld(t)
	s.batch(t, "POST", "/v1/batches/"+held.BatchID+"/decision", map[string]any{"decision": "approve_all"}, 200)
	if a := answer(t, done); a.res.IsError {
		t.Errorf("the approved write failed: %q", a.text)
	}
	if got, _ := os.ReadFile(filepath.Join(w.dir, "out.txt")); string(got) != "after\n" {
		t.Errorf("out.txt holds %q", got)
	}
}
