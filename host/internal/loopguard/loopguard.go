// Package loopguard rewrites a WebAssembly module so that a host can stop
// it: every loop header first checks an exported mutable i32 global and
// traps (unreachable) once the host has set it, from any goroutine, with
// api.MutableGlobal.Set.
//
// It exists because wazero's own way to stop a runaway guest,
// WithCloseOnContextDone, exits to Go at every loop iteration. Measured
// with BenchmarkLoop on a 2-vCPU amd64 machine: 1.2 ns per iteration
// plain, 1.2-1.8 ns with this package's guard, 28-30 ns with
// WithCloseOnContextDone (an earlier measurement on a heavier loop: 2.2,
// 2.9 and 30 ns). A spinning guest stops 7-30 us after the flag is set on
// average (worst seen: 8 ms); wazero's compiler reloads the global at
// every iteration rather than hoisting it out of the loop.
//
// A flag alone is not enough in a Go host: while a goroutine runs compiled
// wasm it cannot be preempted, so a garbage collection that starts while a
// guest spins waits for it forever, and the whole process, including the
// timer that would set the flag, stops. So each loop header also counts
// down a second global and, every 65,536 iterations, calls the module's
// own import of wasi_snapshot_preview1.sched_yield: a host function, so the
// goroutine returns to Go and can be preempted. Modules that do not import
// sched_yield are refused with ErrNoYield; the host runs those another way.
//
// The package owns only the rewrite. It never changes what a module
// computes until the flag is set: it adds two globals, one export and the
// guard, moves no existing index, and copies every other byte, custom
// sections included, as it is. It does not validate modules (the runtime
// that compiles the output does), but it walks every instruction, so a
// loop opcode is never confused with an immediate that happens to be 0x03.
package loopguard

import (
	"encoding/binary"
	"errors"
	"fmt"

	"github.com/toolhost/toolhost/host/internal/wasmbin"
)

// FlagExport is the name of the exported interrupt flag.
const FlagExport = "toolhost_interrupt"

// Version changes whenever Instrument's output for the same input changes,
// so caches of instrumented modules can key on it.
const Version = "3"

// yieldEvery is how many loop iterations pass between calls to
// sched_yield: at 1-3 ns an iteration, a spinning guest reaches Go every
// 0.1-0.2 ms.
const yieldEvery = 1 << 16

// ErrNoYield reports a module without a sched_yield import to call.
var ErrNoYield = errors.New("module does not import wasi_snapshot_preview1.sched_yield as () -> i32")

// ErrMalformed wraps every error about an input the rewriter cannot parse.
// It is wasmbin's, whose reader finds them.
var ErrMalformed = wasmbin.ErrMalformed

// ErrFlagExported reports a module that already exports FlagExport,
// typically one that is already instrumented.
var ErrFlagExported = errors.New("module already exports " + FlagExport)

// Section ids.
const (
	secCustom = wasmbin.SectionCustom
	secType   = wasmbin.SectionType
	secImport = wasmbin.SectionImport
	secGlobal = wasmbin.SectionGlobal
	secExport = wasmbin.SectionExport
	secCode   = wasmbin.SectionCode
)

// Instrument returns module with the interrupt flag added and checked at
// every loop header. Errors wrap ErrMalformed, ErrNoYield or
// ErrFlagExported.
func Instrument(module []byte) ([]byte, error) {
	sections, err := wasmbin.Sections(module)
	if err != nil {
		return nil, err
	}
	m, err := inspect(sections)
	if err != nil {
		return nil, err
	}
	// One allocation for the whole output: loops add a few percent.
	out := make([]byte, 0, len(module)+len(module)/16+64)
	out = append(out, wasmbin.Header...)
	emit := func(id byte, body []byte) { out = wasmbin.AppendSection(out, id, body) }
	newGlobal, newExport := after(sections, secGlobal), after(sections, secExport)
	if newGlobal == -1 {
		emit(secGlobal, appendGlobals(nil))
	}
	if newExport == -1 {
		emit(secExport, appendExport(nil, m.flag))
	}
	for i, s := range sections {
		switch s.ID {
		case secGlobal:
			emit(s.ID, addToVector(s, 2, appendGlobals))
		case secExport:
			emit(s.ID, addToVector(s, 1, func(b []byte) []byte { return appendExport(b, m.flag) }))
		case secCode:
			// The new size is unknown until the bodies are rewritten: write
			// them after a 5-byte placeholder, then fill in a padded LEB128.
			out = append(out, s.ID, 0, 0, 0, 0, 0)
			sizeAt := len(out) - 5
			if out, err = rewriteCode(out, s, m); err != nil {
				return nil, err
			}
			putPaddedU32(out[sizeAt:sizeAt+5], uint32(len(out)-sizeAt-5))
		default:
			emit(s.ID, s.Body)
		}
		if i == newGlobal {
			emit(secGlobal, appendGlobals(nil))
		}
		if i == newExport {
			emit(secExport, appendExport(nil, m.flag))
		}
	}
	return out, nil
}

// after returns the index of the section a new section id must follow,
// or -1 to go first; -2 means the module has a section id already. A new
// section goes right after the last one the spec orders before it (for
// the global and export sections, at worst the import section that
// sched_yield requires), so custom sections keep the neighbours they had
// as far as possible: a trailing "name" section stays last. wazero
// accepts some malformed name sections only there.
func after(sections []wasmbin.Section, id byte) int {
	last := -1
	for i, s := range sections {
		switch {
		case s.ID == id:
			return -2
		case s.ID != secCustom && wasmbin.Rank(s.ID) < wasmbin.Rank(id):
			last = i
		}
	}
	return last
}

