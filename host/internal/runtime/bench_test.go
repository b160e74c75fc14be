package runtime

import (
	"context"
	"crypto/rand"
	"os"
	"path/filepath"
	"testing"

	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/api"
	"github.com/tetratelabs/wazero/experimental"

	"github.com/toolhost/toolhost/abi"
	"github.com/toolhost/toolhost/internal/testplugin"
)

// BenchmarkCall is a warm call of a plugin that does nothing: what the
// runtime adds to every call (asks that it not grow).
func BenchmarkCall(b *testing.B) {
	ctx := context.Background()
	rt, err := New(ctx, Config[testState]{CacheDir: testplugin.CacheDir(b)})
	if err != nil {
		b.Fatal(err)
	}
	defer rt.Close(ctx)
	p, err := rt.Load(ctx, testplugin.Build(b, b.TempDir(), "host/internal/runtime/testdata/panic"))
	if err != nil {
		b.Fatal(err)
	}
	req := request(`{}`)
	for b.Loop() {
		if _, err := p.Call(ctx, nil, req); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkBareCall is a warm call of a hand-written module that does
// nothing at all, so it measures the runtime alone: acquiring an
// instance, the interrupt watch, copying the request in and the result
// out.
func BenchmarkBareCall(b *testing.B) {
	ctx := context.Background()
	rt, err := New(ctx, Config[testState]{})
	if err != nil {
		b.Fatal(err)
	}
	defer rt.Close(ctx)
	m := handModule{name: "bare", yield: true, result: abi.Result{Content: []byte("ok")}}
	path := filepath.Join(b.TempDir(), "bare.wasm")
	if err := os.WriteFile(path, m.bytes(), 0o644); err != nil {
		b.Fatal(err)
	}
	p, err := rt.Load(ctx, path)
	if err != nil {
		b.Fatal(err)
	}
	req := request(`{}`)
	for b.Loop() {
		if _, err := p.Call(ctx, nil, req); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkStartup compares a Go plugin's start-up as the runtime runs it
// (no start function at instantiation, then _initialize as an export
// under the deadline and the interrupt) with wazero running _initialize
// as a start function, which cannot be interrupted.
func BenchmarkStartup(b *testing.B) {
	ctx := context.Background()
	rt, err := New(ctx, Config[testState]{CacheDir: testplugin.CacheDir(b), HostFunctions: testHostFunctions()})
	if err != nil {
		b.Fatal(err)
	}
	defer rt.Close(ctx)
	p, err := rt.Load(ctx, testplugin.Build(b, b.TempDir(), "plugins/read_file"))
	if err != nil {
		b.Fatal(err)
	}
	c, err := p.compile(ctx)
	if err != nil {
		b.Fatal(err)
	}
	b.Run("runtime", func(b *testing.B) {
		for b.Loop() {
			sctx, cancel := p.startupContext(ctx)
			inst, err := p.instantiate(ctx, sctx, c)
			cancel()
			if err != nil {
				b.Fatal(err)
			}
			inst.close(ctx)
		}
	})
	b.Run("wazero-start-function", func(b *testing.B) {
		resolve := experimental.WithImportResolver(ctx, func(name string) api.Module {
			if name == abi.HostModule {
				return c.host
			}
			return nil
		})
		for b.Loop() {
			mod, err := c.engine.InstantiateModule(resolve, c.module, wazero.NewModuleConfig().
				WithName("").WithStartFunctions(abi.StartFunction).
				WithSysWalltime().WithSysNanotime().WithRandSource(rand.Reader))
			if err != nil {
				b.Fatal(err)
			}
			mod.Close(ctx)
		}
	})
}
