package extism_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/toolhost/toolhost/host"
	"github.com/toolhost/toolhost/host/internal/config"
	"github.com/toolhost/toolhost/host/internal/engine"
	"github.com/toolhost/toolhost/host/internal/tests/extism"
	"github.com/toolhost/toolhost/internal/testplugin"
)

// BenchmarkCall is one call through the engine (plan, approve, run) of an
// Extism tool, beside a native toolhost/v1 tool in the same host as the
// baseline (NFR-PERF-03): the ratio is what the Extism
// compatibility path costs.
func BenchmarkCall(b *testing.B) {
	dir := b.TempDir()
	extism.Install(b, dir, extism.HyperTools, "hypertools.wasm")
	native, err := os.ReadFile(filepath.Join(testplugin.BuiltIns(b), "read_file.wasm"))
	if err != nil {
		b.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "read_file.wasm"), native, 0o644); err != nil {
		b.Fatal(err)
	}
	root := b.TempDir()
	if err := os.WriteFile(filepath.Join(root, "a.txt"), []byte("hello\n"), 0o644); err != nil {
		b.Fatal(err)
	}
	cfg := config.Default()
	cfg.Tools.Sandbox.AllowedRoots = []string{root}
	h, err := host.Open(context.Background(), host.Options{PluginDir: dir, Config: cfg, CacheDir: testplugin.CacheDir(b)})
	if err != nil {
		b.Fatal(err)
	}
	defer h.Close(context.Background())
	for _, c := range []struct{ name, tool, args string }{
		{"extism_upper", "upper", `{"text": "hello"}`},
		{"native_read_file", "read_file", `{"path": "a.txt"}`},
	} {
		b.Run(c.name, func(b *testing.B) {
			batch := engine.Batch{Conversation: "bench", Calls: []engine.Call{{ID: "c", Name: c.tool, Arguments: json.RawMessage(c.args)}}}
			for b.Loop() {
				batch.ID = ""
				if _, rs := h.Process(context.Background(), batch, host.BatchOptions{}); !rs[0].OK {
					b.Fatal(errorOf(rs[0]))
				}
			}
		})
	}
}

// BenchmarkOpen is opening a host whose plugin directory holds the Extism
// test plugin, with the compilation cache warm: what each toolhost
// command pays before its first call.
func BenchmarkOpen(b *testing.B) {
	dir := b.TempDir()
	extism.Install(b, dir, extism.HyperTools, "hypertools.wasm")
	cfg := config.Default()
	cfg.Tools.Sandbox.AllowedRoots = []string{b.TempDir()}
	opts := host.Options{PluginDir: dir, Config: cfg, CacheDir: testplugin.CacheDir(b)}
	for b.Loop() {
		h, err := host.Open(context.Background(), opts)
		if err != nil {
			b.Fatal(err)
		}
		h.Close(context.Background())
	}
}
