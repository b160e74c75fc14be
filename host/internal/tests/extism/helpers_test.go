package extism_test

import (
	"context"
	"encoding/json"
	"sync"
	"testing"

	"github.com/toolhost/toolhost/host"
	"github.com/toolhost/toolhost/host/internal/config"
	"github.com/toolhost/toolhost/host/internal/engine"
	"github.com/toolhost/toolhost/host/internal/tests/extism"
	"github.com/toolhost/toolhost/internal/testplugin"
)

// guest is a plugin to install: the guest's name and its file in the
// plugin directory.
type guest struct{ name, file string }

// openHost installs guests in a fresh plugin directory and opens a host
// on it with cfg (config.Default() with a temporary root when nil).
func openHost(t *testing.T, cfg *config.Config, state string, guests ...guest) *host.Host {
	t.Helper()
	h, err := tryOpen(t, cfg, state, guests...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { h.Close(context.Background()) })
	return h
}

func tryOpen(t *testing.T, cfg *config.Config, state string, guests ...guest) (*host.Host, error) {
	t.Helper()
	dir := t.TempDir()
	for _, g := range guests {
		extism.Install(t, dir, g.name, g.file)
	}
	if cfg == nil {
		cfg = defaultConfig(t)
	}
	return host.Open(context.Background(), host.Options{PluginDir: dir, Config: cfg, CacheDir: testplugin.CacheDir(t), StateDir: state})
}

func defaultConfig(t *testing.T) *config.Config {
	cfg := config.Default()
	cfg.Tools.Sandbox.AllowedRoots = []string{t.TempDir()}
	return cfg
}

// grant sets [extism.<name>] in cfg.
func grant(cfg *config.Config, name string, hosts []string, values map[string]string) {
	if values == nil {
		values = map[string]string{}
	}
	if hosts == nil {
		hosts = []string{}
	}
	cfg.Extism[name] = config.ExtismPlugin{AllowedHosts: hosts, Config: values, MaxMemoryMiB: config.DefaultExtismMaxMemoryMiB}
}

// events collects a batch's events.
type events struct {
	mu  sync.Mutex
	all []engine.Event
}

func (e *events) Send(_ context.Context, ev engine.Event) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.all = append(e.all, ev)
	return nil
}

func (e *events) chunks(kind engine.EventKind) string {
	e.mu.Lock()
	defer e.mu.Unlock()
	var s string
	for _, ev := range e.all {
		if ev.Kind == kind {
			s += ev.Chunk
		}
	}
	return s
}

// run processes one call, every confirmation approved, and returns its
// result.
func run(t *testing.T, h *host.Host, id, tool, args string, ev engine.EventSink) engine.Result {
	t.Helper()
	_, results := h.Process(context.Background(), engine.Batch{ID: "batch_" + id, Conversation: "conv", Calls: []engine.Call{
		{ID: id, Name: tool, Arguments: json.RawMessage(args)},
	}}, host.BatchOptions{Approver: engine.ApproverFunc(func(context.Context, []engine.Confirmation) (engine.Decision, error) {
		return engine.ApproveAll("the test"), nil
	}), Events: ev})
	return results[0]
}

func errorOf(r engine.Result) string {
	if r.Error == nil {
		return ""
	}
	return string(r.Error.Kind) + ": " + r.Error.Message
}

func hostOptions(decide func([]engine.Confirmation) engine.Decision) host.BatchOptions {
	return host.BatchOptions{Approver: engine.ApproverFunc(func(_ context.Context, cs []engine.Confirmation) (engine.Decision, error) {
		return decide(cs), nil
	})}
}
