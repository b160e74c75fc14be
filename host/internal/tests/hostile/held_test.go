package hostile_test

// Attacks the host withstands today, where no other test covers them.

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/toolhost/toolhost/host"
	"github.com/toolhost/toolhost/host/internal/config"
	"github.com/toolhost/toolhost/host/internal/engine"
)

// Attack (plugin): a summary that never returns, to hold planning (and so
// every call of the batch) forever.
// Expected: the summary is stopped at its bound (5 s), the call is
// refused before anyone is asked, and the other calls still run; the
// plugin still works afterwards.
func TestHeld_SpinningSummaryIsBounded(t *testing.T) {
	h, root := openHost(t, nil, "spinsummary")
	os.WriteFile(filepath.Join(root, "a.txt"), []byte("a\n"), 0o644)
	asked := false
	approver := engine.ApproverFunc(func(_ context.Context, cs []engine.Confirmation) (engine.Decision, error) {
		for _, c := range cs {
			if c.CallID == "s" {
				asked = true
			}
		}
		return engine.ApproveAll("the test"), nil
	})
	calls := []engine.Call{call("s", "spinsummary", `{"spin":true}`), call("r", "read_file", `{"path":"a.txt"}`)}
	rs := process(t, h, context.Background(), engine.Batch{Conversation: "c", Calls: calls}, host.BatchOptions{Approver: approver}, 60*time.Second)
	if rs[0].OK || asked {
		t.Errorf("spinning summary: result %+v, asked %v; want refused, never asked", rs[0], asked)
	}
	if !rs[1].OK {
		t.Errorf("read after a spinning summary: %+v", rs[1].Error)
	}
	rs = process(t, h, context.Background(), engine.Batch{Conversation: "c", Calls: []engine.Call{call("s2", "spinsummary", `{}`)}}, host.BatchOptions{Approver: approveAll()}, 30*time.Second)
	if !rs[0].OK || rs[0].Content != "ran" {
		t.Errorf("the plugin after its summary was stopped: %+v", rs[0])
	}
}

// Attack (model): concurrent batches each create the same new file; each
// is auto-approved as creating a file (no prompt), so none may replace
// what another created.
// Expected: exactly one creates it, the rest are refused StaleFile, and
// the file holds the winner's whole content.
func TestHeld_ConcurrentCreatesOfOneFile(t *testing.T) {
	h, root := openHost(t, nil)
	const n = 4
	results := make([]engine.Result, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			content := strings.Repeat(string(rune('A'+i)), 64<<10) + "\n"
			b := engine.Batch{Conversation: "c" + string(rune('0'+i)), Calls: []engine.Call{call("w", "write_file", jsonArgs(t, map[string]any{"path": "new/n.txt", "content": content}))}}
			_, rs := h.Process(context.Background(), b, host.BatchOptions{}) // no approver: only a create runs
			results[i] = rs[0]
		})
	}
	wg.Wait()
	ok := 0
	for _, r := range results {
		switch {
		case r.OK:
			ok++
		case r.Error.Kind != "StaleFile":
			t.Errorf("losing create: %+v, want StaleFile", r.Error)
		}
	}
	if ok != 1 {
		t.Errorf("%d of %d concurrent creates of one file succeeded, want exactly 1", ok, n)
	}
	b, _ := os.ReadFile(filepath.Join(root, "new", "n.txt"))
	if len(b) != 64<<10+1 || strings.Count(string(b), string(b[:1])) != 64<<10 {
		t.Errorf("new/n.txt is not one whole write (%d bytes)", len(b))
	}
}

