package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// health is GET /v1/health.
type health struct {
	Status string `json:"status"`
	Warmup struct {
		State   string  `json:"state"`
		Tools   int     `json:"tools"`
		Failed  bool    `json:"failed"`
		Seconds float64 `json:"seconds"`
	} `json:"warmup"`
}

func (s *httpServe) health(t *testing.T) health {
	t.Helper()
	status, raw := s.api(t, "GET", "/v1/health", nil)
	var h health
	if err := json.Unmarshal(raw, &h); status != 200 || err != nil {
		t.Fatalf("GET /v1/health: %d %s", status, raw)
	}
	return h
}

var (
	compiledLine = regexp.MustCompile(`msg="compiled plugin" plugin=(\S+)`)
	warmedLine   = regexp.MustCompile(`msg="warmed plugin" tool=(\S+) plugin=\S+ elapsed=(\S+)`)
)

// compiles counts the compiles the runtime logged, by plugin.
func compiles(log string) map[string]int {
	n := map[string]int{}
	for _, m := range compiledLine.FindAllStringSubmatch(log, -1) {
		n[m[1]]++
	}
	return n
}

// TestServeWarmsUp: toolhost serve, started on an empty compilation
// cache, answers tools/list while its plugins are still being compiled in
// the background; a call for the plugin being compiled waits for that
// compile instead of starting another; once GET /v1/health says the
// warm-up is done, the first call of every other plugin is under 100 ms
// (the goal), and no call compiled anything.
//
// The bound must hold on a loaded machine too: a first call that had to
// compile would cost what that plugin's warm-up cost (1-3 s here, logged
// per plugin in the same run, under the same load), so a call slower than
// 100 ms still passes when it is under a tenth of that. That no first
// call compiled is checked apart from time, in the log.
func TestServeWarmsUp(t *testing.T) {
	cache := t.TempDir()
	// run_command runs unconfined: the confined launcher's own start is a
	// cost of its own, not the plugin's.
	w := newWorkspace(t).unconfined()
	w.file(t, "a.txt", "alpha\n")
	s := serveHTTP(t, w, "--cache-dir", cache, "--log-level", "debug", "--allow", "apply_patch", "--allow", "run_command")
	// The session outlives the warm-up, which may take up to the 3
	// minutes waited below on a machine running other suites: more than
	// testContext's minute.
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	client := mcp.NewClient(&mcp.Implementation{Name: "toolhost-e2e", Version: "1"}, nil)
	cs, err := client.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: s.url, HTTPClient: s.httpClient(), MaxRetries: -1}, nil)
	if err != nil {
		t.Fatalf("connecting to %s: %v", s.url, err)
	}
	defer cs.Close()
	tools, err := cs.ListTools(ctx, nil)
	if err != nil || len(tools.Tools) != warmPluginCount(t) {
		t.Fatalf("tools/list: %v, %v", tools, err)
	}
	// Compiling the plugins from nothing takes seconds; tools/list took
	// milliseconds: it did not wait for them.
	if h := s.health(t); h.Warmup.State != "running" {
		t.Fatalf("after tools/list the warm-up is %+v, want running: tools/list must not wait for it", h.Warmup)
	}

	// apply_patch comes first in the warm-up's order: this call arrives
	// while it compiles, and shares that compile.
	patch := "LP1\nF docs/NEW.md\nT\n# New\n.\nEND\n"
	if res, text, err := callText(ctx, cs, "apply_patch", map[string]any{"patch": patch}); err != nil || res.IsError {
		t.Fatalf("apply_patch during the warm-up: %v %s", err, text)
	}

	deadline := time.Now().Add(3 * time.Minute)
	var h health
	for h = s.health(t); h.Warmup.State != "done"; h = s.health(t) {
		if time.Now().After(deadline) {
			t.Fatalf("the warm-up is %+v after 3 minutes", h.Warmup)
		}
		time.Sleep(50 * time.Millisecond)
	}
	if h.Warmup.Tools != warmPluginCount(t) || h.Warmup.Failed {
		t.Fatalf("warm-up done: %+v, want %d tools and no failure", h.Warmup, warmPluginCount(t))
	}
	if !strings.Contains(s.stderr.String(), fmt.Sprintf(`msg="plugins warmed up: first calls will not wait for a compile" tools=%d`, warmPluginCount(t))) {
		t.Errorf("the log does not say the warm-up is done:\n%s", s.stderr)
	}
	if entries, _ := os.ReadDir(filepath.Join(cache, "compiled")); len(entries) == 0 {
		t.Errorf("the warm-up left nothing in the compilation cache %s", cache)
	}
	cold := map[string]time.Duration{}
	for _, m := range warmedLine.FindAllStringSubmatch(s.stderr.String(), -1) {
		cold[m[1]], _ = time.ParseDuration(m[2])
	}

	first := []struct {
		tool string
		args map[string]any
	}{
		{"list_directory", map[string]any{"path": "."}},
		{"read_file", map[string]any{"path": "a.txt"}},
		{"run_command", map[string]any{"command": "true"}},
		{"write_file", map[string]any{"path": "b.txt", "content": "beta\n"}},
		{"apply_patch", map[string]any{"patch": "LP1\nF docs/NEW.md\nR\n# New\n.\n# Newer\n.\nEND\n"}},
	}
	for _, c := range first {
		start := time.Now()
		res, text, err := callText(ctx, cs, c.tool, c.args)
		took := time.Since(start)
		if err != nil || res.IsError {
			t.Fatalf("%s: %v %s", c.tool, err, text)
		}
		t.Logf("%s: first call after the warm-up %v (its warm-up: %v)", c.tool, took, cold[c.tool])
		if took >= 100*time.Millisecond && (cold[c.tool] == 0 || took >= cold[c.tool]/10) {
			t.Errorf("%s: the first call after the warm-up took %v; want under 100 ms, or under a tenth of its warm-up (%v) on a loaded machine", c.tool, took, cold[c.tool])
		}
	}
	if n, want := compiles(s.stderr.String()), warmPluginCount(t); len(n) != want {
		t.Errorf("compiles logged: %v, want each of the %d plugins once", n, want)
	} else {
		for p, k := range n {
			if k != 1 {
				t.Errorf("%s was compiled %d times, want once: a call during the warm-up must share its compile, and calls after it need none", p, k)
			}
		}
	}
}

