package loopguard

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	goruntime "runtime"
	"testing"
	"time"

	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/api"
	"github.com/tetratelabs/wazero/imports/wasi_snapshot_preview1"
)

// module assembles a module from (id, body) sections.
func module(sections ...[]byte) []byte {
	out := append([]byte(nil), header...)
	for _, s := range sections {
		out = append(out, s[0])
		out = binary.AppendUvarint(out, uint64(len(s)-1))
		out = append(out, s[1:]...)
	}
	return out
}

func sec(id byte, body ...byte) []byte { return append([]byte{id}, body...) }

// yieldImport imports wasi_snapshot_preview1.sched_yield as function 0,
// of type 1 (() -> i32).
var yieldImport = sec(2, append(append(append([]byte{0x01, 22}, "wasi_snapshot_preview1"...), 11), append([]byte("sched_yield"), 0x00, 0x01)...)...)

// funcModule is a module importing sched_yield (function 0) with one
// exported function (1) of type () -> () whose body is code (without the
// final end).
func funcModule(code []byte) []byte {
	body := append([]byte{0x00}, code...) // no locals
	body = append(body, 0x0b)
	codeSec := append([]byte{0x01}, binary.AppendUvarint(nil, uint64(len(body)))...)
	codeSec = append(codeSec, body...)
	return module(
		sec(1, 0x02, 0x60, 0x00, 0x00, 0x60, 0x00, 0x01, 0x7f), // types: () -> (), () -> i32
		yieldImport,
		sec(3, 0x01, 0x00),                  // function 1: type 0
		sec(5, 0x01, 0x00, 0x01),            // memory 1 page
		sec(7, 0x01, 0x01, 'f', 0x00, 0x01), // export "f" func 1
		sec(10, codeSec...),
	)
}

func compiles(t *testing.T, wasm []byte) wazero.CompiledModule {
	t.Helper()
	ctx := context.Background()
	r := wazero.NewRuntime(ctx)
	t.Cleanup(func() { r.Close(ctx) })
	m, err := r.CompileModule(ctx, wasm)
	if err != nil {
		t.Fatalf("instrumented module does not validate: %v", err)
	}
	return m
}

func TestInstrument(t *testing.T) {
	loopCheck := guard(0, 0)
	tests := []struct {
		name   string
		code   []byte
		checks int
	}{
		{"no loop", []byte{0x01}, 0},
		{"one loop", []byte{0x03, 0x40, 0x0b}, 1},
		{"nested loops", []byte{0x03, 0x40, 0x03, 0x40, 0x0b, 0x0b}, 2},
		{"loop with result type", []byte{0x03, 0x7f, 0x41, 0x01, 0x0b, 0x1a}, 1},
		{"loop inside if/else", []byte{0x41, 0x00, 0x04, 0x40, 0x03, 0x40, 0x0b, 0x05, 0x03, 0x40, 0x0b, 0x0b}, 2},
		{"br_table before loop", []byte{0x02, 0x40, 0x41, 0x00, 0x0e, 0x02, 0x00, 0x00, 0x00, 0x0b, 0x03, 0x40, 0x0b}, 1},
		{"memarg with offset", []byte{0x41, 0x00, 0x28, 0x02, 0x83, 0x01, 0x1a, 0x03, 0x40, 0x0b}, 1},
		{"i64.const holding 0x03 bytes", []byte{0x42, 0x83, 0x83, 0x03, 0x1a, 0x03, 0x40, 0x0b}, 1},
		{"f64.const holding 0x03 bytes", []byte{0x44, 3, 3, 3, 3, 3, 3, 3, 3, 0x1a, 0x03, 0x40, 0x0b}, 1},
		{"memory.fill then loop", []byte{0x41, 0x00, 0x41, 0x03, 0x41, 0x00, 0xfc, 0x0b, 0x00, 0x03, 0x40, 0x0b}, 1},
		{"v128.const then loop", append(append([]byte{0xfd, 0x0c}, bytes.Repeat([]byte{0x03}, 16)...), 0x1a, 0x03, 0x40, 0x0b), 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			in := funcModule(tt.code)
			compiles(t, in)
			out, err := Instrument(in)
			if err != nil {
				t.Fatal(err)
			}
			m := compiles(t, out)
			if got := bytes.Count(out, loopCheck); got != tt.checks {
				t.Errorf("%d flag checks, want %d", got, tt.checks)
			}
			if _, ok := m.ExportedFunctions()["f"]; !ok {
				t.Error("export f lost")
			}
		})
	}
}

