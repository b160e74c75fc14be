package hostile_test

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/toolhost/toolhost/host"
	"github.com/toolhost/toolhost/host/internal/engine"
)

// Attack (client): an EventSink whose Send panics.
// Expected: the panic is contained like an error from Send (the events
// count as dropped); the batch returns its results and the process lives.
// Was at fault: host/engine/events.go, emitter.deliver1 calls Sink.Send on the
// emitter's own goroutine with no recover, so the panic kills the whole
// process (a server with many conversations), and no caller can recover
// it. Fix: recover in deliver1 (log it, mark the sink stalled, count the
// event as dropped).
func TestClient_PanickingEventSinkIsContained(t *testing.T) {
	if os.Getenv("HOSTILE_SINK_CHILD") == "1" {
		h, root := openHost(t, nil)
		os.WriteFile(filepath.Join(root, "a.txt"), []byte("a\n"), 0o644)
		sink := engine.EventSinkFunc(func(context.Context, engine.Event) error { panic("sink exploded") })
		rs := process(t, h, context.Background(), engine.Batch{Conversation: "c", Calls: []engine.Call{call("1", "read_file", `{"path":"a.txt"}`)}},
			host.BatchOptions{Events: sink}, 30*time.Second)
		// Give the delivery goroutine time to panic, were it going to.
		time.Sleep(500 * time.Millisecond)
		if !rs[0].OK {
			t.Fatalf("read: %+v", rs[0].Error)
		}
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, os.Args[0], "-test.run=^TestClient_PanickingEventSinkIsContained$", "-test.count=1")
	cmd.Env = append(os.Environ(), "HOSTILE_SINK_CHILD=1")
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil {
		first, _, _ := strings.Cut(out.String(), "\ngoroutine ")
		t.Errorf("a panicking EventSink took the process down (%v):\n%s", err, first)
	}
}

// Attack (client): an Approver that never returns and ignores its ctx
// (a UI waiting for a person who left, a deadlocked client).
// Expected: when the batch's ctx ends, Process returns at once, every
// call that needed approval Cancelled (or denied), nothing run.
// Was at fault: host/engine/run.go, approve calls approver.Approve inline and
// waits for it however long it takes, ctx or not. Fix: call it from a
// goroutine and select on ctx.Done (deny everything with "the approval
// was cancelled"), as the emitter does for sinks.
func TestClient_ApproverIgnoringContextCannotHoldBatch(t *testing.T) {
	h, root := openHost(t, nil)
	os.WriteFile(filepath.Join(root, "a.txt"), []byte("a\n"), 0o644)
	release := make(chan struct{})
	defer close(release)
	stuck := engine.ApproverFunc(func(context.Context, []engine.Confirmation) (engine.Decision, error) {
		<-release
		return engine.ApproveAll("too late"), nil
	})
	ctx, cancel := context.WithTimeout(context.Background(), 500*time.Millisecond)
	defer cancel()
	calls := []engine.Call{
		call("r", "read_file", `{"path":"a.txt"}`),
		call("p", "apply_patch", jsonArgs(t, map[string]any{"patch": "LP1\nF b.txt\nT\nb\n.\nEND\n"})),
	}
	rs := process(t, h, ctx, engine.Batch{Conversation: "c", Calls: calls}, host.BatchOptions{Approver: stuck}, 8*time.Second)
	if rs[1].OK {
		t.Errorf("apply_patch ran although its approval never came: %+v", rs[1])
	}
}

// Attack (client): an Approver that panics.
// Expected: like an Approver that fails: every confirmation denied with
// the reason, the calls that need none still run, exactly one result per
// call; Process does not panic.
// Was at fault: host/engine/run.go, approve has no recover, so the panic
// escapes Process, after planning and before any call ran, with no
// results (a server handler turns it into a 500 and the model gets
// nothing). Fix: recover in approve and DenyAll("…the approval failed
// (panic: …)…").
func TestClient_PanickingApproverDenies(t *testing.T) {
	h, root := openHost(t, nil)
	os.WriteFile(filepath.Join(root, "a.txt"), []byte("a\n"), 0o644)
	boom := engine.ApproverFunc(func(context.Context, []engine.Confirmation) (engine.Decision, error) { panic("approver exploded") })
	calls := []engine.Call{
		call("r", "read_file", `{"path":"a.txt"}`),
		call("p", "apply_patch", jsonArgs(t, map[string]any{"patch": "LP1\nF b.txt\nT\nb\n.\nEND\n"})),
	}
	rs := process(t, h, context.Background(), engine.Batch{Conversation: "c", Calls: calls}, host.BatchOptions{Approver: boom}, 30*time.Second)
	if !rs[0].OK {
		t.Errorf("read_file, which needed no approval: %+v", rs[0].Error)
	}
	if rs[1].OK {
		t.Errorf("apply_patch ran although its approver panicked")
	}
}

