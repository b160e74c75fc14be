package hostile_test

// Attack (a client holding the token, or a plugin in the plugin
// directory): make toolhost serve hold memory it never gives back. A
// batch of tens of thousands of calls, all but the first few beyond
// max_tool_calls_per_batch, must be refused before it is planned, saying
// the limit, how many calls it had and what to send instead; a plugin
// returning far more than the output limit must cost the output limit,
// not what it returned, and the memory the call took must be given back
// once it ends. Each test drives the built binary and reads the server's
// resident memory from /proc.

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/toolhost/toolhost/internal/testplugin"
)

// pinServer is `toolhost serve --http` started from the built binary.
type pinServer struct {
	pid               int
	root, base, token string
	hc                *http.Client
	stderr            *pinText
}

var pinEndpoint = regexp.MustCompile(`MCP at (http://127\.0\.0\.1:\d+)/mcp`)

// pinTokenValue is the bearer token the servers are started with.
const pinTokenValue = "pin-test-token-0123456789abcdef"

// pinServe starts toolhost serve --http on a fresh workspace with the
// plugins in plugins, and waits until it listens. Cleanup stops it.
func pinServe(t *testing.T, plugins string, args ...string) *pinServer {
	t.Helper()
	bin := toolhostBinary(t)
	home, root := t.TempDir(), t.TempDir()
	argv := append([]string{"--state-dir", filepath.Join(home, "state"), "--plugins", plugins,
		"serve", "--http", "127.0.0.1:0", "--root", root}, args...)
	cmd := exec.Command(bin, argv...)
	cmd.Dir = root
	cmd.Env = append(os.Environ(), "HOME="+home, "XDG_CONFIG_HOME="+filepath.Join(home, ".config"),
		"XDG_STATE_HOME="+filepath.Join(home, ".state"), "TOOLHOST_CACHE_DIR="+testplugin.CacheDir(t), "TOOLHOST_TOKEN="+pinTokenValue)
	stderr := &pinText{}
	cmd.Stderr = stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan struct{})
	var waitErr error
	go func() { waitErr = cmd.Wait(); close(exited) }()
	t.Cleanup(func() {
		cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-exited:
		case <-time.After(15 * time.Second):
			cmd.Process.Kill()
			<-exited
		}
		if t.Failed() {
			t.Logf("toolhost serve stderr (end):\n%s", stderr.tail(8<<10))
		}
	})
	deadline := time.Now().Add(time.Minute)
	for {
		out := stderr.String()
		if m := pinEndpoint.FindStringSubmatch(out); m != nil && strings.Contains(out, "connect Claude Code: ") {
			return &pinServer{pid: cmd.Process.Pid, root: root, base: m[1], token: pinTokenValue, stderr: stderr,
				hc: &http.Client{Timeout: 2 * time.Minute}}
		}
		select {
		case <-exited:
			t.Fatalf("toolhost serve exited (%v) before listening:\n%s", waitErr, stderr)
		case <-time.After(20 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			t.Fatalf("toolhost serve printed no endpoint within a minute:\n%s", out)
		}
	}
}

// do sends a request with the token and returns the status and the
// answer's body.
func (s *pinServer) do(t *testing.T, method, path string, body []byte) (int, []byte) {
	t.Helper()
	req, err := http.NewRequest(method, s.base+path, bytes.NewReader(body))
	if err != nil {
		t.Error(err)
		return 0, nil
	}
	req.Header.Set("Authorization", "Bearer "+s.token)
	resp, err := s.hc.Do(req)
	if err != nil {
		t.Errorf("%s %s: %v", method, path, err)
		return 0, nil
	}
	defer resp.Body.Close()
	out, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, out
}

// pinMemory is a process's resident memory now (VmRSS) and at its peak
// (VmHWM), in bytes.
type pinMemory struct{ rss, peak int64 }

func (m pinMemory) String() string {
	return fmt.Sprintf("%.0f MiB resident (peak %.0f MiB)", float64(m.rss)/(1<<20), float64(m.peak)/(1<<20))
}

