package loopguard

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	goruntime "runtime"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/api"
	"github.com/tetratelabs/wazero/imports/wasi_snapshot_preview1"
)

// loopModule exports count(n), which runs a loop of n iterations (n >= 1)
// and returns a value computed in it, and spin, which loops forever.
func loopModule() []byte {
	count := fn(bs(0x01, 0x01, i32), bs(
		0x03, 0x40, // loop
		0x20, 0x01, 0x41, 0x1f, 0x6c, 0x20, 0x00, 0x6a, 0x21, 0x01, // acc = acc*31 + n
		0x20, 0x00, 0x41, 0x01, 0x6b, 0x22, 0x00, 0x0d, 0x00, // n--; br_if n != 0
		0x0b,
		0x20, 0x01, // acc
	))
	spin := fn(nil, bs(0x03, 0x40, 0x0c, 0x00, 0x0b))
	return module(
		typeSec,
		sec(2, vec(yieldImport)),
		sec(3, vec(bs(0x02), bs(0x00))),
		sec(7, vec(exportFunc("count", 1), exportFunc("spin", 2))),
		sec(10, vec(count, spin)),
	)
}

// wantCount is what loopModule's count returns.
func wantCount(n uint32) uint32 {
	var acc uint32
	for ; n > 0; n-- {
		acc = acc*31 + n
	}
	return acc
}

// The countdown calls sched_yield once every yieldEvery loop iterations,
// and the rewrite leaves what the loop computes alone.
func TestYieldsEveryIterations(t *testing.T) {
	ctx := context.Background()
	r := wazero.NewRuntime(ctx)
	defer r.Close(ctx)
	var yields atomic.Int64
	_, err := r.NewHostModuleBuilder("wasi_snapshot_preview1").
		NewFunctionBuilder().WithFunc(func() int32 { yields.Add(1); return 0 }).Export("sched_yield").
		Instantiate(ctx)
	if err != nil {
		t.Fatal(err)
	}
	guarded, err := Instrument(loopModule())
	if err != nil {
		t.Fatal(err)
	}
	mod, err := r.InstantiateWithConfig(ctx, guarded, wazero.NewModuleConfig().WithName(""))
	if err != nil {
		t.Fatal(err)
	}
	const n = 3*yieldEvery + 5
	res, err := mod.ExportedFunction("count").Call(ctx, n)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := uint32(res[0]), wantCount(n); got != want {
		t.Errorf("count(%d) = %d, want %d", n, got, want)
	}
	if got := yields.Load(); got != 3 {
		t.Errorf("%d calls to sched_yield in %d iterations, want 3", got, n)
	}
}

// instantiateGuarded instruments wasm and instantiates it with WASI in the
// default (compiler) engine, the way the host runs plugins.
func instantiateGuarded(t testing.TB, wasm []byte, start ...string) (api.Module, api.MutableGlobal) {
	t.Helper()
	guarded, err := Instrument(wasm)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	r := wazero.NewRuntime(ctx)
	t.Cleanup(func() { r.Close(ctx) })
	wasi_snapshot_preview1.MustInstantiate(ctx, r)
	mod, err := r.InstantiateWithConfig(ctx, guarded, wazero.NewModuleConfig().WithStartFunctions(start...).WithName(""))
	if err != nil {
		t.Fatal(err)
	}
	flag, ok := mod.ExportedGlobal(FlagExport).(api.MutableGlobal)
	if !ok {
		t.Fatalf("no mutable global %s", FlagExport)
	}
	return mod, flag
}

// stopSpinning calls spin in a goroutine, sets the flag after 20 ms and
// expects an unreachable trap within a second.
func stopSpinning(t *testing.T, mod api.Module, flag api.MutableGlobal) {
	t.Helper()
	done := make(chan error, 1)
	go func() {
		_, err := mod.ExportedFunction("spin").Call(context.Background())
		done <- err
	}()
	time.Sleep(20 * time.Millisecond)
	// A garbage collection must be able to stop the world while the guest
	// spins: without the periodic sched_yield this call never returns and
	// nothing else in the process runs again.
	goruntime.GC()
	flag.Set(1)
	select {
	case err := <-done:
		if err == nil || !strings.Contains(err.Error(), "unreachable") {
			t.Fatalf("spin returned %v, want an unreachable trap", err)
		}
	case <-time.After(time.Second):
		t.Fatal("guest still spinning 1s after the flag was set")
	}
}

// The compiler must not hoist the flag's load out of the tightest loop
// there is, br 0 back to the loop header.
func TestStopsTightLoop(t *testing.T) {
	mod, flag := instantiateGuarded(t, loopModule())
	stopSpinning(t, mod, flag)
	// The trap leaves the instance usable once the flag is cleared.
	flag.Set(0)
	res, err := mod.ExportedFunction("count").Call(context.Background(), 1000)
	if err != nil || uint32(res[0]) != wantCount(1000) {
		t.Fatalf("count(1000) after the trap = %v, %v", res, err)
	}
}

// A real Go guest: still computes correctly, and a spinning call stops
// once the flag is set from another goroutine.
func TestStopsSpinningGoGuest(t *testing.T) {
	wasm := buildSpin(t)
	mod, flag := instantiateGuarded(t, wasm, "_initialize")
	res, err := mod.ExportedFunction("add").Call(context.Background(), 40, 2)
	if err != nil || res[0] != 42 {
		t.Fatalf("add(40, 2) = %v, %v", res, err)
	}
	stopSpinning(t, mod, flag)
}

// buildSpin compiles testdata/spin for wasip1. go test puts its own go
// command first on PATH.
func buildSpin(t testing.TB) []byte {
	t.Helper()
	gobin, err := exec.LookPath("go")
	if err != nil {
		t.Skip("go tool not available:", err)
	}
	out := filepath.Join(t.TempDir(), "spin.wasm")
	cmd := exec.Command(gobin, "build", "-buildmode=c-shared", "-o", out, "./testdata/spin")
	cmd.Env = append(os.Environ(), "GOOS=wasip1", "GOARCH=wasm")
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("build: %v\n%s", err, b)
	}
	wasm, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	return wasm
}
