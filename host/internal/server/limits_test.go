package server

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/toolhost/toolhost/host/internal/config"
	"github.com/toolhost/toolhost/host/internal/engine"
)

// TestBatchAPIMemoryBudget: a client holding the token posts batches of
// large arguments and never decides them. Each is kept until decided,
// so without a budget across batches 1000 such batches would hold
// gigabytes; past the budget a new one gets 429 saying what fills it,
// and a finished batch's bytes make room.
func TestBatchAPIMemoryBudget(t *testing.T) {
	a := serveAPI(t, Options{}, nil)
	a.s.batches.maxBytes = 8 << 20
	// Five calls of 200 KiB arguments each (under max_tool_args_bytes),
	// each overwriting a file, so the batch awaits a decision.
	content := strings.Repeat("x", 200<<10)
	var calls []map[string]any
	for i := range 5 {
		name := fmt.Sprintf("f%d.txt", i)
		os.WriteFile(filepath.Join(a.root, name), []byte("old\n"), 0o644)
		a.readFirst(name)
		calls = append(calls, map[string]any{"id": fmt.Sprintf("w%d", i), "name": "write_file", "arguments": map[string]any{"path": name, "content": content}})
	}
	write := map[string]any{"conversation_id": "c1", "calls": calls}
	refused := false
	for i := range 10 {
		status, out := a.do("POST", "/v1/batches", write)
		if status == 429 {
			if !strings.Contains(string(out), `"TooManyBatches"`) || !strings.Contains(string(out), "MiB") || !strings.Contains(string(out), "/cancel") {
				t.Fatalf("batch %d refused with %s; want TooManyBatches naming the budget and what to do", i, out)
			}
			refused = true
			break
		}
		if status != 201 {
			t.Fatalf("batch %d: %d %s", i, status, out)
		}
		if v := a.batch("GET", "/v1/batches/"+batchID(t, out), nil, 200); v.State != stateAwaiting {
			t.Fatalf("batch %d is %s, want it awaiting a decision: %+v", i, v.State, v)
		}
	}
	if !refused {
		t.Fatalf("10 batches of 1 MiB of arguments were kept with a budget of 8 MiB")
	}
	if a.s.batches.bytes > a.s.batches.maxBytes {
		t.Errorf("the batches kept hold %d bytes, more than the budget of %d", a.s.batches.bytes, a.s.batches.maxBytes)
	}
	// Cancelling one makes room: it is finished, so it is evicted.
	status, out := a.do("GET", "/v1/batches?state=awaiting_approval", nil)
	if status != 200 {
		t.Fatal(string(out))
	}
	id := firstBatchID(t, out)
	a.batch("POST", "/v1/batches/"+id+"/cancel", nil, 200)
	a.batch("POST", "/v1/batches", write, 201)
}

// TestEventLogsShareABudget: many batches with chatty commands cannot
// hold more than the logs' shared budget: a log that would pass it
// evicts the oldest finished batches first, then its own oldest events.
func TestEventLogsShareABudget(t *testing.T) {
	r := newRegistry()
	r.logs.max = 4 << 20
	big := strings.Repeat("x", 256<<10)
	var all []*batch
	for i := range 10 {
		b := newBatch(context.Background(), "batch_"+string(rune('a'+i)), "c", stateRunning, nil)
		if err := r.add(b); err != nil {
			t.Fatal(err)
		}
		all = append(all, b)
		for range 8 { // 2 MiB each
			b.Send(context.Background(), engine.Event{Kind: engine.EventStdoutChunk, Chunk: big})
		}
		b.finish(nil)
		if used := r.logs.used.Load(); used > r.logs.max+1<<20 {
			t.Fatalf("after batch %d the logs hold %d bytes, budget %d", i, used, r.logs.max)
		}
	}
	if _, ok := r.get(all[0].id); ok {
		t.Error("the oldest finished batch is still kept though the logs are over their budget")
	}
	last := all[len(all)-1]
	last.mu.Lock()
	evs, missed, _, _ := last.log.since(0)
	last.mu.Unlock()
	if missed != 0 || len(evs) != 9 {
		t.Errorf("the newest batch kept %d events and missed %d; it fits the budget alone, so want all 9", len(evs), missed)
	}
}

// firstBatchID is the id of the first batch of a GET /v1/batches answer.
func firstBatchID(t *testing.T, out []byte) string {
	t.Helper()
	var list struct{ Batches []batchView }
	if err := json.Unmarshal(out, &list); err != nil || len(list.Batches) == 0 {
		t.Fatalf("GET /v1/batches: %v in %s", err, out)
	}
	return list.Batches[0].BatchID
}

