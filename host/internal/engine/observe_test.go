package engine

import (
	"context"
	"encoding/json"
	"sync"
	"testing"

	"github.com/toolhost/toolhost/abi"
)

// observed collects what a batch's observers receive.
type observed struct {
	mu       sync.Mutex
	accesses []Access
	outputs  []Output
}

func (o *observed) options() RunOptions {
	return RunOptions{
		Observe: func(a Access) {
			o.mu.Lock()
			defer o.mu.Unlock()
			o.accesses = append(o.accesses, a)
		},
		ObserveOutput: func(out Output) {
			o.mu.Lock()
			defer o.mu.Unlock()
			o.outputs = append(o.outputs, out)
		},
	}
}

func approveEverything(context.Context, []Confirmation) (Decision, error) {
	return ApproveAll("test"), nil
}

// FR-REG-01a: a summary's attempt at I/O is refused and
// observed (Summary, with the path the plugin gave and the refusal), and
// the call's own accesses follow, allowed or refused, with its call id.
func TestObserveSummaryAndCallAccesses(t *testing.T) {
	f := newFixture(t, abi.Limits{})
	f.write(t, "secret.txt", "s3cret")
	var o observed
	opts := o.options()
	opts.Narrowing = Narrowing{ConfirmAll: true} // the summary is asked for
	_, results := f.eng.Process(context.Background(), Batch{Conversation: "c", Calls: []Call{
		{ID: "call_1", Name: "impure", Arguments: json.RawMessage(`{"path":"secret.txt"}`)},
	}}, ApproverFunc(approveEverything), opts)
	if len(results) != 1 {
		t.Fatalf("results %+v", results)
	}
	var summary, call []Access
	for _, a := range o.accesses {
		if a.Summary {
			summary = append(summary, a)
		} else {
			call = append(call, a)
		}
	}
	if len(summary) != 1 || summary[0].CallID != "call_1" || summary[0].Function != abi.FnFSRead || summary[0].Path != "secret.txt" || summary[0].Err == nil {
		t.Fatalf("summary accesses %+v, want one refused fs_read of secret.txt by call_1", summary)
	}
	// The summary failed, so the call did not run: nothing else observed.
	if len(call) != 0 || results[0].OK {
		t.Fatalf("call accesses %+v, result %+v: want none, the summary failed", call, results[0])
	}

	// Without confirmation the call runs: its read is observed allowed,
	// with no summary.
	var o2 observed
	_, results = f.eng.Process(context.Background(), Batch{Conversation: "c", Calls: []Call{
		{ID: "call_2", Name: "impure", Arguments: json.RawMessage(`{"path":"secret.txt"}`)},
	}}, ApproverFunc(approveEverything), o2.options())
	if !results[0].OK || len(o2.accesses) != 1 || o2.accesses[0].Summary || o2.accesses[0].Err != nil || o2.accesses[0].CallID != "call_2" || o2.accesses[0].Path != "secret.txt" {
		t.Fatalf("result %+v, accesses %+v: want one allowed fs_read of secret.txt by call_2", results[0], o2.accesses)
	}
}

// The output observer sees what the plugin returned
// before the host cut it, with the call's limit and the plugin's claim.
func TestObserveRawOutputSize(t *testing.T) {
	f := newFixture(t, abi.Limits{MaxOutputBytes: 1000})
	var o observed
	_, results := f.eng.Process(context.Background(), Batch{Conversation: "c", Calls: []Call{
		{ID: "call_1", Name: "liar_big", Arguments: json.RawMessage(`{"bytes":5000}`)},
	}}, ApproverFunc(approveEverything), o.options())
	if !results[0].OK || len(results[0].Content) > 1000 {
		t.Fatalf("result %d bytes, ok %v: want within 1000", len(results[0].Content), results[0].OK)
	}
	if len(o.outputs) != 1 || o.outputs[0] != (Output{CallID: "call_1", Bytes: 5000, Limit: 1000, NoTruncate: true}) {
		t.Fatalf("outputs %+v, want call_1's 5000 bytes against 1000, claimed self-limited", o.outputs)
	}
}
