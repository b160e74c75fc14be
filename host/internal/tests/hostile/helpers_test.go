// Package hostile_test attacks a Host from outside, through its public
// API only: as a hostile plugin in the trusted directory, as a slow or
// malicious client, and as a prompt-injected model whose only weapon is
// tool arguments. Each test says the attack and the behaviour expected.
package hostile_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/toolhost/toolhost/host"
	"github.com/toolhost/toolhost/host/internal/config"
	"github.com/toolhost/toolhost/host/internal/engine"
	"github.com/toolhost/toolhost/host/internal/inside"
	"github.com/toolhost/toolhost/internal/testplugin"
)

// realPlugins is the directory of the built-in plugins.
func realPlugins(t *testing.T) string { return testplugin.BuiltIns(t) }

// pluginDir returns a fresh plugin directory holding the real plugins and
// the hostile test plugins named (built from host/internal/tests/hostile/testdata).
func pluginDir(t *testing.T, hostile ...string) string {
	t.Helper()
	dir := t.TempDir()
	entries, err := os.ReadDir(realPlugins(t))
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		if e.IsDir() { // the built-ins' conformance cases
			continue
		}
		data, err := os.ReadFile(filepath.Join(realPlugins(t), e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, e.Name()), data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for _, name := range hostile {
		testplugin.Build(t, dir, "host/internal/tests/hostile/testdata/"+name)
	}
	return dir
}

// openHost opens a host on a fresh workspace (returned) with the default
// configuration, which mutate may change first.
func openHost(t *testing.T, mutate func(*config.Config, *host.Options), hostile ...string) (*host.Host, string) {
	t.Helper()
	root := t.TempDir()
	cfg := config.Default()
	cfg.Tools.Sandbox.AllowedRoots = []string{root}
	opts := host.Options{PluginDir: pluginDir(t, hostile...), Config: cfg, CacheDir: testplugin.CacheDir(t)}
	if mutate != nil {
		mutate(cfg, &opts)
	}
	h, err := host.Open(context.Background(), opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { h.Close(context.Background()) })
	return h, root
}

func call(id, name, args string) engine.Call {
	return engine.Call{ID: id, Name: name, Arguments: json.RawMessage(args)}
}

// jsonArgs marshals v as a call's arguments (for strings that need
// escaping: newlines, control and format characters).
func jsonArgs(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func approveAll() engine.Approver {
	return engine.ApproverFunc(func(context.Context, []engine.Confirmation) (engine.Decision, error) {
		return engine.ApproveAll("the test"), nil
	})
}

// process runs a batch and fails the test if it does not return within
// limit: a hang is a finding, but the test must end.
func process(t *testing.T, h *host.Host, ctx context.Context, b engine.Batch, opts host.BatchOptions, limit time.Duration) []engine.Result {
	t.Helper()
	type out struct {
		rs    []engine.Result
		panic any
	}
	done := make(chan out, 1)
	go func() {
		var o out
		defer func() {
			o.panic = recover()
			done <- o
		}()
		_, o.rs = h.Process(ctx, b, opts)
	}()
	select {
	case o := <-done:
		if o.panic != nil {
			t.Fatalf("Process panicked: %v", o.panic)
		}
		if len(o.rs) != len(b.Calls) {
			t.Fatalf("Process returned %d results for %d calls", len(o.rs), len(b.Calls))
		}
		return o.rs
	case <-time.After(limit):
		t.Fatalf("Process did not return within %v", limit)
	}
	return nil
}

// read has conversation "c", the one confirmation plans in, read path,
// so that a call replacing it is asked about rather than refused as stale
// before anyone is asked.
func read(t *testing.T, h *host.Host, path string) {
	t.Helper()
	b := engine.Batch{Conversation: "c", Calls: []engine.Call{call("read", "read_file", jsonArgs(t, map[string]any{"path": path}))}}
	if r := process(t, h, context.Background(), b, host.BatchOptions{}, time.Minute); !r[0].OK {
		t.Fatalf("read_file %s: %+v", path, r[0].Error)
	}
}

// confirmation plans a batch of one call and returns what a person would
// be asked to approve.
func confirmation(t *testing.T, h *host.Host, c engine.Call) engine.Confirmation {
	t.Helper()
	p := h.Inside(inside.Key{}).Engine.Plan(context.Background(), engine.Batch{Conversation: "c", Calls: []engine.Call{c}})
	cs := p.Confirmations()
	if len(cs) != 1 {
		t.Fatalf("plan of %s: %d confirmations, want 1 (%+v)", c.Name, len(cs), p.Calls[0])
	}
	return cs[0]
}

func kindOf(r engine.Result) string {
	if r.Error == nil {
		return "ok"
	}
	return string(r.Error.Kind)
}
