package hostile_test

// Attack (a client holding the token): make toolhost serve hold far more
// memory than the batch API's budget says, through what an approval view
// holds. Batches of writes of a new code file (each waits for a
// decision, so each is kept with its view) carry 80,000 short lines a
// call: a view that keeps a string per line, the dry run's diff and
// copies of both holds many times the arguments the budget counts. What
// a held batch holds must count against the budget (past it the server
// answers 429 and keeps no more), the list of held batches must not be
// built whole in memory, and what the batches held must be given back
// once they are decided.

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"
)

// avmBatch is a batch of eight writes of new code files (.vscode/, which
// policy always asks about) of 80,000 lines each: about 1.9 MB of JSON.
func avmBatch(n int) []byte {
	content := strings.Repeat("x\n", 80000)
	var calls []map[string]any
	for i := range 8 {
		calls = append(calls, map[string]any{"id": fmt.Sprintf("w%d", i), "name": "write_file",
			"arguments": map[string]any{"path": fmt.Sprintf(".vscode/m%d_%d.json", n, i), "content": content}})
	}
	body, _ := json.Marshal(map[string]any{"conversation_id": fmt.Sprintf("avm-%d", n), "calls": calls})
	return body
}

// avmRSSBound is the most the server may hold with batches awaiting a
// decision: the documented 256 MiB budget, with room for the runtime,
// the compiled plugins and a collector's headroom.
const avmRSSBound = 1 << 30

// avmIdleSlack is the most it may keep once they are decided beyond what
// it held warmed up before them: a collector's headroom. The warmed-up
// server's own memory is measured, not assumed: with nineteen plugins it
// held 545-630 MiB from one start to the next; the peak it falls from
// is near 1 GiB.
const avmIdleSlack = 128 << 20

// avmWarmed waits, at most a minute, for s to have warmed up its plugins,
// and returns its memory then.
func avmWarmed(t *testing.T, s *pinServer) pinMemory {
	t.Helper()
	for end := time.Now().Add(time.Minute); ; time.Sleep(100 * time.Millisecond) {
		_, out := s.do(t, "GET", "/v1/health", nil)
		var h struct {
			Warmup struct {
				State string `json:"state"`
			} `json:"warmup"`
		}
		if json.Unmarshal(out, &h) == nil && h.Warmup.State == "done" {
			break
		}
		if time.Now().After(end) {
			t.Fatalf("the server did not warm up within a minute: %.300s", out)
		}
	}
	// What the warm-up allocated and dropped goes back first.
	time.Sleep(time.Second)
	return pinRSS(t, s.pid)
}

