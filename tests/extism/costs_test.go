package extism_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"testing"
	"time"

	"github.com/toolhost/toolhost/host"
	"github.com/toolhost/toolhost/host/engine"
	"github.com/toolhost/toolhost/tests/extism"
)

// issue 13 item 5 (NFR-PERF-03): calls of one plugin run in parallel,
// each on an instance of its own (one call at a time per instance), and
// all succeed.
func TestParallelCalls(t *testing.T) {
	cfg := defaultConfig(t)
	cfg.Tools.AllowParallel = true
	grant(cfg, "hypertools", nil, map[string]string{"greeting": "P"})
	h := openHost(t, cfg, "", guest{extism.HyperTools, "hypertools.wasm"})
	var calls []engine.Call
	for i := range 8 {
		calls = append(calls, engine.Call{ID: fmt.Sprintf("c%d", i), Name: "upper", Arguments: json.RawMessage(fmt.Sprintf(`{"text": "t%d"}`, i))})
	}
	_, results := h.Process(context.Background(), engine.Batch{ID: "par", Calls: calls}, host.BatchOptions{})
	for i, r := range results {
		if want := fmt.Sprintf("P T%d", i); !r.OK || r.Content != want {
			t.Errorf("call %d: %+v, want %q", i, r, want)
		}
	}
}

// issue 13 item 5 (NFR-PERF-03): what loading and calling an Extism
// plugin costs, logged for the record: opening a host with the Go-built
// test plugin on a cold, then a warm compilation cache, and a call. It
// only measures, so it runs when TOOLHOST_MEASURE is set.
func TestCosts(t *testing.T) {
	if os.Getenv("TOOLHOST_MEASURE") == "" {
		t.Skip("set TOOLHOST_MEASURE=1 to measure")
	}
	cache := t.TempDir()
	dir := t.TempDir()
	extism.Install(t, dir, extism.HyperTools, "hypertools.wasm")
	open := func() (*host.Host, time.Duration) {
		start := time.Now()
		h, err := host.Open(context.Background(), host.Options{PluginDir: dir, Config: defaultConfig(t), CacheDir: cache})
		if err != nil {
			t.Fatal(err)
		}
		return h, time.Since(start)
	}
	h, cold := open()
	h.Close(context.Background())
	h, warm := open()
	defer h.Close(context.Background())
	run(t, h, "w", "upper", `{"text": "x"}`, nil)
	const n = 50
	start := time.Now()
	for i := range n {
		if r := run(t, h, fmt.Sprint(i), "upper", `{"text": "x"}`, nil); !r.OK {
			t.Fatal(errorOf(r))
		}
	}
	t.Logf("host.Open with hypertools (3.3 MB Go module): cold cache %v, warm cache %v; a call through Process %v", cold, warm, time.Since(start)/n)
}