// Attack (client/model): two batches of one conversation in flight at
// once, both based on the same read of a.txt. Batch B is planned, and
// while its approval is pending batch A overwrites a.txt (approved). Then
// B is approved and runs.
// Expected: B is refused as StaleFile: a.txt changed after B was planned,
// by a call B's author never saw, so B would silently discard A's change
// (a lost update).
// Was at fault: host/engine/engine.go, callTool takes the read cache's
// generation (env.ReadsAt) when the call begins, not when its batch was
// planned; and A's write recorded its new hash in the conversation's
// cache (hostfn observe with record), so checkSum in
// host/internal/hostfn/writes.go finds B's file "read and unchanged".
// Fix: take the generation when the batch is planned (PlannedCall), and
// count as changes only those made by other batches (a later call of the
// same batch may still build on an earlier one).
func TestClient_ConcurrentBatchIsStale(t *testing.T) {
	h, root := openHost(t, nil)
	os.WriteFile(filepath.Join(root, "a.txt"), []byte("old\n"), 0o644)
	rs := process(t, h, context.Background(), engine.Batch{Conversation: "c", Calls: []engine.Call{call("r", "read_file", `{"path":"a.txt"}`)}}, host.BatchOptions{}, 30*time.Second)
	if !rs[0].OK {
		t.Fatalf("read: %+v", rs[0].Error)
	}
	var resA []engine.Result
	approverB := engine.ApproverFunc(func(ctx context.Context, cs []engine.Confirmation) (engine.Decision, error) {
		// B is planned; A runs to completion meanwhile.
		a := engine.Batch{Conversation: "c", Calls: []engine.Call{call("wa", "write_file", `{"path":"a.txt","content":"from A\n"}`)}}
		_, resA = h.Process(ctx, a, host.BatchOptions{Approver: approveAll()})
		return engine.ApproveAll("the test"), nil
	})
	b := engine.Batch{Conversation: "c", Calls: []engine.Call{call("wb", "write_file", `{"path":"a.txt","content":"from B\n"}`)}}
	rs = process(t, h, context.Background(), b, host.BatchOptions{Approver: approverB}, 30*time.Second)
	if len(resA) != 1 || !resA[0].OK {
		t.Fatalf("batch A: %+v", resA)
	}
	if rs[0].OK {
		got, _ := os.ReadFile(filepath.Join(root, "a.txt"))
		t.Errorf("batch B, planned on the read before A's write, replaced A's content unseen (a.txt = %q); want StaleFile", got)
	}
}

// The other side of TestClient_ConcurrentBatchIsStale: a batch builds on
// its own calls. Another batch changed a.txt after this one was planned,
// but this batch reads it again before writing: the write is based on
// what is there, so it runs.
func TestClient_BatchBuildsOnItsOwnRead(t *testing.T) {
	h, root := openHost(t, nil)
	os.WriteFile(filepath.Join(root, "a.txt"), []byte("old\n"), 0o644)
	rs := process(t, h, context.Background(), engine.Batch{Conversation: "c", Calls: []engine.Call{call("r", "read_file", `{"path":"a.txt"}`)}}, host.BatchOptions{}, 30*time.Second)
	if !rs[0].OK {
		t.Fatalf("read: %+v", rs[0].Error)
	}
	approverB := engine.ApproverFunc(func(ctx context.Context, cs []engine.Confirmation) (engine.Decision, error) {
		a := engine.Batch{Conversation: "c", Calls: []engine.Call{call("wa", "write_file", `{"path":"a.txt","content":"from A\n"}`)}}
		if _, res := h.Process(ctx, a, host.BatchOptions{Approver: approveAll()}); !res[0].OK {
			t.Errorf("batch A: %+v", res[0].Error)
		}
		return engine.ApproveAll("the test"), nil
	})
	b := engine.Batch{Conversation: "c", Calls: []engine.Call{
		call("rb", "read_file", `{"path":"a.txt"}`),
		call("wb", "write_file", `{"path":"a.txt","content":"from B\n"}`),
	}}
	rs = process(t, h, context.Background(), b, host.BatchOptions{Approver: approverB}, 30*time.Second)
	if !rs[1].OK {
		t.Fatalf("batch B read a.txt again before writing it, and was refused: %+v", rs[1].Error)
	}
}
