package loopguard

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/imports/wasi_snapshot_preview1"
)

// BenchmarkInstrumentGoModule needs the plugins make build produces.
func BenchmarkInstrumentGoModule(b *testing.B) {
	wasm, err := os.ReadFile(filepath.Join("..", "..", "..", "bin", "plugins", "read_file.wasm"))
	if err != nil {
		b.Skip(err)
	}
	b.SetBytes(int64(len(wasm)))
	for b.Loop() {
		if _, err := Instrument(wasm); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkLoop measures what the guard costs a guest: a loop of
// loopIterations iterations as compiled, instrumented, and as compiled
// but run with WithCloseOnContextDone, the alternative the guard replaces;
// and how long a spinning guest takes to stop once the flag is set.
func BenchmarkLoop(b *testing.B) {
	const loopIterations = 1 << 20
	ctx := context.Background()
	plain := loopModule()
	guarded, err := Instrument(plain)
	if err != nil {
		b.Fatal(err)
	}
	run := func(b *testing.B, cfg wazero.RuntimeConfig, wasm []byte) {
		r := wazero.NewRuntimeWithConfig(ctx, cfg)
		defer r.Close(ctx)
		wasi_snapshot_preview1.MustInstantiate(ctx, r)
		mod, err := r.InstantiateWithConfig(ctx, wasm, wazero.NewModuleConfig().WithName(""))
		if err != nil {
			b.Fatal(err)
		}
		count := mod.ExportedFunction("count")
		for b.Loop() {
			if _, err := count.Call(ctx, loopIterations); err != nil {
				b.Fatal(err)
			}
		}
		b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/loopIterations, "ns/iteration")
	}
	b.Run("plain", func(b *testing.B) { run(b, wazero.NewRuntimeConfig(), plain) })
	b.Run("instrumented", func(b *testing.B) { run(b, wazero.NewRuntimeConfig(), guarded) })
	b.Run("closeOnContextDone", func(b *testing.B) {
		run(b, wazero.NewRuntimeConfig().WithCloseOnContextDone(true), plain)
	})
	b.Run("stop", func(b *testing.B) {
		mod, flag := instantiateGuarded(b, plain)
		spin := mod.ExportedFunction("spin")
		var total, worst time.Duration
		for b.Loop() {
			done := make(chan time.Time, 1)
			go func() {
				spin.Call(ctx) // traps: the flag was set
				done <- time.Now()
			}()
			time.Sleep(2 * time.Millisecond) // well into the loop
			set := time.Now()
			flag.Set(1)
			lat := (<-done).Sub(set)
			total += lat
			worst = max(worst, lat)
			flag.Set(0)
		}
		b.ReportMetric(float64(total.Nanoseconds())/float64(b.N), "ns/stop")
		b.ReportMetric(float64(worst.Nanoseconds()), "worst-ns/stop")
	})
}
