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
	"github.com/toolhost/toolhost/host/engine"
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
