package server

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/toolhost/toolhost/host/internal/config"
	"github.com/toolhost/toolhost/host/internal/journal"
)

// crashChildEnv makes the test binary, run by crashedBatch, a toolhost
// process that records a batch and dies in the middle of it.
const crashChildEnv = "TOOLHOST_JOURNALAPI_CRASH"

// TestJournalAPICrashChild is not a test: run by crashedBatch as a child
// process, it begins batch ID (os.Args) of three calls in the journal at
// $TOOLHOST_JOURNALAPI_CRASH, finishes the first, starts the second, and
// exits without ending the batch, as a crash would leave it.
func TestJournalAPICrashChild(t *testing.T) {
	path := os.Getenv(crashChildEnv)
	if path == "" {
		t.Skip("run as a child process by crashedBatch")
	}
	id := os.Getenv(crashChildEnv + "_ID")
	ctx := context.Background()
	j, err := journal.Open(ctx, path, journal.Options{})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(3)
	}
	b := journal.Batch{ID: id, Conversation: "crashed", Calls: []journal.Call{
		{ID: "c1", Tool: "read_file", Arguments: json.RawMessage(`{"path":"a.txt"}`), Disposition: "execute"},
		{ID: "c2", Tool: "run_command", Arguments: json.RawMessage(`{"command":"sleep 30"}`), Disposition: "execute"},
		{ID: "c3", Tool: "read_file", Arguments: json.RawMessage(`{"path":"b.txt"}`), Disposition: "execute"},
	}}
	steps := []journal.Step{
		{Batch: &b, Starts: []string{"c1"}},
		{Results: []journal.CallResult{{CallID: "c1", Result: journal.Result{OK: true, Content: "old\n"}}}, Starts: []string{"c2"}},
	}
	for _, s := range steps {
		if err := j.Commit(ctx, id, s); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(3)
		}
	}
	os.Exit(0) // no EndBatch, no Close: the batch stays open, as after kill -9
}

// crashedBatch leaves batch id open in the journal at path by a process
// that is gone, so that the next host to open the journal marks it
// interrupted.
func crashedBatch(t *testing.T, path, id string) {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^TestJournalAPICrashChild$")
	cmd.Env = append(os.Environ(), crashChildEnv+"="+path, crashChildEnv+"_ID="+id)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("crash child: %v\n%s", err, out)
	}
}

// journalAPI serves a host whose journal at path holds two batches a
// crash interrupted, "b-resume" and "b-discard".
func journalAPI(t *testing.T) *apiTest {
	t.Helper()
	path := filepath.Join(t.TempDir(), "journal.db")
	crashedBatch(t, path, "b-resume")
	crashedBatch(t, path, "b-discard")
	return serveAPI(t, Options{}, func(c *config.Config) { c.Journal.Path = path })
}

// decode is the JSON body out as v, or the test ends.
func decode[T any](t *testing.T, what string, out []byte) T {
	t.Helper()
	var v T
	if err := json.Unmarshal(out, &v); err != nil {
		t.Fatalf("%s: %v in %s", what, err, out)
	}
	return v
}