// Forty batches of eight 160 KB writes awaiting a decision stay under
// 1 GiB (the server refuses what passes its budget with 429); listing
// them answers a bounded body that says which views it left out and
// where to read them; denying them all gives the memory back.
func TestApprovalMemoryHeldViewsCountAndAreGivenBack(t *testing.T) {
	s := pinServe(t, realPlugins(t))
	before := avmWarmed(t, s)
	var ids []string
	refused := 0
	for n := range 40 {
		status, out := s.do(t, "POST", "/v1/batches", avmBatch(n))
		switch status {
		case http.StatusCreated:
			var b struct {
				ID    string `json:"batch_id"`
				State string `json:"state"`
			}
			json.Unmarshal(out, &b)
			if b.State != "awaiting_approval" {
				t.Fatalf("batch %d is %q, want awaiting_approval (writes of .vscode/ are asked about): %.300s", n, b.State, out)
			}
			ids = append(ids, b.ID)
		case http.StatusTooManyRequests:
			refused++
			if !strings.Contains(string(out), "TooManyBatches") {
				t.Errorf("batch %d: 429 %.300s; want TooManyBatches", n, out)
			}
		default:
			t.Fatalf("batch %d: %d %.300s", n, status, out)
		}
		if m := pinRSS(t, s.pid); m.rss > avmRSSBound {
			t.Fatalf("after %d batches (%d refused) the server holds %v, more than %d MiB: what a held batch holds is not what its budget counts", n+1, refused, m, avmRSSBound>>20)
		}
		if refused == 2 {
			break // the budget is full: the server keeps no more
		}
	}
	held := pinRSS(t, s.pid)
	t.Logf("server memory: before %v; with %d batches awaiting a decision (%d refused) %v", before, len(ids), refused, held)
	if len(ids) == 0 {
		t.Fatal("no batch was kept")
	}

	status, out := s.do(t, "GET", "/v1/batches?state=awaiting_approval", nil)
	listed := pinRSS(t, s.pid)
	t.Logf("GET /v1/batches?state=awaiting_approval: %d, %d bytes; server memory then %v", status, len(out), listed)
	var list struct {
		Batches []struct {
			ID    string `json:"batch_id"`
			Calls []struct {
				Approval        json.RawMessage `json:"approval"`
				ApprovalOmitted string          `json:"approval_omitted"`
			} `json:"calls"`
		} `json:"batches"`
		Omitted string `json:"omitted"`
	}
	if err := json.Unmarshal(out, &list); status != http.StatusOK || err != nil {
		t.Fatalf("GET /v1/batches?state=awaiting_approval: %d %v %.300s", status, err, out)
	}
	if len(list.Batches) != len(ids) {
		t.Errorf("the list has %d batches, want the %d awaiting a decision", len(list.Batches), len(ids))
	}
	if len(out) > 64<<20 {
		t.Errorf("the list is %d MiB: a list of held batches must leave their views out past a bound", len(out)>>20)
	}
	shown, left := 0, 0
	for _, b := range list.Batches {
		for _, c := range b.Calls {
			switch {
			case len(c.Approval) > 0 && string(c.Approval) != "null":
				shown++
			case strings.Contains(c.ApprovalOmitted, "/v1/batches/"+b.ID):
				left++
			default:
				t.Errorf("batch %s: a call neither shows its approval view nor says where to read it", b.ID)
			}
		}
	}
	if left > 0 && !strings.Contains(list.Omitted, "GET /v1/batches/") {
		t.Errorf("%d views left out, and the list says %q: it must say so and where to read them", left, list.Omitted)
	}
	t.Logf("the list shows %d views and leaves out %d", shown, left)

	// A batch left out of the list still shows its view whole.
	status, out = s.do(t, "GET", "/v1/batches/"+ids[len(ids)-1], nil)
	if status != http.StatusOK || !strings.Contains(string(out), `"argument_details"`) {
		t.Errorf("GET /v1/batches/%s: %d %.300s; want the batch with its views", ids[len(ids)-1], status, out)
	}

	for _, id := range ids {
		if status, out := s.do(t, "POST", "/v1/batches/"+id+"/decision", []byte(`{"decision":"deny_all"}`)); status != http.StatusOK {
			t.Errorf("deny_all %s: %d %.300s", id, status, out)
		}
	}
	var idle pinMemory
	for end := time.Now().Add(20 * time.Second); ; time.Sleep(500 * time.Millisecond) {
		idle = pinRSS(t, s.pid)
		if idle.rss <= before.rss+avmIdleSlack || time.Now().After(end) {
			break
		}
	}
	t.Logf("server memory: before %v; held %v; listed %v; after deny_all and idle %v", before, held, listed, idle)
	if idle.rss > before.rss+avmIdleSlack {
		t.Errorf("after deny_all on every batch the server keeps %v, more than %d MiB over what it held warmed up: what the batches held is not given back", idle, avmIdleSlack>>20)
	}
}

// Thirty batches of eight new 240 KB files, which run at once (new files
// outside code paths are not asked about): the server stays under
// 1 GiB while they run and gives the memory back once they ended.
func TestApprovalMemoryBatchesThatRunAreGivenBack(t *testing.T) {
	s := pinServe(t, realPlugins(t))
	before := avmWarmed(t, s)
	content := strings.Repeat(strings.Repeat("y", 99)+"\n", 2400)
	var peak pinMemory
	for n := range 30 {
		var calls []map[string]any
		for i := range 8 {
			calls = append(calls, map[string]any{"id": fmt.Sprintf("w%d", i), "name": "write_file",
				"arguments": map[string]any{"path": fmt.Sprintf("data/f%d_%d.txt", n, i), "content": content}})
		}
		body, _ := json.Marshal(map[string]any{"conversation_id": fmt.Sprintf("avm-run-%d", n), "calls": calls})
		if status, out := s.do(t, "POST", "/v1/batches", body); status != http.StatusCreated {
			t.Fatalf("batch %d: %d %.300s", n, status, out)
		}
		if peak = pinRSS(t, s.pid); peak.rss > avmRSSBound {
			t.Fatalf("after %d batches the server holds %v, more than %d MiB", n+1, peak, avmRSSBound>>20)
		}
	}
	for end := time.Now().Add(time.Minute); ; time.Sleep(200 * time.Millisecond) {
		_, out := s.do(t, "GET", "/v1/batches?state=running", nil)
		if strings.Contains(string(out), `"batches":[]`) {
			break
		}
		if time.Now().After(end) {
			t.Fatalf("batches still run after a minute: %.300s", out)
		}
	}
	var idle pinMemory
	for end := time.Now().Add(15 * time.Second); ; time.Sleep(500 * time.Millisecond) {
		idle = pinRSS(t, s.pid)
		if idle.rss <= before.rss+avmIdleSlack || time.Now().After(end) {
			break
		}
	}
	t.Logf("server memory: before %v; after 30 batches of eight 240 KB writes %v; idle %v", before, peak, idle)
	if idle.rss > before.rss+avmIdleSlack {
		t.Errorf("once the batches ended the server keeps %v, more than %d MiB over what it held warmed up: what they left is not given back", idle, avmIdleSlack>>20)
	}
}
