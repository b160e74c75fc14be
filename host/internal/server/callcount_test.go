package server

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/toolhost/toolhost/host/internal/config"
)

// TestCallsPastTheLimit_FR_LIM_06: a batch with up to maxCallsPastLimit
// calls past max_tool_calls_per_batch is planned, those calls each
// pre-resolved; one with more is refused whole, the answer saying the
// limit, how many calls it had and what to send.
func TestCallsPastTheLimit_FR_LIM_06(t *testing.T) {
	a := serveAPI(t, Options{}, func(c *config.Config) { c.Tools.MaxToolCallsPerBatch = 3 })
	batch := func(n int) map[string]any {
		calls := make([]map[string]any, n)
		for i := range calls {
			// No such tool: nothing runs after the test ends.
			calls[i] = map[string]any{"id": fmt.Sprintf("c%d", i), "name": "no_such_tool", "arguments": map[string]any{"path": "none.txt"}}
		}
		return map[string]any{"conversation_id": "c", "calls": calls}
	}
	for _, tc := range []struct {
		calls  int
		status int
		want   []string
	}{
		{3, 201, nil},
		{3 + maxCallsPastLimit, 201, nil},
		{4 + maxCallsPastLimit, 413, []string{"TooManyCalls", fmt.Sprintf("has %d calls", 4+maxCallsPastLimit), "max_tool_calls_per_batch is 3", "at most 3 calls in one batch"}},
	} {
		status, out := a.do("POST", "/v1/batches", batch(tc.calls))
		if status != tc.status {
			t.Errorf("%d calls: %d %s, want %d", tc.calls, status, truncate(string(out), 300), tc.status)
			continue
		}
		for _, w := range tc.want {
			if !strings.Contains(string(out), w) {
				t.Errorf("%d calls: %s lacks %q", tc.calls, truncate(string(out), 500), w)
			}
		}
		if status != 201 {
			continue
		}
		var v batchView
		if err := json.Unmarshal(out, &v); err != nil || len(v.Calls) != tc.calls {
			t.Fatalf("%d calls: %v, %d calls planned", tc.calls, err, len(v.Calls))
		}
		for _, c := range v.Calls[3:] {
			if c.Result == nil || c.Result.Error == nil || !strings.Contains(c.Result.Error.Message, "max_tool_calls_per_batch is 3") {
				t.Errorf("%d calls: call %s past the limit: %+v, want it pre-resolved", tc.calls, c.ID, c.Result)
			}
		}
	}
}