// The flag's index must come after imported and existing globals.
func TestFlagIndexAfterImportedGlobals(t *testing.T) {
	imports := []byte{0x02, 0x01, 'e', 0x01, 'g', 0x03, 0x7f, 0x00} // e.g: global i32 const
	imports = append(imports, yieldImport[2:]...)                   // sched_yield: function 0
	in := module(
		sec(1, 0x02, 0x60, 0x00, 0x00, 0x60, 0x00, 0x01, 0x7f),
		sec(2, imports...),
		sec(3, 0x01, 0x00),
		sec(6, 0x01, 0x7e, 0x01, 0x42, 0x00, 0x0b), // one defined i64 global
		sec(7, 0x01, 0x01, 'f', 0x00, 0x01),
		sec(10, 0x01, 0x05, 0x00, 0x03, 0x40, 0x0b, 0x0b),
	)
	out, err := Instrument(in)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Contains(out, []byte{0x03, 0x40, 0x23, 0x02, 0x04, 0x40, 0x00, 0x0b}) {
		t.Fatalf("loop does not check global 2 (after 1 imported + 1 defined): % x", out)
	}
	ctx := context.Background()
	r := wazero.NewRuntime(ctx)
	defer r.Close(ctx)
	if _, err := r.NewHostModuleBuilder("e").Compile(ctx); err != nil {
		t.Fatal(err)
	}
	m, err := r.CompileModule(ctx, out)
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := m.ExportedFunctions()["f"]; !ok {
		t.Fatal("export lost")
	}
}

func TestInstrumentRejects(t *testing.T) {
	good := funcModule([]byte{0x03, 0x40, 0x0b})
	tests := map[string][]byte{
		"not wasm":       []byte("\x00asm\x02\x00\x00\x00"),
		"truncated":      good[:len(good)-3],
		"bad section":    append(append([]byte(nil), header...), 0x0a, 0xff, 0xff, 0xff, 0xff, 0xff),
		"unknown opcode": funcModule([]byte{0xff}),
		"already has flag": module(
			sec(1, 0x02, 0x60, 0x00, 0x00, 0x60, 0x00, 0x01, 0x7f), yieldImport, sec(3, 0x01, 0x00),
			sec(7, append(append([]byte{0x01, byte(len(FlagExport))}, FlagExport...), 0x00, 0x01)...),
			sec(10, 0x01, 0x02, 0x00, 0x0b)),
	}
	noYield := module(sec(1, 0x01, 0x60, 0x00, 0x00), sec(3, 0x01, 0x00), sec(10, 0x01, 0x02, 0x00, 0x0b))
	if _, err := Instrument(noYield); !errors.Is(err, ErrNoYield) {
		t.Errorf("module without sched_yield: err = %v, want ErrNoYield", err)
	}
	for name, in := range tests {
		if _, err := Instrument(in); err == nil {
			t.Errorf("%s: no error", name)
		}
	}
	if _, err := Instrument(tests["bad section"]); !errors.Is(err, ErrMalformed) {
		t.Errorf("bad section: err %v does not wrap ErrMalformed", err)
	}
}

// A real Go guest: still computes correctly, and a spinning call stops
// once the flag is set from another goroutine.
func TestStopsSpinningGoGuest(t *testing.T) {
	gobin := filepath.Join(goruntime.GOROOT(), "bin", "go")
	if _, err := os.Stat(gobin); err != nil {
		t.Skip("go tool not available")
	}
	out := filepath.Join(t.TempDir(), "spin.wasm")
	cmd := exec.Command(gobin, "build", "-buildmode=c-shared", "-o", out, "./testdata/spin")
	cmd.Env = append(os.Environ(), "GOOS=wasip1", "GOARCH=wasm")
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("build: %v\n%s", err, b)
	}
	wasm, _ := os.ReadFile(out)
	guarded, err := Instrument(wasm)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	r := wazero.NewRuntime(ctx)
	defer r.Close(ctx)
	wasi_snapshot_preview1.MustInstantiate(ctx, r)
	mod, err := r.InstantiateWithConfig(ctx, guarded, wazero.NewModuleConfig().WithStartFunctions("_initialize").WithName(""))
	if err != nil {
		t.Fatal(err)
	}
	res, err := mod.ExportedFunction("add").Call(ctx, 40, 2)
	if err != nil || res[0] != 42 {
		t.Fatalf("add(40, 2) = %v, %v", res, err)
	}
	flag := mod.ExportedGlobal(FlagExport).(api.MutableGlobal)
	done := make(chan error, 1)
	go func() {
		_, err := mod.ExportedFunction("spin").Call(ctx)
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
		if err == nil {
			t.Fatal("spin returned without error")
		}
	case <-time.After(time.Second):
		t.Fatal("guest still spinning 1s after the flag was set")
	}
}

func FuzzInstrument(f *testing.F) {
	f.Add(funcModule([]byte{0x03, 0x40, 0x0b}))
	f.Add(funcModule([]byte{0x41, 0x00, 0x04, 0x40, 0x03, 0x40, 0x0b, 0x05, 0x03, 0x40, 0x0b, 0x0b}))
	f.Add(funcModule([]byte{0x41, 0x00, 0x28, 0x02, 0x83, 0x01, 0x1a, 0x03, 0x40, 0x0b}))
	ctx := context.Background()
	r := wazero.NewRuntimeWithConfig(ctx, wazero.NewRuntimeConfigInterpreter())
	f.Fuzz(func(t *testing.T, in []byte) {
		out, err := Instrument(in)
		if err != nil {
			return
		}
		m, err := r.CompileModule(ctx, in)
		if err != nil {
			return // invalid input; any output is acceptable
		}
		m.Close(ctx)
		m, err = r.CompileModule(ctx, out)
		if err != nil {
			t.Fatalf("valid module became invalid: %v", err)
		}
		m.Close(ctx)
	})
}
