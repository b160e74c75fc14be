package hostile_test

import (
	"context"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/toolhost/toolhost/abi"
	"github.com/toolhost/toolhost/host"
	"github.com/toolhost/toolhost/host/internal/engine"
)

// A prompt-injected model sends arguments nested as deep as the JSON
// decoder allows (10,000 levels), each level named by a 20-byte member:
// 250 KB, within max_tool_args_bytes. The repeated-name check must not
// build every level's JSON pointer while it descends: that held a gigabyte
// of strings at once per call, and took most of a second (red team; NFR-SEC-01).
func TestDeepArgumentsCheapToCheck(t *testing.T) {
	h, _ := openHost(t, nil)
	key := strings.Repeat("k", 20)
	const depth = 9999
	for _, args := range []string{
		strings.Repeat(`{"`+key+`":`, depth) + "1" + strings.Repeat("}", depth),
		`{"path":` + strings.Repeat("[", depth) + "1" + strings.Repeat("]", depth) + "}",
	} {
		var before, after runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&before)
		start := time.Now()
		rs := process(t, h, context.Background(), engine.Batch{Conversation: "c", Calls: []engine.Call{call("call_deep", "read_file", args)}},
			host.BatchOptions{Approver: approveAll()}, 30*time.Second)
		elapsed := time.Since(start)
		runtime.ReadMemStats(&after)
		if rs[0].Error == nil || rs[0].Error.Kind != abi.KindBadArgs {
			t.Fatalf("deep arguments: %+v, want BadArgs", rs[0])
		}
		if alloc := after.TotalAlloc - before.TotalAlloc; alloc > 64<<20 {
			t.Errorf("checking %d bytes of deep arguments allocated %d MiB, want under 64 MiB", len(args), alloc>>20)
		}
		t.Logf("%d bytes: %v", len(args), elapsed)
	}
}