// TestServeWarmOff: --warm=false leaves the plugins to their first calls,
// and GET /v1/health says the warm-up is off.
func TestServeWarmOff(t *testing.T) {
	w := newWorkspace(t)
	s := serveHTTP(t, w, "--warm=false", "--log-level", "debug")
	if h := s.health(t); h.Warmup.State != "off" {
		t.Errorf("warm-up with --warm=false: %+v, want off", h.Warmup)
	}
	time.Sleep(200 * time.Millisecond)
	if n := compiles(s.stderr.String()); len(n) != 0 {
		t.Errorf("with --warm=false and no call, compiles logged: %v", n)
	}
}

// TestPluginWarm: toolhost plugin warm fills the compilation cache with
// every plugin in the directory, so a second run (a server's warm-up on
// that cache, or the first calls without one) finds them compiled.
func TestPluginWarm(t *testing.T) {
	w := newWorkspace(t)
	cache := t.TempDir()
	warm := func() time.Duration {
		t.Helper()
		start := time.Now()
		_, stderr, code := w.run(t, "--cache-dir", cache, "plugin", "warm", filepath.Join(filepath.Dir(toolhost), "plugins"))
		took := time.Since(start)
		if code != 0 || !strings.Contains(stderr, fmt.Sprintf("toolhost plugin warm: %d plugins compiled into %s", warmPluginCount(t), cache)) {
			t.Fatalf("plugin warm: exit %d\n%s", code, stderr)
		}
		return took
	}
	cold := warm()
	entries, _ := os.ReadDir(filepath.Join(cache, "compiled"))
	if len(entries) == 0 {
		t.Fatalf("plugin warm left nothing in %s", cache)
	}
	// The second run reads what the first compiled: a generous bound
	// (compiling costs 10-20 times reading the cache).
	if again := warm(); again >= cold/2 {
		t.Errorf("plugin warm on a filled cache took %v, the first %v: it did not use the cache", again, cold)
	}

	_, stderr, code := w.run(t, "--cache-dir", cache, "plugin", "warm", filepath.Join(w.dir, "nothing-here"))
	if code == 0 {
		t.Errorf("plugin warm on a missing directory: exit 0\n%s", stderr)
	}
}

// warmPluginCount is how many plugins the directory beside the binary
// holds: the ones a warm-up compiles.
func warmPluginCount(t *testing.T) int {
	t.Helper()
	mods, err := filepath.Glob(filepath.Join(filepath.Dir(toolhost), "plugins", "*.wasm"))
	if err != nil || len(mods) == 0 {
		t.Fatalf("no plugins beside %s: %v", toolhost, err)
	}
	return len(mods)
}