// Attack (model): reach a protected place through a symlink the workspace
// already holds (planted by an earlier command): "hooks" -> ".git/hooks",
// "st" -> toolhost's state directory, and a dangling "later.txt" ->
// ".git/hooks/post-checkout".
// Expected: the sandbox resolves the link first: writes through it are
// refused (read-only or protected) and nothing appears behind it.
func TestHeld_SymlinkIntoProtectedPlaces(t *testing.T) {
	var state string
	h, root := openHost(t, func(_ *config.Config, o *host.Options) {
		state = filepath.Join(filepath.Dir(o.PluginDir), "state-"+filepath.Base(o.PluginDir))
		o.StateDir = state
	})
	os.MkdirAll(filepath.Join(root, ".git", "hooks"), 0o755)
	os.MkdirAll(state, 0o755)
	for link, target := range map[string]string{"hooks": ".git/hooks", "st": state, "later.txt": ".git/hooks/post-checkout"} {
		if err := os.Symlink(target, filepath.Join(root, link)); err != nil {
			t.Fatal(err)
		}
	}
	calls := []engine.Call{
		call("1", "write_file", `{"path":"hooks/pre-commit","content":"#!/bin/sh\n"}`),
		call("2", "write_file", `{"path":"st/reads/x.json","content":"{}"}`),
		call("3", "write_file", `{"path":"later.txt","content":"#!/bin/sh\n"}`),
		call("4", "apply_patch", jsonArgs(t, map[string]any{"patch": "LP1\nF hooks/post-merge\nT\n#!/bin/sh\n.\nEND\n"})),
	}
	rs := process(t, h, context.Background(), engine.Batch{Conversation: "c", Calls: calls}, host.BatchOptions{Approver: approveAll()}, 30*time.Second)
	for _, r := range rs {
		if r.OK || (r.Error.Kind != "SandboxViolation" && r.Error.Kind != "PatchFailed") {
			t.Errorf("call %s went through a symlink into a protected place: %s %+v", r.ID, kindOf(r), r)
		}
	}
	for _, p := range []string{".git/hooks/pre-commit", ".git/hooks/post-checkout", ".git/hooks/post-merge"} {
		if _, err := os.Lstat(filepath.Join(root, p)); err == nil {
			t.Errorf("%s was written through a symlink", p)
		}
	}
	if _, err := os.Lstat(filepath.Join(state, "reads", "x.json")); err == nil {
		t.Error("a tool wrote into the state directory through a symlink")
	}
}

// Attack (client): a batch whose ctx is already cancelled, with a create
// that needs no approval.
// Expected: every call is Cancelled, nothing runs or is written, and
// the approver is not consulted for a cancelled batch's decisions to
// matter.
func TestHeld_CancelledBeforeProcess(t *testing.T) {
	h, root := openHost(t, nil)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	calls := []engine.Call{
		call("w", "write_file", `{"path":"n.txt","content":"x"}`),
		call("p", "apply_patch", jsonArgs(t, map[string]any{"patch": "LP1\nF m.txt\nT\nm\n.\nEND\n"})),
	}
	rs := process(t, h, ctx, engine.Batch{Conversation: "c", Calls: calls}, host.BatchOptions{Approver: approveAll()}, 30*time.Second)
	for _, r := range rs {
		if r.OK || r.Error.Kind != "Cancelled" {
			t.Errorf("call %s of a cancelled batch: %s %+v, want Cancelled", r.ID, kindOf(r), r)
		}
	}
	for _, p := range []string{"n.txt", "m.txt"} {
		if _, err := os.Stat(filepath.Join(root, p)); err == nil {
			t.Errorf("a cancelled batch wrote %s", p)
		}
	}
}

// Attack (model): path arguments that try to leave the root or hide
// themselves: "..", absolute paths, NUL bytes, a backslash traversal,
// fullwidth dots, an over-long path.
// Expected: each is refused by the sandbox before any plugin runs, or,
// for names that are only unusual (fullwidth dots, backslashes, which are
// ordinary characters on Unix), stays inside the root.
func TestHeld_PathTricksStayInside(t *testing.T) {
	h, root := openHost(t, nil)
	refused := []string{"../x.txt", "a/../../x.txt", "/etc/passwd", "a\x00b", strings.Repeat("d/", 3000) + "x"}
	for i, p := range refused {
		rs := process(t, h, context.Background(), engine.Batch{Conversation: "c", Calls: []engine.Call{
			call("w", "write_file", jsonArgs(t, map[string]any{"path": p, "content": "x"})),
		}}, host.BatchOptions{Approver: approveAll()}, 30*time.Second)
		if rs[0].OK {
			t.Errorf("path %d (%.40q) was written", i, p)
		}
	}
	for _, p := range []string{"\uff0e\uff0e/x.txt", `..\x.txt`} {
		rs := process(t, h, context.Background(), engine.Batch{Conversation: "c", Calls: []engine.Call{
			call("w", "write_file", jsonArgs(t, map[string]any{"path": p, "content": "x"})),
		}}, host.BatchOptions{Approver: approveAll()}, 30*time.Second)
		if rs[0].OK {
			if _, err := os.Stat(filepath.Join(root, p)); err != nil {
				t.Errorf("path %q was reported written but is not inside the root: %v", p, err)
			}
		}
	}
	if _, err := os.Stat(filepath.Join(filepath.Dir(root), "x.txt")); err == nil {
		t.Error("a file appeared beside the root")
	}
}
