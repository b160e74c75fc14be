package bench

import (
	"context"
	"encoding/json"
	"fmt"
	"sync/atomic"
	"testing"

	"github.com/toolhost/toolhost/host/internal/engine"
)

// BenchmarkBatch8: a batch of 8 cheap calls (read_file of 4 KiB) through
// the whole tool loop (plan: validation, policy, preflight; run: per-call
// context, sanitize, truncate, events) beside the same 8 plugin calls made
// directly on the runtime, skipping engine and planner. "process" streams
// the events to a function, which the engine calls from a goroutine of
// its own (it may ignore its context); "subscription" streams them through
// a Subscription read on another goroutine, as a server does;
// "no-events" has no consumer, as the CLI without --stream.
func BenchmarkBatch8(b *testing.B) {
	e := setup(b)
	calls := make([]engine.Call, 8)
	for i := range calls {
		calls[i] = engine.Call{ID: fmt.Sprint("c", i), Name: "read_file", Arguments: json.RawMessage(`{"path":"small.txt"}`)}
	}
	deny := engine.ApproverFunc(func(context.Context, []engine.Confirmation) (engine.Decision, error) {
		return engine.DenyAll("bench"), nil
	})
	batch := func(events engine.EventSink) error {
		_, results := e.eng.Process(context.Background(), engine.Batch{Conversation: "bench", Calls: calls}, deny,
			engine.RunOptions{Events: events})
		for _, r := range results {
			if !r.OK {
				return r.Error
			}
		}
		return nil
	}
	var events atomic.Int64
	count := engine.EventSinkFunc(func(context.Context, engine.Event) error { events.Add(1); return nil })
	subscribed := func() error {
		sub := engine.Subscribe(16)
		done := make(chan struct{})
		go func() {
			defer close(done)
			for range sub.Events() {
				events.Add(1)
			}
		}()
		err := batch(sub)
		sub.Finish()
		<-done
		return err
	}
	one := e.direct(b, "read_file", `{"path":"small.txt"}`, "small.txt")
	direct := func() error {
		for range 8 {
			if err := one(); err != nil {
				return err
			}
		}
		return nil
	}
	b.Run("no-events", func(b *testing.B) { pair(b, func() error { return batch(nil) }, direct) })
	b.Run("process", func(b *testing.B) { pair(b, func() error { return batch(count) }, direct) })
	b.Run("subscription", func(b *testing.B) { pair(b, subscribed, direct) })
}
