package e2e

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
)

// The batch API of toolhost serve --http, driven with plain net/http.

// apiBatch is a batch as the API answers it.
type apiBatch struct {
	BatchID     string `json:"batch_id"`
	State       string `json:"state"`
	HeldForMCP  bool   `json:"held_for_mcp"`
	DecisionURL string `json:"decision_url"`
	Calls       []struct {
		ID          string  `json:"id"`
		Name        string  `json:"name"`
		Disposition string  `json:"disposition"`
		Summary     string  `json:"summary"`
		RiskLevel   string  `json:"risk_level"`
		Result      *result `json:"result"`
	} `json:"calls"`
	Results []result `json:"results"`
}

// api sends a request to the server's API with its token; body is sent
// as is when a string, as JSON otherwise.
func (s *httpServe) api(t *testing.T, method, path string, body any) (int, []byte) {
	t.Helper()
	var r io.Reader
	switch b := body.(type) {
	case nil:
	case string:
		r = strings.NewReader(b)
	default:
		j, _ := json.Marshal(b)
		r = bytes.NewReader(j)
	}
	req, err := http.NewRequest(method, s.base+path, r)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := s.httpClient().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	out, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, out
}

// batch sends a request that must answer a batch with status want.
func (s *httpServe) batch(t *testing.T, method, path string, body any, want int) apiBatch {
	t.Helper()
	status, out := s.api(t, method, path, body)
	var b apiBatch
	if err := json.Unmarshal(out, &b); status != want || err != nil {
		t.Fatalf("%s %s: %d %s, want %d", method, path, status, out, want)
	}
	return b
}