// TestJournalAPI: the history and the recovery choice through the batch
// API (FR-RES-05): a host opening a journal a
// crash left marks its batches interrupted; GET lists and shows them;
// POST .../recover resumes one with its partial results and discards the
// other's; each answer matches openapi.json, and nothing is run.
func TestJournalAPI(t *testing.T) {
	sc := newSchemas(t)
	a := journalAPI(t)
	os.WriteFile(filepath.Join(a.root, "a.txt"), []byte("old\n"), 0o644)
	// call sends a request and checks its status and its answer's shape.
	call := func(method, route, path string, body any, want int) []byte {
		t.Helper()
		status, out := a.do(method, path, body)
		if status != want {
			t.Fatalf("%s %s: %d %s, want %d", method, path, status, out, want)
		}
		sc.check(method+" "+path, out, "paths", route, strings.ToLower(method), "responses", fmt.Sprint(status), "content", "application/json", "schema")
		return out
	}
	const list, one, recover = "/v1/journal/batches", "/v1/journal/batches/{id}", "/v1/journal/batches/{id}/recover"

	done := a.batch("POST", "/v1/batches", map[string]any{"conversation_id": "live", "calls": []map[string]any{
		{"id": "r", "name": "read_file", "arguments": map[string]any{"path": "a.txt"}}}}, 201)
	a.wait(done.BatchID, stateDone)

	type listed struct{ Batches []JournalSummary }
	all := decode[listed](t, "list", call("GET", list, list, nil, 200))
	if len(all.Batches) != 3 || all.Batches[0].BatchID != done.BatchID {
		t.Fatalf("GET %s: %+v, want the API's batch first, then the two crashed ones", list, all.Batches)
	}
	for _, tc := range []struct {
		query string
		want  int
	}{
		{"state=interrupted", 2},
		{"state=done", 1},
		{"conversation=crashed", 2},
		{"conversation=nobody", 0},
		{"since=1h", 3},
		{"since=" + url.QueryEscape(time.Now().Add(time.Hour).Format(time.RFC3339)), 0},
		{"limit=1", 1},
	} {
		got := decode[listed](t, tc.query, call("GET", list, list+"?"+tc.query, nil, 200))
		if len(got.Batches) != tc.want {
			t.Errorf("GET %s?%s: %d batches, want %d", list, tc.query, len(got.Batches), tc.want)
		}
	}
	for _, q := range []string{"since=yesterday", "state=broken", "limit=0", "limit=x"} {
		out := call("GET", list, list+"?"+q, nil, 400)
		if name, _, _ := strings.Cut(q, "="); !strings.Contains(string(out), name) {
			t.Errorf("GET %s?%s: %s, want a message naming %s", list, q, out, name)
		}
	}

	b := decode[JournalBatch](t, "show", call("GET", one, list+"/b-resume", nil, 200))
	if b.State != "interrupted" || len(b.Calls) != 3 {
		t.Fatalf("the crashed batch: %+v, want interrupted with three calls", b)
	}
	wantMessages := []string{"", journal.InterruptedMessage, journal.NotRunMessage}
	for i, c := range b.Calls {
		if c.Result == nil || c.Result.OK != (i == 0) || i > 0 && c.Result.Error.Message != wantMessages[i] {
			t.Errorf("call %s after recovery: %+v, want message %q", c.ID, c.Result, wantMessages[i])
		}
	}
	call("GET", one, list+"/b-nope", nil, 404)

	for _, body := range []any{map[string]any{"choice": "maybe"}, map[string]any{}, map[string]any{"choice": "resume", "extra": 1}, "", "[1]"} {
		out := call("POST", recover, list+"/b-resume/recover", body, 400)
		if !strings.Contains(string(out), "choice") && !strings.Contains(string(out), "JSON") {
			t.Errorf("recover with %v: %s, want a message saying what to send", body, out)
		}
	}
	call("POST", recover, list+"/b-nope/recover", map[string]any{"choice": "resume"}, 404)
	out := call("POST", recover, list+"/"+done.BatchID+"/recover", map[string]any{"choice": "resume"}, 409)
	if !strings.Contains(string(out), done.BatchID) || !strings.Contains(string(out), "not interrupted") {
		t.Errorf("recover of a done batch: %s, want a message naming it and why", out)
	}

	resumed := decode[JournalBatch](t, "resume", call("POST", recover, list+"/b-resume/recover", map[string]any{"choice": "resume"}, 200))
	if resumed.State != "resumed" || resumed.Calls[0].Result == nil || !resumed.Calls[0].Result.OK {
		t.Errorf("resumed batch: %+v, want resumed with the first call's result kept", resumed)
	}
	call("POST", recover, list+"/b-resume/recover", map[string]any{"choice": "discard"}, 409)

	discarded := decode[JournalBatch](t, "discard", call("POST", recover, list+"/b-discard/recover", map[string]any{"choice": "discard"}, 200))
	if discarded.State != "discarded" {
		t.Errorf("discarded batch: state %s", discarded.State)
	}
	for _, c := range discarded.Calls {
		if c.Result == nil || c.Result.OK || c.Result.Error.Message != journal.DiscardedMessage {
			t.Errorf("call %s of the discarded batch: %+v, want %q", c.ID, c.Result, journal.DiscardedMessage)
		}
	}
	if got := decode[listed](t, "list", call("GET", list, list+"?state=interrupted", nil, 200)); len(got.Batches) != 0 {
		t.Errorf("interrupted batches after both choices: %+v, want none", got.Batches)
	}
}

