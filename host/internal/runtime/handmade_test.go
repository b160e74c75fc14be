package runtime

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/toolhost/toolhost/abi"
	"github.com/toolhost/toolhost/host/internal/wasmbin"
)

// handModule is a toolhost/v1 module written by hand, as a non-Go
// toolchain could produce it, for behaviour a Go plugin cannot show
// deterministically. Its call and summary exports run call and return the
// packed address of result; describe returns the manifest, which is also
// packed in its custom section.
type handModule struct {
	name string
	// yield imports wasi_snapshot_preview1.sched_yield, so the loop guard
	// can instrument the module and it runs on the fast engine; without
	// it, it runs on the engine with per-iteration context checks.
	yield bool
	// emit imports toolhost_v1.event_emit as function 0 (then
	// sched_yield is 1).
	emit bool
	// call is the code of the call export (no locals), before it returns
	// result.
	call []byte
	// initialize, when set, is the code of an exported _initialize.
	initialize []byte
	// start, when set, is the code of the module's start function (a
	// start section, which wasm runs while instantiating).
	start []byte
	// describe names the describe export; empty means abi.ExportDescribe.
	describe string
	// describeCode runs in describe before it returns the manifest.
	describeCode []byte
	// unpacked leaves the manifest section out: Load must call describe.
	unpacked bool
	result   abi.Result
}

// Code snippets for handModule.
var (
	spinForever = []byte{0x03, 0x40, 0x0c, 0x00, 0x0b} // loop br 0 end
	// callEmit calls event_emit(0, 0, 0) and drops its result.
	callEmit = []byte{0x41, 0x00, 0x41, 0x00, 0x41, 0x00, 0x10, 0x00, 0x1a}
)

func uleb(n int) []byte {
	var b []byte
	for {
		c := byte(n & 0x7f)
		if n >>= 7; n == 0 {
			return append(b, c)
		}
		b = append(b, c|0x80)
	}
}

func sleb(n int64) []byte {
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

func (h handModule) manifest() string {
	return `{"abi":"toolhost/v1","name":"` + h.name + `","version":"0.0.1","description":"Written by hand.","parameters":{"type":"object"},"risk_level":"low"}`
}

func (h handModule) bytes() []byte {
	vec := func(items ...[]byte) []byte {
		out := uleb(len(items))
		for _, it := range items {
			out = append(out, it...)
		}
		return out
	}
	name := func(s string) []byte { return append(uleb(len(s)), s...) }
	cat := func(parts ...[]byte) []byte {
		var out []byte
		for _, p := range parts {
			out = append(out, p...)
		}
		return out
	}
	body := func(code ...byte) []byte { // no locals, code, end
		b := append([]byte{0}, code...)
		b = append(b, 0x0b)
		return append(uleb(len(b)), b...)
	}
	const (
		tVoid    = 0 // () -> ()
		tAlloc   = 1 // (i32) -> i32
		tCall    = 2 // (i32, i32) -> i64
		tPacked  = 3 // () -> i64
		tYield   = 4 // () -> i32
		tEmit    = 5 // (i32, i32, i32) -> i64
		manifest = 2048
		result   = 8192
	)
	types := vec(
		[]byte{0x60, 0, 0},
		[]byte{0x60, 1, 0x7f, 1, 0x7f},
		[]byte{0x60, 2, 0x7f, 0x7f, 1, 0x7e},
		[]byte{0x60, 0, 1, 0x7e},
		[]byte{0x60, 0, 1, 0x7f},
		[]byte{0x60, 3, 0x7f, 0x7f, 0x7f, 1, 0x7e},
	)
	var imports [][]byte
	if h.emit {
		imports = append(imports, cat(name(abi.HostModule), name(abi.FnEventEmit), []byte{0x00, tEmit}))
	}
	if h.yield {
		imports = append(imports, cat(name("wasi_snapshot_preview1"), name("sched_yield"), []byte{0x00, tYield}))
	}
	m := h.manifest()
	res := abi.AppendResult(nil, h.result)
	funcs := []byte{tVoid, tAlloc, tCall, tPacked}
	codes := [][]byte{
		body(),                 // the version marker: nothing
		body(0x41, 0x80, 0x08), // alloc: i32.const 1024
		body(cat(h.call, []byte{0x42}, sleb(int64(abi.Pack(result, uint32(len(res))))))...),
		body(cat(h.describeCode, []byte{0x42}, sleb(int64(abi.Pack(manifest, uint32(len(m))))))...),
	}
	first := len(imports)
	idx := func(i int) byte { return byte(first + i) }
	describe := h.describe
	if describe == "" {
		describe = abi.ExportDescribe
	}
	exports := [][]byte{
		cat(name("memory"), []byte{0x02, 0}),
		cat(name(abi.ExportVersionMarker), []byte{0x00, idx(0)}),
		cat(name(abi.ExportAlloc), []byte{0x00, idx(1)}),
		cat(name(abi.ExportCall), []byte{0x00, idx(2)}),
		cat(name(abi.ExportSummary), []byte{0x00, idx(2)}),
		cat(name(describe), []byte{0x00, idx(3)}),
	}
	if h.initialize != nil {
		funcs = append(funcs, tVoid)
		codes = append(codes, body(h.initialize...))
		exports = append(exports, cat(name(abi.StartFunction), []byte{0x00, idx(4)}))
	}
	startFn := -1
	if h.start != nil {
		startFn = first + len(funcs)
		funcs = append(funcs, tVoid)
		codes = append(codes, body(h.start...))
	}
	data := vec(
		cat([]byte{0, 0x41}, sleb(manifest), []byte{0x0b}, name(m)),
		cat([]byte{0, 0x41}, sleb(result), []byte{0x0b}, uleb(len(res)), res),
	)
	out := []byte(wasmbin.Header)
	out = wasmbin.AppendSection(out, 1, types)
	if len(imports) > 0 {
		out = wasmbin.AppendSection(out, 2, vec(imports...))
	}
	out = wasmbin.AppendSection(out, 3, append(uleb(len(funcs)), funcs...))
	out = wasmbin.AppendSection(out, 5, []byte{1, 0x00, 1}) // one memory of one page
	out = wasmbin.AppendSection(out, 7, vec(exports...))
	if startFn >= 0 {
		out = wasmbin.AppendSection(out, 8, uleb(startFn))
	}
	out = wasmbin.AppendSection(out, 10, vec(codes...))
	out = wasmbin.AppendSection(out, 11, data)
	if h.unpacked {
		return out
	}
	return wasmbin.AppendSection(out, 0, cat(name(abi.ManifestSection), []byte(m)))
}

// write stores the module in a fresh directory and returns its path.
func (h handModule) write(t *testing.T) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), h.name+".wasm")
	if err := os.WriteFile(path, h.bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}
