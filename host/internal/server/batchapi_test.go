package server

import (
	"bufio"
	"bytes"
	"context"
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

	"github.com/toolhost/toolhost/host"
	"github.com/toolhost/toolhost/host/internal/config"
	"github.com/toolhost/toolhost/host/internal/engine"
	"github.com/toolhost/toolhost/internal/testplugin"
)

// apiTest is a Server on a real Host with the built-in plugins, serving
// HTTP on a loopback port: its workspace and a client of its API.
type apiTest struct {
	t    *testing.T
	s    *Server
	root string
	base string
	hc   *http.Client
}

// unconfined makes cfg run commands without run_command's sandbox: the
// server's tests are about what it sends and when, and the sandbox has its
// own suites (host/internal/confine, host/internal/tests/confine). Sandbox
// "off" takes network "on" with it, as the configuration requires.
func unconfined(cfg *config.Config) {
	cfg.Tools.RunCommand.Sandbox = config.SandboxOff
	cfg.Tools.RunCommand.Network = config.NetworkOn
}

// serveAPI serves a fresh workspace; configure changes the default
// configuration first.
func serveAPI(t *testing.T, opts Options, configure func(*config.Config)) *apiTest {
	t.Helper()
	root := t.TempDir()
	cfg := config.Default()
	cfg.Tools.Sandbox.AllowedRoots = []string{root}
	unconfined(cfg) // the batch API's tests are not about the sandbox
	if configure != nil {
		configure(cfg)
	}
	h, err := host.Open(context.Background(), host.Options{PluginDir: testplugin.BuiltIns(t), Config: cfg, CacheDir: testplugin.CacheDir(t)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { h.Close(context.Background()) })
	s, err := New(h, opts)
	if err != nil {
		t.Fatal(err)
	}
	ln, err := Listen("127.0.0.1:0", false)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	served := make(chan error, 1)
	go func() { served <- s.ServeHTTPOn(ctx, ln, HTTPOptions{Token: testToken}) }()
	t.Cleanup(func() {
		cancel()
		if err := <-served; err != nil {
			t.Errorf("ServeHTTPOn: %v", err)
		}
	})
	return &apiTest{t: t, s: s, root: root, base: URL(ln.Addr(), ""), hc: &http.Client{Transport: bearer{http.DefaultTransport}}}
}

// do sends body (a string as is, anything else as JSON) and returns the
// status and the response's body.
func (a *apiTest) do(method, path string, body any) (int, []byte) {
	a.t.Helper()
	var r io.Reader
	switch b := body.(type) {
	case nil:
	case string:
		r = strings.NewReader(b)
	default:
		j, err := json.Marshal(b)
		if err != nil {
			a.t.Fatal(err)
		}
		r = bytes.NewReader(j)
	}
	req, err := http.NewRequest(method, a.base+path, r)
	if err != nil {
		a.t.Fatal(err)
	}
	resp, err := a.hc.Do(req)
	if err != nil {
		a.t.Fatal(err)
	}
	defer resp.Body.Close()
	out, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, out
}

// batch sends a request whose answer must be a batch with status want.
func (a *apiTest) batch(method, path string, body any, want int) batchView {
	a.t.Helper()
	status, out := a.do(method, path, body)
	if status != want {
		a.t.Fatalf("%s %s: %d %s, want %d", method, path, status, out, want)
	}
	var v batchView
	if err := json.Unmarshal(out, &v); err != nil {
		a.t.Fatalf("%s %s: %v in %s", method, path, err, out)
	}
	return v
}

// wait polls the batch until it is in state, or fails after 30 s.
func (a *apiTest) wait(id, state string) batchView {
	a.t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		v := a.batch("GET", "/v1/batches/"+id, nil, 200)
		if v.State == state {
			return v
		}
		if time.Now().After(deadline) {
			a.t.Fatalf("batch %s is %s after 30 s, want %s: %+v", id, v.State, state, v)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// sse is one Server-Sent Event.
type sse struct {
	id    int64
	event string
	data  string
}

// events reads a batch's event stream from after lastID (none: 0) to
// its end, or stops after n events when n > 0.
func (a *apiTest) events(id string, lastID int64, n int) []sse {
	a.t.Helper()
	req, _ := http.NewRequest("GET", a.base+"/v1/batches/"+id+"/events", nil)
	if lastID > 0 {
		req.Header.Set("Last-Event-ID", strconv.FormatInt(lastID, 10))
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	resp, err := a.hc.Do(req.WithContext(ctx))
	if err != nil {
		a.t.Fatal(err)
	}
	defer resp.Body.Close()
	if ct := resp.Header.Get("Content-Type"); resp.StatusCode != 200 || ct != "text/event-stream" {
		b, _ := io.ReadAll(resp.Body)
		a.t.Fatalf("events of %s: %d %s %s", id, resp.StatusCode, ct, b)
	}
	return readSSE(a.t, resp.Body, n)
}

func readSSE(t *testing.T, r io.Reader, n int) []sse {
	t.Helper()
	var out []sse
	var cur sse
	sc := bufio.NewScanner(r)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		line := sc.Text()
		switch {
		case line == "":
			if cur.event != "" {
				out = append(out, cur)
				if n > 0 && len(out) == n {
					return out
				}
			}
			cur = sse{}
		case strings.HasPrefix(line, ":"):
		case strings.HasPrefix(line, "id: "):
			cur.id, _ = strconv.ParseInt(line[4:], 10, 64)
		case strings.HasPrefix(line, "event: "):
			cur.event = line[7:]
		case strings.HasPrefix(line, "data: "):
			cur.data = line[6:]
		}
	}
	return out
}

// errMessage is the message of an API error.
func errMessage(out []byte) string {
	var e struct {
		Error struct{ Message string } `json:"error"`
	}
	json.Unmarshal(out, &e)
	return e.Error.Message
}

func kinds(evs []sse) []string {
	var ks []string
	for _, e := range evs {
		k := e.event
		if k == eventState {
			var st stateEvent
			json.Unmarshal([]byte(e.data), &st)
			k += ":" + st.State
		}
		ks = append(ks, k)
	}
	return ks
}

// TestBatchAPIApprove: a batch with a read and a replacing write plans
// the write for confirmation, waits awaiting_approval, and after
// approve_selected runs both and keeps their results in call order; its
// events stream as SSE, and a reader resuming with Last-Event-ID gets
// exactly the events after it.
func TestBatchAPIApprove(t *testing.T) {
	a := serveAPI(t, Options{}, nil)
	os.WriteFile(filepath.Join(a.root, "a.txt"), []byte("old\n"), 0o644)
	os.WriteFile(filepath.Join(a.root, "b.txt"), []byte("bee\n"), 0o644)
	first := a.batch("POST", "/v1/batches", map[string]any{"conversation_id": "c1",
		"calls": []map[string]any{{"id": "r0", "name": "read_file", "arguments": map[string]any{"path": "a.txt"}}}}, 201)
	if first.Calls[0].Disposition != engine.ExecuteNow {
		t.Fatalf("a read is planned %s, want execute: %+v", first.Calls[0].Disposition, first)
	}
	a.wait(first.BatchID, stateDone)

	v := a.batch("POST", "/v1/batches", map[string]any{"conversation_id": "c1", "turn_id": "t1", "calls": []map[string]any{
		{"id": "r1", "name": "read_file", "arguments": map[string]any{"path": "b.txt"}},
		{"id": "w1", "name": "write_file", "arguments": map[string]any{"path": "a.txt", "content": "new\n"}},
	}}, 201)
	if v.State != stateAwaiting || v.HeldForMCP || v.DecisionURL != "/v1/batches/"+v.BatchID+"/decision" {
		t.Fatalf("created: %+v; want awaiting_approval with its decision URL", v)
	}
	if c := v.Calls[1]; c.Disposition != engine.RequiresConfirmation || c.Summary == "" || c.RiskLevel == "" || c.Reason == "" {
		t.Errorf("the write is planned %+v; want confirm with a summary, a risk and a reason", c)
	}
	if c := v.Calls[0]; c.Disposition != engine.ExecuteNow || c.Summary != "" {
		t.Errorf("the read is planned %+v; want execute", c)
	}
	if got := a.batch("GET", "/v1/batches/"+v.BatchID, nil, 200); got.State != stateAwaiting {
		t.Errorf("GET: %s, want awaiting_approval", got.State)
	}
	if b, _ := os.ReadFile(filepath.Join(a.root, "a.txt")); string(b) != "old\n" {
		t.Fatalf("a.txt changed before the decision: %q", b)
	}
	// A reader that connects before the decision sees the batch through.
	streamed := make(chan []sse, 1)
	go func() { streamed <- a.events(v.BatchID, 0, 0) }()

	d := a.batch("POST", "/v1/batches/"+v.BatchID+"/decision", map[string]any{"decision": "approve_selected", "ids": []string{"w1"}}, 200)
	if d.State != stateRunning && d.State != stateDone || d.DecidedBy != decidedByAPI {
		t.Errorf("after the decision: %+v", d)
	}
	done := a.wait(v.BatchID, stateDone)
	if len(done.Results) != 2 || done.Results[0].ID != "r1" || !done.Results[0].OK || !strings.Contains(done.Results[0].Content, "bee") ||
		done.Results[1].ID != "w1" || !done.Results[1].OK {
		t.Fatalf("results %+v; want r1 and w1 succeeded, in call order", done.Results)
	}
	if b, _ := os.ReadFile(filepath.Join(a.root, "a.txt")); string(b) != "new\n" {
		t.Errorf("a.txt holds %q after the approved write", b)
	}
	if status, out := a.do("POST", "/v1/batches/"+v.BatchID+"/decision", map[string]any{"decision": "deny_all"}); status != 409 || !strings.Contains(string(out), `"StateConflict"`) {
		t.Errorf("a second decision: %d %s, want 409 StateConflict", status, out)
	}

	all := <-streamed
	want := []string{"batch_planned", "awaiting_approval", "state:awaiting_approval", "state:running", "executing",
		"started", "completed", "started", "completed", "batch_done", "state:done"}
	if got := kinds(all); !slices.Equal(got, want) {
		t.Errorf("events %q, want %q", got, want)
	}
	for i, e := range all {
		if e.id != int64(i+1) {
			t.Errorf("event %d has id %d, want %d", i, e.id, i+1)
		}
	}
	for _, from := range []int64{3, 7, int64(len(all))} {
		rest := a.events(v.BatchID, from, 0)
		if !slices.EqualFunc(rest, all[from:], func(x, y sse) bool { return x == y }) {
			t.Errorf("resumed after %d: %q, want %q", from, kinds(rest), kinds(all[from:]))
		}
	}
}

// TestBatchAPIRunsAtOnce: a batch with nothing to approve runs when it is
// created; one that approves nothing denies the write saying who decided.
func TestBatchAPIDenyAll(t *testing.T) {
	a := serveAPI(t, Options{}, nil)
	os.WriteFile(filepath.Join(a.root, "a.txt"), []byte("old\n"), 0o644)
	a.wait(a.batch("POST", "/v1/batches", map[string]any{"conversation_id": "c1",
		"calls": []map[string]any{{"id": "r0", "name": "read_file", "arguments": map[string]any{"path": "a.txt"}}}}, 201).BatchID, stateDone)
	v := a.batch("POST", "/v1/batches", map[string]any{"conversation_id": "c1", "calls": []map[string]any{
		{"id": "w1", "name": "write_file", "arguments": map[string]any{"path": "a.txt", "content": "new\n"}},
		{"id": "x1", "name": "no_such_tool", "arguments": map[string]any{}},
	}}, 201)
	if v.Calls[1].Disposition != engine.PreResolved || v.Calls[1].Result == nil || v.Calls[1].Result.Error == nil {
		t.Errorf("an unknown tool is planned %+v, want pre_resolved with its error", v.Calls[1])
	}
	a.batch("POST", "/v1/batches/"+v.BatchID+"/decision", map[string]any{"decision": "deny_all"}, 200)
	done := a.wait(v.BatchID, stateDone)
	if r := done.Results[0]; r.OK || r.Error == nil || !strings.Contains(r.Error.Message, decidedByAPI) {
		t.Errorf("the denied write: %+v; want a denial naming %q", r, decidedByAPI)
	}
	if b, _ := os.ReadFile(filepath.Join(a.root, "a.txt")); string(b) != "old\n" {
		t.Errorf("a.txt holds %q after deny_all", b)
	}
}

// TestBatchAPIErrors: every refusal has the API's error shape, the right
// status, and names what is wrong.
func TestBatchAPIErrors(t *testing.T) {
	a := serveAPI(t, Options{}, nil)
	os.WriteFile(filepath.Join(a.root, "a.txt"), []byte("old\n"), 0o644)
	a.wait(a.batch("POST", "/v1/batches", map[string]any{"conversation_id": "c1",
		"calls": []map[string]any{{"id": "r0", "name": "read_file", "arguments": map[string]any{"path": "a.txt"}}}}, 201).BatchID, stateDone)
	held := a.batch("POST", "/v1/batches", map[string]any{"conversation_id": "c1", "calls": []map[string]any{
		{"id": "w1", "name": "write_file", "arguments": map[string]any{"path": "a.txt", "content": "new\n"}}}}, 201)
	done := a.batch("POST", "/v1/batches", map[string]any{"conversation_id": "c1", "calls": []map[string]any{
		{"id": "r2", "name": "read_file", "arguments": map[string]any{"path": "a.txt"}}}}, 201)
	a.wait(done.BatchID, stateDone)
	id := held.BatchID
	for _, tc := range []struct {
		method, path string
		body         any
		status       int
		kind         string
		want         []string
	}{
		{"POST", "/v1/batches", `{"conversation_id":`, 400, "InvalidRequest", []string{"not the JSON"}},
		{"POST", "/v1/batches", ``, 400, "InvalidRequest", []string{"body is empty"}},
		{"POST", "/v1/batches", `{"conversation_id":"c","calls":[],"extra":1}`, 400, "InvalidRequest", []string{`"extra"`}},
		{"POST", "/v1/batches", `{"calls":[{"id":"1","name":"read_file"}]}`, 400, "InvalidRequest", []string{"conversation_id is missing"}},
		{"POST", "/v1/batches", `{"conversation_id":"a b","calls":[{"id":"1","name":"read_file"}]}`, 400, "InvalidRequest", []string{"conversation_id", "not a conversation id"}},
		{"POST", "/v1/batches", `{"conversation_id":"c","calls":[]}`, 400, "InvalidRequest", []string{"calls is empty"}},
		{"POST", "/v1/batches", `{"conversation_id":"c","calls":[{"id":1}]}`, 400, "InvalidRequest", []string{"calls.id"}},
		{"GET", "/v1/batches/batch_nope", nil, 404, "UnknownBatch", []string{`"batch_nope"`}},
		{"POST", "/v1/batches/batch_nope/decision", `{"decision":"approve_all"}`, 404, "UnknownBatch", []string{`"batch_nope"`}},
		{"POST", "/v1/batches/" + id + "/decision", `{"decision":"yes"}`, 400, "InvalidRequest", []string{`"yes"`, "approve_all, deny_all or approve_selected"}},
		{"POST", "/v1/batches/" + id + "/decision", `{}`, 400, "InvalidRequest", []string{"decision is missing"}},
		{"POST", "/v1/batches/" + id + "/decision", `{"decision":"approve_selected","ids":["w1","zz"]}`, 400, "InvalidRequest", []string{`"zz"`, `those are "w1"`}},
		{"POST", "/v1/batches/" + id + "/decision", `{"decision":"approve_selected"}`, 400, "InvalidRequest", []string{"needs ids"}},
		{"POST", "/v1/batches/" + id + "/decision", `{"decision":"deny_all","ids":["w1"]}`, 400, "InvalidRequest", []string{"only with approve_selected"}},
		{"POST", "/v1/batches/" + id + "/results", `{"results":[{"id":"w1","content":"x"}]}`, 409, "StateConflict", []string{"awaiting_approval", "parse_only"}},
		{"POST", "/v1/batches/" + done.BatchID + "/decision", `{"decision":"approve_all"}`, 409, "StateConflict", []string{"is done"}},
		{"POST", "/v1/batches/" + done.BatchID + "/cancel", nil, 409, "StateConflict", []string{"is done", "cannot be cancelled"}},
		{"GET", "/v1/batches?state=sleeping", nil, 400, "InvalidRequest", []string{`"sleeping"`}},
		{"GET", "/v1/tools?format=xml", nil, 400, "InvalidRequest", []string{`"xml"`, "openai", "anthropic", "gemini", "mcp"}},
		{"DELETE", "/v1/batches/" + id, nil, 405, "MethodNotAllowed", []string{"takes GET"}},
		{"GET", "/v1/batches/" + id + "/cancel", nil, 405, "MethodNotAllowed", []string{"takes POST"}},
		{"PUT", "/v1/batches", nil, 405, "MethodNotAllowed", []string{"POST, GET"}},
		{"GET", "/v1/batches/" + id + "/nothing", nil, 404, "NotFound", []string{"openapi.json"}},
		{"POST", "/v1/batches", `{"conversation_id":"c","calls":[{"id":"1","name":"read_file","arguments":{"path":"` + strings.Repeat("x", DefaultMaxBodyBytes) + `"}}]}`, 413, "RequestTooLarge", []string{"bytes"}},
	} {
		status, out := a.do(tc.method, tc.path, tc.body)
		var e struct {
			Error struct{ Kind, Message string } `json:"error"`
		}
		if err := json.Unmarshal(out, &e); err != nil || status != tc.status || e.Error.Kind != tc.kind {
			t.Errorf("%s %s: %d %s; want %d %s", tc.method, tc.path, status, truncate(string(out), 300), tc.status, tc.kind)
			continue
		}
		for _, w := range tc.want {
			if !strings.Contains(e.Error.Message, w) {
				t.Errorf("%s %s: %q lacks %q", tc.method, tc.path, e.Error.Message, w)
			}
		}
	}
	// Without the token: 401, with the same shape.
	resp, err := http.Get(a.base + "/v1/batches/" + id)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 401 || !strings.Contains(string(b), `"kind":"Unauthorized"`) {
		t.Errorf("GET without a token: %d %s", resp.StatusCode, b)
	}
	if v := a.batch("GET", "/v1/batches/"+id, nil, 200); v.State != stateAwaiting {
		t.Errorf("the refusals changed the batch: %+v", v)
	}
}

// readFirst has conversation c1 read names, so that a write replacing
// one is asked about rather than refused as stale before anyone is asked.
func (a *apiTest) readFirst(names ...string) {
	a.t.Helper()
	var calls []map[string]any
	for i, name := range names {
		calls = append(calls, map[string]any{"id": fmt.Sprintf("read%d", i), "name": "read_file", "arguments": map[string]any{"path": name}})
	}
	a.wait(a.batch("POST", "/v1/batches", map[string]any{"conversation_id": "c1", "calls": calls}, 201).BatchID, stateDone)
}

// TestBatchAPILimit: when every place is taken by an unfinished batch a
// new one gets 429; a finished one makes room.
func TestBatchAPILimit(t *testing.T) {
	a := serveAPI(t, Options{}, nil)
	a.s.batches.max = 2
	os.WriteFile(filepath.Join(a.root, "a.txt"), []byte("old\n"), 0o644)
	a.readFirst("a.txt")
	write := map[string]any{"conversation_id": "c1", "calls": []map[string]any{
		{"id": "w", "name": "write_file", "arguments": map[string]any{"path": "a.txt", "content": "new\n"}}}}
	one := a.batch("POST", "/v1/batches", write, 201)
	a.batch("POST", "/v1/batches", write, 201)
	if status, out := a.do("POST", "/v1/batches", write); status != 429 || !strings.Contains(string(out), `"TooManyBatches"`) || !strings.Contains(string(out), "awaiting_approval") {
		t.Fatalf("a third unfinished batch: %d %s, want 429 TooManyBatches", status, out)
	}
	a.batch("POST", "/v1/batches/"+one.BatchID+"/cancel", nil, 200)
	a.batch("POST", "/v1/batches", write, 201)
	if status, _ := a.do("GET", "/v1/batches/"+one.BatchID, nil); status != 404 {
		t.Errorf("the finished batch that made room: %d, want 404", status)
	}
	status, out := a.do("GET", "/v1/batches?state=awaiting_approval", nil)
	var list struct{ Batches []batchView }
	if err := json.Unmarshal(out, &list); status != 200 || err != nil || len(list.Batches) != 2 || list.Batches[0].State != stateAwaiting {
		t.Errorf("GET /v1/batches?state=awaiting_approval: %d %s, want the 2 awaiting", status, out)
	}
}

// TestBatchAPICancel: cancelling an awaiting batch ends it with no call
// run; cancelling a running one kills its command and ends it cancelled.
func TestBatchAPICancel(t *testing.T) {
	a := serveAPI(t, Options{}, func(c *config.Config) {
		c.Tools.Approval.Mode = config.ApprovalAuto
		c.Tools.Approval.Denylist = nil
	})
	v := a.batch("POST", "/v1/batches", map[string]any{"conversation_id": "c1", "calls": []map[string]any{
		{"id": "r", "name": "list_directory", "arguments": map[string]any{"path": "."}},
		{"id": "c", "name": "run_command", "arguments": map[string]any{"command": "echo $$ > pid; exec sleep 30"}},
	}}, 201)
	if v.State != stateAwaiting {
		t.Fatalf("run_command should ask: %+v", v)
	}
	// Cancelled before the decision: nothing runs.
	c := a.batch("POST", "/v1/batches/"+v.BatchID+"/cancel", nil, 200)
	if c.State != stateCancelled || len(c.Results) != 2 || c.Results[0].Error == nil || c.Results[0].Error.Kind != "Cancelled" {
		t.Fatalf("cancelled while awaiting: %+v", c)
	}
	if status, out := a.do("POST", "/v1/batches/"+v.BatchID+"/decision", map[string]any{"decision": "approve_all"}); status != 409 {
		t.Errorf("a decision after the cancel: %d %s, want 409", status, out)
	}
	// A client that sends its cancel again (its answer was lost) is told
	// the batch is cancelled, not that it cannot be.
	if again := a.batch("POST", "/v1/batches/"+v.BatchID+"/cancel", nil, 200); again.State != stateCancelled || len(again.Results) != 2 {
		t.Errorf("a second cancel: %+v, want the cancelled batch", again)
	}

	v = a.batch("POST", "/v1/batches", map[string]any{"conversation_id": "c1", "calls": []map[string]any{
		{"id": "c", "name": "run_command", "arguments": map[string]any{"command": "echo $$ > pid; exec sleep 30"}}}}, 201)
	a.batch("POST", "/v1/batches/"+v.BatchID+"/decision", map[string]any{"decision": "approve_all"}, 200)
	pid := waitPID(t, filepath.Join(a.root, "pid"))
	start := time.Now()
	c = a.batch("POST", "/v1/batches/"+v.BatchID+"/cancel", nil, 200)
	if c.State == stateRunning && !c.CancelRequested {
		t.Errorf("cancelling a running batch: %+v, want cancel_requested", c)
	}
	c = a.wait(v.BatchID, stateCancelled)
	if r := c.Results[0]; r.OK || r.Error == nil {
		t.Errorf("the cancelled command's result: %+v", r)
	}
	if d := time.Since(start); d > 10*time.Second {
		t.Errorf("the cancel took %v", d)
	}
	if alive(pid) {
		t.Errorf("the command's process %d outlived the cancel", pid)
	}
}

// waitPID reads a pid a command wrote to file.
func waitPID(t *testing.T, file string) int {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		b, err := os.ReadFile(file)
		if pid, perr := strconv.Atoi(strings.TrimSpace(string(b))); err == nil && perr == nil {
			return pid
		}
		if time.Now().After(deadline) {
			t.Fatalf("no pid in %s after 30 s", file)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// alive reports whether pid runs (a zombie does not count), waiting up to
// 5 s for it to end.
func alive(pid int) bool {
	for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
		if err != nil {
			return false
		}
		if f := strings.Fields(string(b)); len(f) > 2 && f[2] == "Z" {
			return false
		}
	}
	return true
}

// TestBatchAPIParseOnly: in parse_only mode calls are pending until the
// client submits their results; then the batch is done with them, in
// call order (FR-MODE-02).
func TestBatchAPIParseOnly(t *testing.T) {
	a := serveAPI(t, Options{}, func(c *config.Config) { c.Tools.Mode = config.ModeParseOnly })
	v := a.batch("POST", "/v1/batches", map[string]any{"conversation_id": "c1", "calls": []map[string]any{
		{"id": "p1", "name": "read_file", "arguments": map[string]any{"path": "a.txt"}},
		{"id": "p2", "name": "list_directory", "arguments": map[string]any{"path": "."}},
	}}, 201)
	if v.State != statePending || v.Calls[0].Disposition != engine.Pending {
		t.Fatalf("created: %+v, want pending_results", v)
	}
	if status, out := a.do("POST", "/v1/batches/"+v.BatchID+"/results", `{"results":[{"id":"p9","content":"x"}]}`); status != 400 || !strings.Contains(errMessage(out), `"p9"`) || !strings.Contains(errMessage(out), `"p1", "p2"`) {
		t.Errorf("a result for no pending call: %d %s", status, out)
	}
	if status, out := a.do("POST", "/v1/batches/"+v.BatchID+"/decision", `{"decision":"approve_all"}`); status != 409 {
		t.Errorf("a decision in parse_only: %d %s, want 409", status, out)
	}
	v = a.batch("POST", "/v1/batches/"+v.BatchID+"/results", map[string]any{"results": []map[string]any{{"id": "p2", "content": "listing", "is_error": true}}}, 200)
	if v.State != statePending {
		t.Errorf("one result of two: %s, want still pending_results", v.State)
	}
	if status, out := a.do("POST", "/v1/batches/"+v.BatchID+"/results", `{"results":[{"id":"p2","content":"again"}]}`); status != 400 || !strings.Contains(string(out), "already has a result") {
		t.Errorf("a second result for p2: %d %s", status, out)
	}
	a.batch("POST", "/v1/batches/"+v.BatchID+"/results", map[string]any{"results": []map[string]any{{"id": "p1", "content": "file text"}}}, 200)
	done := a.wait(v.BatchID, stateDone)
	if r := done.Results; len(r) != 2 || r[0].ID != "p1" || !r[0].OK || r[0].Content != "file text" || r[1].ID != "p2" || r[1].OK || r[1].Error == nil || r[1].Error.Message != "listing" {
		t.Errorf("results %+v", r)
	}
}

// TestBatchAPITools: GET /v1/tools gives the offered tools in each
// format toolhost tools --format knows.
func TestBatchAPITools(t *testing.T) {
	a := serveAPI(t, Options{}, nil)
	for _, format := range host.Formats() {
		status, out := a.do("GET", "/v1/tools?format="+format, nil)
		want, err := host.Definitions(a.s.h.Tools(), format)
		if err != nil {
			t.Fatal(err)
		}
		wantJSON, _ := json.Marshal(want)
		var got struct {
			Format string          `json:"format"`
			Tools  json.RawMessage `json:"tools"`
		}
		if err := json.Unmarshal(out, &got); status != 200 || err != nil || got.Format != format {
			t.Fatalf("GET /v1/tools?format=%s: %d %s", format, status, truncate(string(out), 200))
		}
		var g, w any
		json.Unmarshal(got.Tools, &g)
		json.Unmarshal(wantJSON, &w)
		if fmt.Sprint(g) != fmt.Sprint(w) || !strings.Contains(string(got.Tools), "read_file") {
			t.Errorf("format %s: the tools differ from toolhost tools --format %s", format, format)
		}
	}
}

// TestEventLogCap: a log past its bounds keeps its newest events and its
// last; a reader behind is told how many it missed, and the last event
// counts them.
func TestEventLogCap(t *testing.T) {
	b := newBatch(context.Background(), "batch_x", "c", stateRunning, nil)
	for i := range maxLogEvents + 50 {
		b.Send(context.Background(), engine.Event{Kind: engine.EventStdoutChunk, BatchID: "batch_x", Chunk: strconv.Itoa(i)})
	}
	b.finish(nil)
	b.mu.Lock()
	events, missed, ended, _ := b.log.since(0)
	b.mu.Unlock()
	if missed != 51 || !ended || len(events) != maxLogEvents || !events[len(events)-1].final {
		t.Fatalf("missed %d, ended %v, %d events kept", missed, ended, len(events))
	}
	var last stateEvent
	json.Unmarshal(events[len(events)-1].Data, &last)
	if last.State != stateDone || last.Dropped != 51 {
		t.Errorf("the last event %+v, want done with 51 dropped", last)
	}
	big := strings.Repeat("x", 1<<20)
	b = newBatch(context.Background(), "batch_y", "c", stateRunning, nil)
	for range 12 {
		b.Send(context.Background(), engine.Event{Kind: engine.EventStdoutChunk, Chunk: big})
	}
	if b.log.bytes > maxLogBytes || b.log.evicted == 0 {
		t.Errorf("the log holds %d bytes, evicted %d", b.log.bytes, b.log.evicted)
	}
}

// TestBatchAPIShutdown: an event stream open on a batch awaiting a
// decision does not hold the server's shutdown: the stream ends, the
// batch is cancelled, and ServeHTTPOn returns well before its bound.
func TestBatchAPIShutdown(t *testing.T) {
	root := t.TempDir()
	os.WriteFile(filepath.Join(root, "a.txt"), []byte("old\n"), 0o644)
	cfg := config.Default()
	cfg.Tools.Sandbox.AllowedRoots = []string{root}
	h, err := host.Open(context.Background(), host.Options{PluginDir: testplugin.BuiltIns(t), Config: cfg, CacheDir: testplugin.CacheDir(t)})
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close(context.Background())
	s, err := New(h, Options{})
	if err != nil {
		t.Fatal(err)
	}
	ln, err := Listen("127.0.0.1:0", false)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	served := make(chan error, 1)
	go func() { served <- s.ServeHTTPOn(ctx, ln, HTTPOptions{Token: testToken}) }()
	a := &apiTest{t: t, s: s, root: root, base: URL(ln.Addr(), ""), hc: &http.Client{Transport: bearer{http.DefaultTransport}}}
	a.wait(a.batch("POST", "/v1/batches", map[string]any{"conversation_id": "c1",
		"calls": []map[string]any{{"id": "r0", "name": "read_file", "arguments": map[string]any{"path": "a.txt"}}}}, 201).BatchID, stateDone)
	v := a.batch("POST", "/v1/batches", map[string]any{"conversation_id": "c1", "calls": []map[string]any{
		{"id": "w1", "name": "write_file", "arguments": map[string]any{"path": "a.txt", "content": "new\n"}}}}, 201)
	streamed := make(chan []sse, 1)
	go func() { streamed <- a.events(v.BatchID, 0, 0) }()
	time.Sleep(200 * time.Millisecond) // the stream is open and waiting
	start := time.Now()
	cancel()
	select {
	case err := <-served:
		if err != nil {
			t.Errorf("ServeHTTPOn: %v", err)
		}
	case <-time.After(shutdownTimeout + 5*time.Second):
		t.Fatal("ServeHTTPOn did not return")
	}
	if d := time.Since(start); d > shutdownTimeout/2 {
		t.Errorf("shutdown took %v with an event stream open", d)
	}
	select {
	case evs := <-streamed:
		if len(evs) < 3 {
			t.Errorf("the stream before shutdown: %q", kinds(evs))
		}
		t.Logf("events: %q", kinds(evs))
	case <-time.After(5 * time.Second):
		t.Error("the event stream did not end at shutdown")
	}
	if b, _ := os.ReadFile(filepath.Join(root, "a.txt")); string(b) != "old\n" {
		t.Errorf("a.txt holds %q: the write ran at shutdown", b)
	}
}

// TestDecisionCheckedWhileResultsArrive: a client sends a decision to a
// parse_only batch while its results arrive on another connection. The
// decision is refused (nothing awaits approval) and checking it reads
// the batch's calls under the batch's lock, not while a result is
// written into them (run under -race).
func TestDecisionCheckedWhileResultsArrive(t *testing.T) {
	a := serveAPI(t, Options{}, func(c *config.Config) { c.Tools.Mode = config.ModeParseOnly })
	v := a.batch("POST", "/v1/batches", map[string]any{"conversation_id": "c1", "calls": []map[string]any{
		{"id": "p1", "name": "read_file", "arguments": map[string]any{"path": "a.txt"}},
		{"id": "p2", "name": "read_file", "arguments": map[string]any{"path": "b.txt"}},
	}}, 201)
	b, ok := a.s.batches.get(v.BatchID)
	if !ok {
		t.Fatal("the batch is not kept")
	}
	resolved := make(chan int, 1)
	go func() {
		status, _, _ := b.resolve([]submittedResult{{ID: "p1", Content: "text"}}, 6)
		resolved <- status
	}()
	msg := b.checkDecision(decisionRequest{Decision: "approve_selected", IDs: []string{"p1"}})
	if status := <-resolved; status != 0 {
		t.Errorf("the result was refused: %d", status)
	}
	if !strings.Contains(msg, `"p1"`) || !strings.Contains(msg, "await approval") || !strings.Contains(msg, "none does") {
		t.Errorf("approve_selected of a pending call: %q, want it refused naming the call", msg)
	}
}