// TestJournalAPIGuarded: the journal's endpoints are behind the guard
// like every /v1 route but health: no token, no history.
func TestJournalAPIGuarded(t *testing.T) {
	a := journalAPI(t)
	for _, r := range []struct{ method, path string }{
		{"GET", "/v1/journal/batches"},
		{"GET", "/v1/journal/batches/b-resume"},
		{"POST", "/v1/journal/batches/b-resume/recover"},
	} {
		req, _ := http.NewRequest(r.method, a.base+r.path, strings.NewReader(`{"choice":"discard"}`))
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusUnauthorized {
			t.Errorf("%s %s without a token: %d, want 401", r.method, r.path, resp.StatusCode)
		}
	}
	b := decode[JournalBatch](t, "show", func() []byte { _, out := a.do("GET", "/v1/journal/batches/b-resume", nil); return out }())
	if b.State != "interrupted" {
		t.Errorf("after unauthenticated requests the batch is %s, want interrupted", b.State)
	}
}

// TestJournalAPIWithoutJournal: a host that keeps no journal answers 503
// saying how to start one that does.
func TestJournalAPIWithoutJournal(t *testing.T) {
	sc := newSchemas(t)
	a := serveAPI(t, Options{}, nil)
	for _, r := range []struct{ method, route, path string }{
		{"GET", "/v1/journal/batches", "/v1/journal/batches"},
		{"GET", "/v1/journal/batches/{id}", "/v1/journal/batches/b1"},
		{"POST", "/v1/journal/batches/{id}/recover", "/v1/journal/batches/b1/recover"},
	} {
		status, out := a.do(r.method, r.path, map[string]string{"choice": "resume"})
		if status != http.StatusServiceUnavailable || !strings.Contains(string(out), "JournalUnavailable") || !strings.Contains(string(out), "--state-dir") {
			t.Errorf("%s %s without a journal: %d %s, want 503 saying how to keep one", r.method, r.path, status, out)
		}
		sc.check(r.method+" "+r.path, out, "paths", r.route, strings.ToLower(r.method), "responses", "503", "content", "application/json", "schema")
	}
}

// TestParseSince: the history's --since and ?since= take a time, a date
// or how long ago.
func TestParseSince(t *testing.T) {
	now := time.Date(2025, 6, 10, 12, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		in   string
		want time.Time
	}{
		{"2025-06-01T09:00:00Z", time.Date(2025, 6, 1, 9, 0, 0, 0, time.UTC)},
		{"2025-06-01T09:00:00.5+02:00", time.Date(2025, 6, 1, 7, 0, 0, 5e8, time.UTC)},
		{"2025-06-01", time.Date(2025, 6, 1, 0, 0, 0, 0, time.Local)},
		{"2h", now.Add(-2 * time.Hour)},
		{"90m", now.Add(-90 * time.Minute)},
		{"7d", now.Add(-7 * 24 * time.Hour)},
		{"1d12h", now.Add(-36 * time.Hour)},
	} {
		got, err := ParseSince(tc.in, now)
		if err != nil || !got.Equal(tc.want) {
			t.Errorf("ParseSince(%q) = %v, %v; want %v", tc.in, got, err, tc.want)
		}
	}
	for _, in := range []string{"", "yesterday", "-2h", "0s", "0d", "d", "2x", "+1d", "1.5d", "2025-13-01"} {
		if got, err := ParseSince(in, now); err == nil {
			t.Errorf("ParseSince(%q) = %v, want an error", in, got)
		}
	}
}