// moduleInfo is what the rewrite needs to know about a module.
type moduleInfo struct {
	importedFuncs uint32 // function index of the first code section body
	flag          uint32 // index of the flag global; the countdown is next
	yield         uint32 // function index of sched_yield
}

// inspect reads the sections that decide the new indices and whether the
// module can be instrumented.
func inspect(sections []wasmbin.Section) (moduleInfo, error) {
	var m moduleInfo
	var imp imports
	var types, exports wasmbin.Section
	haveTypes, haveExports := false, false
	for _, s := range sections {
		switch s.ID {
		case secType:
			types, haveTypes = s, true
		case secImport:
			var err error
			if imp, err = scanImports(s); err != nil {
				return m, err
			}
		case secGlobal:
			r := s.Reader()
			m.flag += r.Count()
			if err := r.Err(); err != nil {
				return m, err
			}
		case secExport:
			exports, haveExports = s, true
		}
	}
	// The flag and countdown come after every imported and defined
	// global, so no existing index moves.
	m.flag += imp.globals
	m.importedFuncs, m.yield = imp.funcs, imp.yield
	if !imp.haveYield {
		return m, ErrNoYield
	}
	if !haveTypes {
		return m, fmt.Errorf("%w: sched_yield has type %d but there is no type section", ErrMalformed, imp.yieldType)
	}
	if err := checkYieldType(types, imp.yieldType); err != nil {
		return m, err
	}
	if haveExports {
		if err := checkExports(exports); err != nil {
			return m, err
		}
	}
	return m, nil
}

// imports is what scanImports learns from the import section.
type imports struct {
	funcs, globals uint32
	yield          uint32 // function index of sched_yield, if haveYield
	yieldType      uint32
	haveYield      bool
}

// scanImports counts imported functions and globals, which come before
// defined ones in their index spaces, and finds the sched_yield import.
func scanImports(s wasmbin.Section) (imports, error) {
	var imp imports
	list, err := wasmbin.Imports(s)
	if err != nil {
		return imp, err
	}
	for _, i := range list {
		switch i.Kind {
		case wasmbin.KindFunc:
			if !imp.haveYield && i.Module == "wasi_snapshot_preview1" && i.Name == "sched_yield" {
				imp.yield, imp.yieldType, imp.haveYield = imp.funcs, i.Type, true
			}
			imp.funcs++
		case wasmbin.KindGlobal:
			imp.globals++
		}
	}
	return imp, nil
}

// checkYieldType makes sure sched_yield has the type the inserted call
// assumes, () -> i32: calling it with another would make the output
// invalid.
func checkYieldType(s wasmbin.Section, want uint32) error {
	r := s.Reader()
	n := r.Count()
	if r.Err() == nil && want >= n {
		return fmt.Errorf("%w: section %d: sched_yield's type %d is beyond the %d types", ErrMalformed, s.ID, want, n)
	}
	for i := range want + 1 {
		if form := r.Byte(); form != 0x60 && r.Err() == nil {
			r.Unread()
			r.Fail("type %d: unsupported type form %#x", i, form)
		}
		params := r.Count()
		for range params {
			r.ValType()
		}
		results := r.Count()
		var result byte
		for range results {
			result = r.ValType()
		}
		if err := r.Err(); err != nil {
			return err
		}
		if i == want && (params != 0 || results != 1 || result != 0x7f) {
			return fmt.Errorf("%w: its import has type %d", ErrNoYield, want)
		}
	}
	return nil
}

func checkExports(s wasmbin.Section) error {
	exports, err := wasmbin.Exports(s)
	for _, e := range exports {
		if e.Name == FlagExport {
			return ErrFlagExported
		}
	}
	return err
}

// addToVector returns the body of a vector section with extra more
// elements, which add appends, after the existing ones.
func addToVector(s wasmbin.Section, extra uint32, add func([]byte) []byte) []byte {
	r := s.Reader()
	n := r.U32() // already read without error by inspect
	out := binary.AppendUvarint(make([]byte, 0, len(s.Body)+32), uint64(n)+uint64(extra))
	out = append(out, s.Body[r.Pos():]...)
	return add(out)
}

// appendGlobals appends the flag, (global (mut i32) (i32.const 0)), and the
// countdown, (global (mut i32) (i32.const yieldEvery)). A nil b starts a
// new global section.
func appendGlobals(b []byte) []byte {
	if b == nil {
		b = []byte{2}
	}
	b = append(b, 0x7f, 0x01, 0x41, 0x00, 0x0b)
	b = append(b, 0x7f, 0x01, 0x41)
	b = appendI32(b, yieldEvery)
	return append(b, 0x0b)
}

// appendI32 appends v as a signed LEB128, the encoding of i32.const's
// immediate. (binary.AppendVarint zigzag-encodes, which wasm does not.)
func appendI32(b []byte, v int32) []byte {
	for {
		c := byte(v & 0x7f)
		v >>= 7
		if v == 0 && c&0x40 == 0 || v == -1 && c&0x40 != 0 {
			return append(b, c)
		}
		b = append(b, c|0x80)
	}
}

// appendExport appends (export FlagExport (global flag)). A nil b starts a
// new export section.
func appendExport(b []byte, flag uint32) []byte {
	if b == nil {
		b = []byte{1}
	}
	b = binary.AppendUvarint(b, uint64(len(FlagExport)))
	b = append(b, FlagExport...)
	b = append(b, 0x03)
	return binary.AppendUvarint(b, uint64(flag))
}

// putPaddedU32 writes v as a 5-byte LEB128, which the format allows, so a
// size can be filled in after the bytes it counts.
func putPaddedU32(b []byte, v uint32) {
	for i := range 4 {
		b[i] = byte(v&0x7f) | 0x80
		v >>= 7
	}
	b[4] = byte(v)
}
