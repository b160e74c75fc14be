package extism_test

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"

	"github.com/toolhost/toolhost/host"
	"github.com/toolhost/toolhost/host/internal/engine"
	"github.com/toolhost/toolhost/host/internal/tests/extism"
)

// NFR-PERF-03: calls of one plugin run in parallel,
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