// pinRSS reads pid's resident memory from /proc/PID/status.
func pinRSS(t *testing.T, pid int) pinMemory {
	t.Helper()
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		t.Fatalf("reading the server's memory: %v", err)
	}
	var m pinMemory
	for _, line := range strings.Split(string(data), "\n") {
		name, value, ok := strings.Cut(line, ":")
		if !ok {
			continue
		}
		fields := strings.Fields(value)
		if len(fields) != 2 || fields[1] != "kB" {
			continue
		}
		n, _ := strconv.ParseInt(fields[0], 10, 64)
		switch name {
		case "VmRSS":
			m.rss = n << 10
		case "VmHWM":
			m.peak = n << 10
		}
	}
	if m.rss == 0 {
		t.Fatalf("/proc/%d/status has no VmRSS:\n%s", pid, data)
	}
	return m
}

// pinSettle waits until the server's resident memory stops falling (the
// runtime gives memory back in the background), at most limit, and
// returns it.
func pinSettle(t *testing.T, pid int, limit time.Duration) pinMemory {
	t.Helper()
	m := pinRSS(t, pid)
	for end := time.Now().Add(limit); time.Now().Before(end) && m.rss > pinIdleBound; {
		time.Sleep(500 * time.Millisecond)
		m = pinRSS(t, pid)
	}
	return m
}

// pinIdleBound is the most an idle server may keep resident after an
// attack: the batch API's documented budget (256 MiB of arguments and
// results) with room for the runtime and the compiled plugins, which
// every server warms: sixteen here (the built-ins and the attacker's),
// which an idle server held at 438 MiB.
const pinIdleBound = 512 << 20

// pinBatch is a batch of n read_file calls, about size bytes of JSON.
func pinBatch(n, size int) []byte {
	var b bytes.Buffer
	b.WriteString(`{"conversation_id":"pin","calls":[`)
	pad := strings.Repeat("p", max(size/n-60, 1))
	for i := range n {
		if i > 0 {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, `{"id":"c%d","name":"read_file","arguments":{"path":"%s"}}`, i, pad)
	}
	b.WriteString(`]}`)
	return b.Bytes()
}

// pinError is the batch API's error answer.
type pinError struct {
	Error struct{ Kind, Message string } `json:"error"`
}

// Eight batches of 45,000 calls (3 MiB each) at once: each is refused
// before it is planned, telling the client the limit, how many calls it
// sent and what to do; the server's memory stays far from gigabytes, and
// an honest batch with a few calls past the limit still gets a result
// for every call (FR-LIM-06).
func TestPinBatchOfTensOfThousandsOfCallsIsRefused(t *testing.T) {
	s := pinServe(t, realPlugins(t))
	before := pinRSS(t, s.pid)
	body := pinBatch(45000, 3<<20)
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			status, out := s.do(t, "POST", "/v1/batches", body)
			var e pinError
			json.Unmarshal(out, &e)
			if status != http.StatusRequestEntityTooLarge || e.Error.Kind != "TooManyCalls" {
				t.Errorf("a batch of 45000 calls: %d %.300s; want 413 TooManyCalls", status, out)
				return
			}
			for _, want := range []string{"45000 calls", "max_tool_calls_per_batch is 8", "later batch"} {
				if !strings.Contains(e.Error.Message, want) {
					t.Errorf("the refusal %q does not say %q: a client must learn the limit, how many it sent and what to do", e.Error.Message, want)
				}
			}
		})
	}
	wg.Wait()
	peak := pinRSS(t, s.pid)
	idle := pinSettle(t, s.pid, 10*time.Second)
	t.Logf("server memory: before %v; after eight batches of 45000 calls %v; idle %v", before, peak, idle)
	if idle.rss > pinIdleBound {
		t.Errorf("the idle server keeps %v after the batches, more than %d MiB", idle, pinIdleBound>>20)
	}

	// Ten calls, two past the limit: planned, the two pre-resolved.
	status, out := s.do(t, "POST", "/v1/batches", pinBatch(10, 700))
	var created struct {
		Calls []struct {
			Disposition string `json:"disposition"`
			Result      *struct {
				Error *struct{ Kind, Message string } `json:"error"`
			} `json:"result"`
		} `json:"calls"`
	}
	if err := json.Unmarshal(out, &created); status != http.StatusCreated || err != nil || len(created.Calls) != 10 {
		t.Fatalf("a batch of 10 calls: %d %.500s; want 201 with 10 calls", status, out)
	}
	for i, c := range created.Calls[8:] {
		if c.Result == nil || c.Result.Error == nil || !strings.Contains(c.Result.Error.Message, "max_tool_calls_per_batch") {
			t.Errorf("call %d of 10: %+v, want it pre-resolved as over max_tool_calls_per_batch", 9+i, c)
		}
	}
}