// batchID is the id of the batch an answer shows.
func batchID(t *testing.T, out []byte) string {
	t.Helper()
	var v batchView
	if err := json.Unmarshal(out, &v); err != nil || v.BatchID == "" {
		t.Fatalf("not a batch: %v in %s", err, out)
	}
	return v.BatchID
}

// openStream opens a batch's event stream on a connection of its own
// and returns the connection and the status line; it reads nothing
// more, as a client that never reads.
func openStream(t *testing.T, base, id string) (net.Conn, string) {
	t.Helper()
	addr := strings.TrimPrefix(base, "http://")
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	fmt.Fprintf(c, "GET /v1/batches/%s/events HTTP/1.1\r\nHost: %s\r\nAuthorization: Bearer %s\r\n\r\n", id, addr, testToken)
	c.SetReadDeadline(time.Now().Add(30 * time.Second))
	line, err := bufio.NewReader(io.LimitReader(c, 200)).ReadString('\n')
	if err != nil {
		t.Fatalf("GET events: %v", err)
	}
	c.SetReadDeadline(time.Time{})
	return c, strings.TrimSpace(line)
}

// streamAnswer asks for a batch's event stream and returns the status
// and, unless the stream was served, the body.
func (a *apiTest) streamAnswer(id string) (int, string) {
	a.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, "GET", a.base+"/v1/batches/"+id+"/events", nil)
	resp, err := a.hc.Do(req)
	if err != nil {
		a.t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode == http.StatusOK {
		return resp.StatusCode, "(an event stream)"
	}
	out, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(out)
}

