package loopguard

import (
	"context"
	"encoding/binary"
	"testing"

	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/api"

	"github.com/toolhost/toolhost/host/internal/wasmbin"
)

const header = wasmbin.Header

// A tiny assembler for hand-written test modules: every helper returns
// encoded bytes, so modules read as nested calls.

func cat(parts ...[]byte) []byte {
	var out []byte
	for _, p := range parts {
		out = append(out, p...)
	}
	return out
}

func bs(b ...byte) []byte { return b }

func uleb(v int) []byte { return binary.AppendUvarint(nil, uint64(v)) }

// str encodes a name: its length, then its bytes.
func str(s string) []byte { return cat(uleb(len(s)), []byte(s)) }

// vec encodes a vector: the element count, then the elements.
func vec(items ...[]byte) []byte { return cat(uleb(len(items)), cat(items...)) }

// sec encodes a section: its id, the size of its body, then the body.
func sec(id byte, body ...[]byte) []byte {
	b := cat(body...)
	return cat([]byte{id}, uleb(len(b)), b)
}

func custom(name string, content ...byte) []byte { return sec(0, str(name), content) }

// module prefixes encoded sections with the header.
func module(sections ...[]byte) []byte { return cat([]byte(header), cat(sections...)) }

// fn encodes a function body: its size, locals (an encoded vector, nil
// for none), the code, and the final end.
func fn(locals, code []byte) []byte {
	if locals == nil {
		locals = bs(0x00)
	}
	b := cat(locals, code, bs(0x0b))
	return cat(uleb(len(b)), b)
}

func repeat(b byte, n int) []byte {
	out := make([]byte, n)
	for i := range out {
		out[i] = b
	}
	return out
}

const (
	i32 = 0x7f
	i64 = 0x7e
)

// functype encodes (func (param params...) (result results...)).
func functype(params, results []byte) []byte {
	return cat(bs(0x60), uleb(len(params)), params, uleb(len(results)), results)
}

// Types every test module shares: 0 is () -> (), 1 is () -> i32 (the
// type of sched_yield), 2 is (i32) -> i32.
var typeSec = sec(1, vec(functype(nil, nil), functype(nil, bs(i32)), functype(bs(i32), bs(i32))))

func importFunc(module, name string, typ int) []byte {
	return cat(str(module), str(name), bs(0x00), uleb(typ))
}

func importGlobal(module, name string, valtype byte) []byte {
	return cat(str(module), str(name), bs(0x03, valtype, 0x00))
}

var yieldImport = importFunc("wasi_snapshot_preview1", "sched_yield", 1)

func exportFunc(name string, index int) []byte { return cat(str(name), bs(0x00), uleb(index)) }

// guard00 is the code Instrument inserts when the flag is global 0 and
// sched_yield function 0, spelled out rather than computed by guard.
var guard00 = bs(
	0x23, 0x00, 0x04, 0x40, 0x00, 0x0b, // global.get 0  if  unreachable  end
	0x23, 0x01, 0x41, 0x7f, 0x6a, 0x24, 0x01, // count--
	0x23, 0x01, 0x45, 0x04, 0x40, // if count == 0
	0x41, 0x80, 0x80, 0x04, 0x24, 0x01, // count = 65536
	0x10, 0x00, 0x1a, 0x0b, // call sched_yield  drop  end
)

// funcModule is a module whose function 1, exported as "f", of type
// () -> (), has the given locals and code; function 0 is the sched_yield
// import. It has a table, a memory, a passive element segment and a
// passive data segment, so table and bulk memory instructions validate,
// but no global or export of its own beyond "f". With tags, it also has a
// tag of type () -> () for exception handling.
func funcModule(locals, code []byte, tags bool) []byte {
	var tagSec []byte
	if tags {
		tagSec = sec(13, vec(bs(0x00, 0x00)))
	}
	return module(
		typeSec,
		sec(2, vec(yieldImport)),
		sec(3, vec(bs(0x00))),
		sec(4, vec(bs(0x70, 0x00, 0x01))), // funcref table, min 1
		sec(5, vec(bs(0x00, 0x01))),       // memory, min 1 page
		tagSec,
		sec(7, vec(exportFunc("f", 1))),
		sec(9, vec(cat(bs(0x01, 0x00), vec(bs(0x01))))), // passive elem: function 1
		sec(12, uleb(1)), // data count
		sec(10, vec(fn(locals, code))),
		sec(11, vec(cat(bs(0x01), str("abc")))), // passive data
	)
}

// wasmSection is one section of a module, as the tests parse it.
type wasmSection struct {
	id   byte
	body []byte
}

// parse splits a module into sections, independently of the package's own
// parser.
func parse(t testing.TB, wasm []byte) []wasmSection {
	t.Helper()
	if string(wasm[:8]) != header {
		t.Fatalf("bad header % x", wasm[:8])
	}
	var out []wasmSection
	for rest := wasm[8:]; len(rest) > 0; {
		id := rest[0]
		size, n := binary.Uvarint(rest[1:])
		if n <= 0 || uint64(len(rest)-1-n) < size {
			t.Fatalf("bad section framing at % x", rest[:min(len(rest), 8)])
		}
		out = append(out, wasmSection{id, rest[1+n : 1+n+int(size)]})
		rest = rest[1+n+int(size):]
	}
	return out
}

func sectionBody(t testing.TB, wasm []byte, id byte) []byte {
	t.Helper()
	for _, s := range parse(t, wasm) {
		if s.id == id {
			return s.body
		}
	}
	t.Fatalf("no section %d", id)
	return nil
}

// bodies returns the function bodies of a module's code section.
func bodies(t testing.TB, wasm []byte) [][]byte {
	t.Helper()
	code := sectionBody(t, wasm, secCode)
	n, k := binary.Uvarint(code)
	code = code[k:]
	var out [][]byte
	for range n {
		size, k := binary.Uvarint(code)
		out = append(out, code[k:k+int(size)])
		code = code[k+int(size):]
	}
	return out
}

// compile validates wasm the way the host will: with a fresh runtime of
// the default (compiler, where there is one) engine.
func compile(t testing.TB, wasm []byte, features api.CoreFeatures) wazero.CompiledModule {
	t.Helper()
	ctx := context.Background()
	cfg := wazero.NewRuntimeConfig()
	if features != 0 {
		cfg = cfg.WithCoreFeatures(features)
	}
	r := wazero.NewRuntimeWithConfig(ctx, cfg)
	t.Cleanup(func() { r.Close(ctx) })
	m, err := r.CompileModule(ctx, wasm)
	if err != nil {
		t.Fatalf("module does not compile: %v", err)
	}
	return m
}