// Three calls at once of a plugin returning 60 MiB: each client gets the
// output limit's worth, and once they are answered the server gives back
// what the calls took (the plugin instances whose memory grew so far are
// closed, not kept warm).
func TestPinHugeResultsAreGivenBack(t *testing.T) {
	s := pinServe(t, pluginDir(t, "pinbig"))
	before := pinRSS(t, s.pid)
	var wg sync.WaitGroup
	for i := range 3 {
		wg.Go(func() {
			body := fmt.Sprintf(`{"conversation_id":"pin%d","calls":[{"id":"big","name":"pinbig","arguments":{"mib":60}}]}`, i)
			status, out := s.do(t, "POST", "/v1/batches", []byte(body))
			var b struct {
				ID string `json:"batch_id"`
			}
			if json.Unmarshal(out, &b); status != http.StatusCreated || b.ID == "" {
				t.Errorf("POST /v1/batches: %d %.300s", status, out)
				return
			}
			content := pinResult(t, s, b.ID)
			if n := len(content); n == 0 || n > 100<<10 || !strings.HasSuffix(content, "[output truncated]") {
				t.Errorf("the client got %d bytes ending %q; want at most the output limit, cut with the marker", n, content[max(len(content)-40, 0):])
			}
		})
	}
	wg.Wait()
	peak := pinRSS(t, s.pid)
	idle := pinSettle(t, s.pid, 10*time.Second)
	t.Logf("server memory: before %v; after three 60 MiB results %v; idle %v", before, peak, idle)
	if idle.rss > pinIdleBound {
		t.Errorf("the idle server keeps %v after the calls ended, more than %d MiB", idle, pinIdleBound>>20)
	}
}

// pinResult waits for batch id to finish and returns its one call's
// content.
func pinResult(t *testing.T, s *pinServer, id string) string {
	t.Helper()
	for end := time.Now().Add(time.Minute); time.Now().Before(end); time.Sleep(100 * time.Millisecond) {
		status, out := s.do(t, "GET", "/v1/batches/"+id, nil)
		var b struct {
			State   string `json:"state"`
			Results []struct {
				OK      bool   `json:"ok"`
				Content string `json:"content"`
				Error   *struct{ Kind, Message string }
			} `json:"results"`
		}
		if status != http.StatusOK || json.Unmarshal(out, &b) != nil {
			t.Errorf("GET /v1/batches/%s: %d %.300s", id, status, out)
			return ""
		}
		if b.State != "done" && b.State != "cancelled" {
			continue
		}
		if len(b.Results) == 1 && b.Results[0].OK {
			return b.Results[0].Content
		}
		t.Errorf("batch %s ended %s: %.500s", id, b.State, out)
		return ""
	}
	t.Errorf("batch %s did not finish within a minute", id)
	return ""
}

// pinText collects a process's output for the test to read while it
// runs.
type pinText struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (p *pinText) Write(b []byte) (int, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.buf.Write(b)
}

func (p *pinText) String() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.buf.String()
}

func (p *pinText) tail(n int) string {
	s := p.String()
	return s[max(len(s)-n, 0):]
}