// waitState polls a batch until it is in state.
func (s *httpServe) waitState(t *testing.T, id, state string) apiBatch {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	for {
		b := s.batch(t, "GET", "/v1/batches/"+id, nil, 200)
		if b.State == state {
			return b
		}
		if time.Now().After(deadline) {
			t.Fatalf("batch %s is %s after a minute, want %s", id, b.State, state)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// event is one Server-Sent Event.
type event struct {
	id           int64
	kind, data   string
	state, chunk string
}

// eventStream is an open GET /v1/batches/ID/events.
type eventStream struct {
	resp *http.Response
	sc   *bufio.Scanner
}

func (s *httpServe) openEvents(t *testing.T, id string, lastID int64) *eventStream {
	t.Helper()
	req, _ := http.NewRequestWithContext(testContext(t), "GET", s.base+"/v1/batches/"+id+"/events", nil)
	if lastID > 0 {
		req.Header.Set("Last-Event-ID", strconv.FormatInt(lastID, 10))
	}
	resp, err := s.httpClient().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != 200 || resp.Header.Get("Content-Type") != "text/event-stream" {
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		t.Fatalf("events of %s: %d %s", id, resp.StatusCode, b)
	}
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(nil, 1<<20)
	return &eventStream{resp: resp, sc: sc}
}

// next reads one event; ok is false at the end of the stream.
func (es *eventStream) next() (ev event, ok bool) {
	for es.sc.Scan() {
		line := es.sc.Text()
		switch {
		case line == "" && ev.kind != "":
			var d struct{ State, Chunk string }
			json.Unmarshal([]byte(ev.data), &d)
			ev.state, ev.chunk = d.State, d.Chunk
			return ev, true
		case strings.HasPrefix(line, "id: "):
			ev.id, _ = strconv.ParseInt(line[4:], 10, 64)
		case strings.HasPrefix(line, "event: "):
			ev.kind = line[7:]
		case strings.HasPrefix(line, "data: "):
			ev.data = line[6:]
		}
	}
	return ev, false
}

func (es *eventStream) rest() []event {
	defer es.resp.Body.Close()
	var evs []event
	for {
		ev, ok := es.next()
		if !ok {
			return evs
		}
		evs = append(evs, ev)
	}
}

func eventKinds(evs []event) []string {
	var ks []string
	for _, e := range evs {
		k := e.kind
		if e.state != "" {
			k += ":" + e.state
		}
		ks = append(ks, k)
	}
	return ks
}

// TestBatchAPIApproveSelected: a batch with a read and a write that needs
// approval plans the write for confirmation and waits; its SSE stream
// shows it; approve_selected runs the write; the results come in call
// order.
func TestBatchAPIApproveSelected(t *testing.T) {
	w := newWorkspace(t)
	w.file(t, "a.txt", "old\n")
	w.file(t, "b.txt", "bee\n")
	s := serveHTTP(t, w)
	read := s.batch(t, "POST", "/v1/batches", map[string]any{"conversation_id": "agent-1",
		"calls": []map[string]any{{"id": "r0", "name": "read_file", "arguments": map[string]any{"path": "a.txt"}}}}, 201)
	if read.Calls[0].Disposition != "execute" {
		t.Fatalf("a read is planned %+v", read)
	}
	s.waitState(t, read.BatchID, "done")

	b := s.batch(t, "POST", "/v1/batches", map[string]any{"conversation_id": "agent-1", "turn_id": "turn-1", "calls": []map[string]any{
		{"id": "r1", "name": "read_file", "arguments": map[string]any{"path": "b.txt"}},
		{"id": "w1", "name": "write_file", "arguments": map[string]any{"path": "a.txt", "content": "new\n"}},
	}}, 201)
	if b.State != "awaiting_approval" || b.Calls[0].Disposition != "execute" || b.Calls[1].Disposition != "confirm" || b.Calls[1].Summary == "" || b.Calls[1].RiskLevel == "" {
		t.Fatalf("created: %+v; want the write to confirm and the batch awaiting_approval", b)
	}
	if got := s.batch(t, "GET", "/v1/batches/"+b.BatchID, nil, 200); got.State != "awaiting_approval" {
		t.Errorf("GET: %s", got.State)
	}
	stream := s.openEvents(t, b.BatchID, 0)
	var before []event
	for len(before) < 3 {
		ev, ok := stream.next()
		if !ok {
			t.Fatalf("the stream ended before the decision: %q", eventKinds(before))
		}
		before = append(before, ev)
	}
	if got := eventKinds(before); !slices.Equal(got, []string{"batch_planned", "awaiting_approval", "state:awaiting_approval"}) {
		t.Errorf("events before the decision: %q", got)
	}
	s.batch(t, "POST", "/v1/batches/"+b.BatchID+"/decision", map[string]any{"decision": "approve_selected", "ids": []string{"w1"}}, 200)
	after := stream.rest()
	if got := eventKinds(after); !slices.Equal(got, []string{"state:running", "executing", "started", "completed", "started", "completed", "batch_done", "state:done"}) {
		t.Errorf("events after the decision: %q", got)
	}
	done := s.waitState(t, b.BatchID, "done")
	if len(done.Results) != 2 || done.Results[0].ID != "r1" || !strings.Contains(done.Results[0].Content, "bee") || done.Results[1].ID != "w1" || !done.Results[1].OK {
		t.Errorf("results: %+v", done.Results)
	}
	if got, _ := os.ReadFile(filepath.Join(w.dir, "a.txt")); string(got) != "new\n" {
		t.Errorf("a.txt holds %q", got)
	}
}

// TestBatchAPIEventsResume: a reader that drops the event stream in the
// middle of a command's output and comes back with Last-Event-ID gets
// exactly the events it missed, none twice.
func TestBatchAPIEventsResume(t *testing.T) {
	w := newWorkspace(t).withConfig(t, "[tools.approval]\nmode = \"auto\"\ndenylist = []\n")
	s := serveHTTP(t, w)
	b := s.batch(t, "POST", "/v1/batches", map[string]any{"conversation_id": "agent-1", "calls": []map[string]any{
		{"id": "c1", "name": "run_command", "arguments": map[string]any{"command": "for i in 1 2 3 4 5 6; do echo line $i; sleep 0.2; done"}},
	}}, 201)
	s.batch(t, "POST", "/v1/batches/"+b.BatchID+"/decision", map[string]any{"decision": "approve_all"}, 200)
	stream := s.openEvents(t, b.BatchID, 0)
	var first []event
	for {
		ev, ok := stream.next()
		if !ok {
			t.Fatalf("the stream ended before any output: %q", eventKinds(first))
		}
		first = append(first, ev)
		if ev.kind == "stdout_chunk" {
			break
		}
	}
	stream.resp.Body.Close() // the reader goes away mid-way
	last := first[len(first)-1].id
	second := s.openEvents(t, b.BatchID, last).rest()
	whole := s.openEvents(t, b.BatchID, 0).rest()
	got := append(slices.Clone(first), second...)
	if !slices.Equal(got, whole) {
		t.Errorf("resumed after event %d:\n%q\nthe whole stream:\n%q", last, eventKinds(got), eventKinds(whole))
	}
	for i, ev := range got {
		if ev.id != int64(i+1) {
			t.Errorf("event %d has id %d: a gap or a duplicate", i+1, ev.id)
		}
	}
	var out strings.Builder
	for _, ev := range got {
		out.WriteString(ev.chunk)
	}
	if !strings.Contains(out.String(), "line 1\n") || !strings.Contains(out.String(), "line 6\n") || strings.Count(out.String(), "line 3") != 1 {
		t.Errorf("the output across the reconnect: %q", out.String())
	}
	if e := got[len(got)-1]; e.kind != "state" || e.state != "done" {
		t.Errorf("the last event: %+v", e)
	}
}

// TestBatchAPICancelCommand: cancelling a running batch kills its
// command's process and ends the batch cancelled. The
// command runs unconfined so that the pid it writes is the host's: a
// confined command's is its PID namespace's, which on the host may be
// any process (see workspace.unconfined).
func TestBatchAPICancelCommand(t *testing.T) {
	w := newWorkspace(t).withConfig(t, "[tools.approval]\nmode = \"auto\"\ndenylist = []\n").unconfined()
	s := serveHTTP(t, w)
	b := s.batch(t, "POST", "/v1/batches", map[string]any{"conversation_id": "agent-1", "calls": []map[string]any{
		{"id": "c1", "name": "run_command", "arguments": map[string]any{"command": "sleep 30 & echo $! > pid; wait"}},
	}}, 201)
	s.batch(t, "POST", "/v1/batches/"+b.BatchID+"/decision", map[string]any{"decision": "approve_all"}, 200)
	var pid int
	for deadline := time.Now().Add(time.Minute); pid == 0; time.Sleep(20 * time.Millisecond) {
		raw, _ := os.ReadFile(filepath.Join(w.dir, "pid"))
		pid, _ = strconv.Atoi(strings.TrimSpace(string(raw)))
		if time.Now().After(deadline) {
			t.Fatal("the command never wrote its pid")
		}
	}
	wantWorkspaceProcess(t, w, pid)
	s.batch(t, "POST", "/v1/batches/"+b.BatchID+"/cancel", nil, 200)
	c := s.waitState(t, b.BatchID, "cancelled")
	if len(c.Results) != 1 || c.Results[0].OK || c.Results[0].Error == nil {
		t.Errorf("the cancelled command's result: %+v", c.Results)
	}
	if pidAlive(pid) {
		t.Errorf("the command's sleep (pid %d) outlived the cancel", pid)
	}
}

// pidAlive reports whether pid still runs after up to 5 s (a zombie
// counts as ended).
func pidAlive(pid int) bool {
	for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
		if err != nil {
			return false
		}
		if f := strings.Fields(string(stat)); len(f) > 2 && f[2] == "Z" {
			return false
		}
	}
	return true
}

// TestBatchAPIParseOnlyResults: with tools.mode = parse_only the calls
// wait for the results the client submits.
func TestBatchAPIParseOnlyResults(t *testing.T) {
	w := newWorkspace(t).withConfig(t, "[tools]\nmode = \"parse_only\"\n")
	s := serveHTTP(t, w)
	b := s.batch(t, "POST", "/v1/batches", map[string]any{"conversation_id": "agent-1", "calls": []map[string]any{
		{"id": "p1", "name": "read_file", "arguments": map[string]any{"path": "a.txt"}}}}, 201)
	if b.State != "pending_results" || b.Calls[0].Disposition != "pending" {
		t.Fatalf("created: %+v", b)
	}
	s.batch(t, "POST", "/v1/batches/"+b.BatchID+"/results", map[string]any{"results": []map[string]any{{"id": "p1", "content": "what the person saw"}}}, 200)
	done := s.waitState(t, b.BatchID, "done")
	if len(done.Results) != 1 || !done.Results[0].OK || done.Results[0].Content != "what the person saw" {
		t.Errorf("results: %+v", done.Results)
	}
}

// TestBatchAPIRefusals: the API's error shape and statuses, through the
// real server: no token, unknown batch, bad JSON, a wrong method, an
// unknown format; and the tools in each format.
func TestBatchAPIRefusals(t *testing.T) {
	s := serveHTTP(t, newWorkspace(t))
	resp, err := http.Post(s.base+"/v1/batches", "application/json", strings.NewReader(`{}`))
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 401 || !strings.Contains(string(body), `"kind":"Unauthorized"`) {
		t.Errorf("POST /v1/batches without a token: %d %s", resp.StatusCode, body)
	}
	for _, tc := range []struct {
		method, path string
		body         any
		status       int
		kind         string
	}{
		{"GET", "/v1/batches/batch_0123456789abcdef", nil, 404, "UnknownBatch"},
		{"POST", "/v1/batches", `{"calls": [}`, 400, "InvalidRequest"},
		{"POST", "/v1/batches", `{"calls":[{"id":"1","name":"read_file"}]}`, 400, "InvalidRequest"},
		{"DELETE", "/v1/batches", nil, 405, "MethodNotAllowed"},
		{"GET", "/v1/tools?format=yaml", nil, 400, "InvalidRequest"},
	} {
		status, out := s.api(t, tc.method, tc.path, tc.body)
		var e struct {
			Error struct{ Kind, Message string } `json:"error"`
		}
		if err := json.Unmarshal(out, &e); err != nil || status != tc.status || e.Error.Kind != tc.kind || e.Error.Message == "" {
			t.Errorf("%s %s: %d %s; want %d %s", tc.method, tc.path, status, out, tc.status, tc.kind)
		}
	}
	for _, format := range []string{"mcp", "openai", "anthropic", "gemini"} {
		status, out := s.api(t, "GET", "/v1/tools?format="+format, nil)
		if status != 200 || !strings.Contains(string(out), "read_file") {
			t.Errorf("GET /v1/tools?format=%s: %d %.200s", format, status, out)
		}
	}
	status, out := s.api(t, "GET", "/v1/openapi.json", nil)
	var doc struct {
		OpenAPI string         `json:"openapi"`
		Paths   map[string]any `json:"paths"`
	}
	if err := json.Unmarshal(out, &doc); status != 200 || err != nil || doc.Paths["/v1/batches/{id}/events"] == nil {
		t.Errorf("GET /v1/openapi.json: %d %.200s", status, out)
	}
}