// TestEventStreamsAreBounded: a client holding the token opens event
// streams on one batch and never closes them: past the limit per batch,
// and past the limit for the whole server, a new stream gets 429 naming
// the limit; closing one makes room.
func TestEventStreamsAreBounded(t *testing.T) {
	a := serveAPI(t, Options{}, nil)
	a.s.batches.maxBatchStreams = 3
	a.s.batches.maxStreams = 5
	os.WriteFile(filepath.Join(a.root, "a.txt"), []byte("old\n"), 0o644)
	a.readFirst("a.txt")
	write := map[string]any{"conversation_id": "c1", "calls": []map[string]any{
		{"id": "w", "name": "write_file", "arguments": map[string]any{"path": "a.txt", "content": "new\n"}}}}
	one := a.batch("POST", "/v1/batches", write, 201).BatchID
	two := a.batch("POST", "/v1/batches", write, 201).BatchID
	var open []net.Conn
	for range 3 {
		c, status := openStream(t, a.base, one)
		if !strings.Contains(status, " 200 ") {
			t.Fatalf("a stream within the limit: %s", status)
		}
		open = append(open, c)
	}
	if status, out := a.streamAnswer(one); status != 429 || !strings.Contains(string(out), `"TooManyStreams"`) || !strings.Contains(string(out), "Last-Event-ID") {
		t.Fatalf("a fourth stream on one batch: %d %s, want 429 TooManyStreams", status, out)
	}
	for range 2 {
		if _, status := openStream(t, a.base, two); !strings.Contains(status, " 200 ") {
			t.Fatalf("a stream on another batch within the server's limit: %s", status)
		}
	}
	if status, out := a.streamAnswer(two); status != 429 || !strings.Contains(string(out), `"TooManyStreams"`) {
		t.Fatalf("a sixth stream on the server: %d %s, want 429 TooManyStreams", status, out)
	}
	open[0].Close()
	deadline := time.Now().Add(10 * time.Second)
	for {
		c, status := openStream(t, a.base, one)
		c.Close()
		if strings.Contains(status, " 200 ") {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("a stream after one was closed: %s", status)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// TestStalledEventStreamIsDropped: a client opens a batch's event stream
// and never reads while the batch streams output: once a write has
// waited the stream's write timeout the server drops the stream, so it
// neither holds a handler forever nor keeps its place.
func TestStalledEventStreamIsDropped(t *testing.T) {
	a := serveAPI(t, Options{}, nil)
	a.s.batches.streamWriteTimeout = 500 * time.Millisecond
	os.WriteFile(filepath.Join(a.root, "a.txt"), []byte("old\n"), 0o644)
	a.readFirst("a.txt")
	write := map[string]any{"conversation_id": "c1", "calls": []map[string]any{
		{"id": "w", "name": "write_file", "arguments": map[string]any{"path": "a.txt", "content": "new\n"}}}}
	id := a.batch("POST", "/v1/batches", write, 201).BatchID
	b, _ := a.s.batches.get(id)
	openStream(t, a.base, id)
	big := strings.Repeat("x", 256<<10)
	start := time.Now()
	for time.Since(start) < 20*time.Second {
		// Output as a running command's would come, far more than the
		// socket buffers hold.
		for range 16 {
			b.Send(context.Background(), engine.Event{Kind: engine.EventStdoutChunk, BatchID: id, Chunk: big})
		}
		if a.s.batches.openStreams() == 0 {
			return
		}
		time.Sleep(100 * time.Millisecond)
	}
	t.Fatalf("a stream nobody reads is still served after %v", time.Since(start))
}

// TestUndecidedBatchExpires: a client posts batches that need a decision
// and walks away. They must not hold their places and bytes for the
// server's life: after the decision timeout a batch ends cancelled, its
// calls saying no decision came and what to do.
func TestUndecidedBatchExpires(t *testing.T) {
	a := serveAPI(t, Options{}, nil)
	a.s.batches.decisionTimeout = 500 * time.Millisecond
	os.WriteFile(filepath.Join(a.root, "a.txt"), []byte("old\n"), 0o644)
	a.readFirst("a.txt")
	write := map[string]any{"conversation_id": "c1", "calls": []map[string]any{
		{"id": "w", "name": "write_file", "arguments": map[string]any{"path": "a.txt", "content": "new\n"}}}}
	id := a.batch("POST", "/v1/batches", write, 201).BatchID
	time.Sleep(time.Second)
	v := a.wait(id, stateCancelled)
	if len(v.Results) != 1 || v.Results[0].Error == nil || !strings.Contains(v.Results[0].Error.Message, "no decision came") || !strings.Contains(v.Results[0].Error.Message, "again") {
		t.Errorf("the expired batch's results: %+v, want the call cancelled saying no decision came", v.Results)
	}
	if status, out := a.do("POST", "/v1/batches/"+id+"/decision", map[string]any{"decision": "approve_all"}); status != 409 {
		t.Errorf("a decision after the batch expired: %d %s, want 409", status, out)
	}
	if b, _ := os.ReadFile(filepath.Join(a.root, "a.txt")); string(b) != "old\n" {
		t.Errorf("a.txt holds %q", b)
	}
}

// TestSubmittedResultsCountAgainstBudget: in parse_only mode a client
// holding the token submits large results for pending calls and never
// submits the last one. The results are kept as long as the batch, so
// they count against the batches' budget when submitted, not only once
// the batch ends: past it a submission gets 429 saying what to do, and
// a finished batch counts its results once.
func TestSubmittedResultsCountAgainstBudget(t *testing.T) {
	a := serveAPI(t, Options{}, func(c *config.Config) { c.Tools.Mode = config.ModeParseOnly })
	a.s.batches.maxBytes = 1 << 20
	two := map[string]any{"conversation_id": "c1", "calls": []map[string]any{
		{"id": "p1", "name": "read_file", "arguments": map[string]any{"path": "a.txt"}},
		{"id": "p2", "name": "read_file", "arguments": map[string]any{"path": "b.txt"}},
	}}
	big := strings.Repeat("x", 700<<10)
	submit := func(id, call, content string) (int, []byte) {
		return a.do("POST", "/v1/batches/"+id+"/results", map[string]any{"results": []map[string]any{{"id": call, "content": content}}})
	}
	first := a.batch("POST", "/v1/batches", two, 201).BatchID
	if status, out := submit(first, "p1", big); status != 200 {
		t.Fatalf("a result within the budget: %d %s", status, truncate(string(out), 300))
	}
	second := a.batch("POST", "/v1/batches", two, 201).BatchID
	// A result the batch would refuse anyway says why, not that the
	// budget is full.
	if status, out := submit(second, "p9", big); status != 400 || !strings.Contains(errMessage(out), `"p9"`) {
		t.Errorf("a result for no pending call past the budget: %d %s, want 400 naming it", status, truncate(string(out), 300))
	}
	status, out := submit(second, "p1", big)
	if status != 429 || !strings.Contains(string(out), `"TooManyBatches"`) || !strings.Contains(string(out), "MiB") || !strings.Contains(string(out), "pending_results") {
		t.Fatalf("a result past the budget: %d %s, want 429 TooManyBatches naming the budget and what to do", status, truncate(string(out), 300))
	}
	if v := a.batch("GET", "/v1/batches/"+second, nil, 200); v.State != statePending || v.Calls[0].Result != nil {
		t.Errorf("the refused result was kept: %+v", v)
	}
	// The first batch ends: its result counts once, so the budget holds.
	if status, out := submit(first, "p2", "small"); status != 200 {
		t.Fatalf("the last result: %d %s", status, truncate(string(out), 300))
	}
	a.wait(first, stateDone)
	a.s.batches.mu.Lock()
	held, limit := a.s.batches.bytes, a.s.batches.maxBytes
	a.s.batches.mu.Unlock()
	if held > limit {
		t.Errorf("the batches kept hold %d bytes, more than the budget of %d: a submitted result counted twice", held, limit)
	}
}
