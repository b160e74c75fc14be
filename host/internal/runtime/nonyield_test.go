package runtime

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/toolhost/toolhost/abi"
)

// bareSpinModule is a toolhost/v1 module written by hand, as a non-Go
// toolchain would produce it: no WASI imports at all, so no sched_yield for
// the loop guard to call, and a call export that loops forever.
func bareSpinModule(describeExport string) []byte {
	uleb := func(n int) []byte {
		var b []byte
		for {
			c := byte(n & 0x7f)
			if n >>= 7; n == 0 {
				return append(b, c)
			}
			b = append(b, c|0x80)
		}
	}
	sleb := func(n int64) []byte {
		var b []byte
		for {
			c := byte(n & 0x7f)
			n >>= 7
			if (n == 0 && c&0x40 == 0) || (n == -1 && c&0x40 != 0) {
				return append(b, c)
			}
			b = append(b, c|0x80)
		}
	}
	section := func(id byte, body ...byte) []byte { return append(append([]byte{id}, uleb(len(body))...), body...) }
	name := func(s string) []byte { return append([]byte{byte(len(s))}, s...) }
	manifest := `{"abi":"toolhost/v1","name":"bare_spin","version":"0.0.1","description":"Spins without sched_yield.","parameters":{"type":"object"},"risk_level":"low"}`
	var exports []byte
	exports = append(exports, 6)
	exports = append(append(exports, name("memory")...), 0x02, 0)
	exports = append(append(exports, name(abi.ExportVersionMarker)...), 0x00, 0)
	exports = append(append(exports, name(abi.ExportAlloc)...), 0x00, 1)
	exports = append(append(exports, name(abi.ExportCall)...), 0x00, 2)
	exports = append(append(exports, name(abi.ExportSummary)...), 0x00, 2)
	exports = append(append(exports, name(describeExport)...), 0x00, 3)
	const manifestAt = 2048
	describe := append([]byte{0, 0x42}, sleb(int64(abi.Pack(manifestAt, uint32(len(manifest)))))...)
	describe = append(describe, 0x0b)
	data := append([]byte{1, 0, 0x41}, uleb(manifestAt)...) // one active segment at i32.const 2048
	data = append(append(append(data, 0x0b), uleb(len(manifest))...), manifest...)
	custom := append(name(abi.ManifestSection), manifest...)

	m := []byte{0x00, 0x61, 0x73, 0x6d, 0x01, 0x00, 0x00, 0x00}
	m = append(m, section(1, 4, // four types
		0x60, 0, 0, // () -> ()
		0x60, 1, 0x7f, 1, 0x7f, // (i32) -> i32
		0x60, 2, 0x7f, 0x7f, 1, 0x7e, // (i32, i32) -> i64
		0x60, 0, 1, 0x7e, // () -> i64
	)...)
	m = append(m, section(3, 4, 0, 1, 2, 3)...) // functions
	m = append(m, section(5, 1, 0x00, 1)...)    // one memory of one page
	m = append(m, section(7, exports...)...)    // exports
	code := []byte{4,                           // four bodies
		2, 0, 0x0b, // marker: nothing
		5, 0, 0x41, 0x80, 0x08, 0x0b, // alloc: i32.const 1024
		9, 0, 0x03, 0x40, 0x0c, 0x00, 0x0b, 0x42, 0x00, 0x0b, // call: loop br 0 end; i64.const 0
	}
	code = append(append(code, uleb(len(describe))...), describe...) // describe: the packed manifest
	m = append(m, section(10, code...)...)
	m = append(m, section(11, data...)...)
	return append(m, section(0, custom...)...)
}

// A module the loop guard cannot make preemptible (no sched_yield import)
// runs on the engine with per-iteration context checks, and its runaway
// call still ends at the deadline (T-TMO-01 for non-Go plugins).
func TestNonYieldingModuleStillStopped_T_TMO_01(t *testing.T) {
	path := filepath.Join(t.TempDir(), "bare_spin.wasm")
	if err := os.WriteFile(path, bareSpinModule(abi.ExportDescribe), 0o644); err != nil {
		t.Fatal(err)
	}
	rt := newRuntime(t)
	p, err := rt.Load(context.Background(), path)
	if err != nil {
		t.Fatal(err)
	}
	if p.Manifest().Name != "bare_spin" {
		t.Fatalf("manifest %+v", p.Manifest())
	}
	if err := p.Compile(context.Background()); err != nil {
		t.Fatal(err)
	}
	for range 2 {
		ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
		start := time.Now()
		_, err := p.Call(ctx, nil, request(`{}`))
		cancel()
		var ie *InterruptedError
		if !errors.As(err, &ie) || !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("err = %v, want InterruptedError(DeadlineExceeded)", err)
		}
		if elapsed := time.Since(start); elapsed > 5*time.Second {
			t.Errorf("stopped after %v", elapsed)
		}
	}
}

// A malformed module (a packed manifest but no describe export) is an error
// naming the missing export, never a crash of the host.
func TestPackedModuleWithoutDescribe(t *testing.T) {
	path := filepath.Join(t.TempDir(), "bare_spin.wasm")
	if err := os.WriteFile(path, bareSpinModule("not_describe"), 0o644); err != nil {
		t.Fatal(err)
	}
	p, err := newRuntime(t).Load(context.Background(), path)
	if err != nil {
		t.Fatal(err)
	}
	_, err = p.Call(context.Background(), nil, request(`{}`))
	if err == nil || !strings.Contains(err.Error(), "does not export toolhost_describe") {
		t.Fatalf("err = %v", err)
	}
}
