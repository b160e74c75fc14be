package conformance

import (
	"fmt"
	"strings"

	"github.com/toolhost/toolhost/host/internal/wasmbin"
)

// sectionFunction is the function section's id: the type of each function
// the module defines.
const sectionFunction = 3

// signature is a function type: its parameter and result value types.
type signature struct{ params, results []byte }

// String writes the type as abi/README.md does: "(i32, i32) -> i64".
func (s signature) String() string {
	res := "()"
	switch len(s.results) {
	case 0:
	case 1:
		res = valTypeName(s.results[0])
	default:
		res = "(" + valTypeNames(s.results) + ")"
	}
	return "(" + valTypeNames(s.params) + ") -> " + res
}

func (s signature) equal(o signature) bool {
	return string(s.params) == string(o.params) && string(s.results) == string(o.results)
}

func valTypeNames(ts []byte) string {
	names := make([]string, len(ts))
	for i, t := range ts {
		names[i] = valTypeName(t)
	}
	return strings.Join(names, ", ")
}

func valTypeName(t byte) string {
	switch t {
	case 0x7f:
		return "i32"
	case 0x7e:
		return "i64"
	case 0x7d:
		return "f32"
	case 0x7c:
		return "f64"
	case 0x7b:
		return "v128"
	case 0x70:
		return "funcref"
	case 0x6f:
		return "externref"
	}
	return fmt.Sprintf("type %#x", t)
}

// moduleInfo is what the static checks read from a module's binary: its
// function types, imports and exports. It is read from the bytes, never
// by compiling, so a module the host refuses can still be described.
type moduleInfo struct {
	types   []signature
	imports []wasmbin.Import
	// funcs is the type index of every function: imported ones first,
	// in import order, then those the module defines.
	funcs   []uint32
	exports map[string]wasmbin.Export
	start   bool
}

// readModule parses the sections the static checks need.
func readModule(module []byte) (*moduleInfo, error) {
	sections, err := wasmbin.Sections(module)
	if err != nil {
		return nil, err
	}
	m := &moduleInfo{exports: map[string]wasmbin.Export{}}
	for _, sec := range sections {
		switch sec.ID {
		case wasmbin.SectionType:
			err = m.readTypes(sec)
		case wasmbin.SectionImport:
			if m.imports, err = wasmbin.Imports(sec); err == nil {
				for _, imp := range m.imports {
					if imp.Kind == wasmbin.KindFunc {
						m.funcs = append(m.funcs, imp.Type)
					}
				}
			}
		case sectionFunction:
			err = m.readFunctions(sec)
		case wasmbin.SectionExport:
			err = m.readExports(sec)
		case wasmbin.SectionStart:
			m.start = true
		}
		if err != nil {
			return nil, err
		}
	}
	return m, nil
}

func (m *moduleInfo) readTypes(sec wasmbin.Section) error {
	r := sec.Reader()
	for n := r.Count(); n > 0 && r.Err() == nil; n-- {
		if form := r.Byte(); form != 0x60 && r.Err() == nil {
			// Rec groups and subtypes (the GC proposal) are not
			// toolhost/v1; wazero would refuse them anyway.
			r.Unread()
			r.Fail("type form %#x is not a function type", form)
			break
		}
		var sig signature
		for k := r.Count(); k > 0 && r.Err() == nil; k-- {
			sig.params = append(sig.params, r.ValType())
		}
		for k := r.Count(); k > 0 && r.Err() == nil; k-- {
			sig.results = append(sig.results, r.ValType())
		}
		m.types = append(m.types, sig)
	}
	return r.Err()
}

func (m *moduleInfo) readFunctions(sec wasmbin.Section) error {
	r := sec.Reader()
	for n := r.Count(); n > 0 && r.Err() == nil; n-- {
		m.funcs = append(m.funcs, r.U32())
	}
	return r.Err()
}

func (m *moduleInfo) readExports(sec wasmbin.Section) error {
	exports, err := wasmbin.Exports(sec)
	for _, e := range exports {
		m.exports[e.Name] = e
	}
	return err
}

// funcType returns the type of function index fn.
func (m *moduleInfo) funcType(fn uint32) (signature, bool) {
	if int(fn) >= len(m.funcs) || int(m.funcs[fn]) >= len(m.types) {
		return signature{}, false
	}
	return m.types[m.funcs[fn]], true
}

// importType returns the type of a function import.
func (m *moduleInfo) importType(imp wasmbin.Import) (signature, bool) {
	if int(imp.Type) >= len(m.types) {
		return signature{}, false
	}
	return m.types[imp.Type], true
}

// exportedFunc returns the type of the function exported as name.
func (m *moduleInfo) exportedFunc(name string) (sig signature, found, isFunc bool) {
	e, ok := m.exports[name]
	if !ok {
		return signature{}, false, false
	}
	if e.Kind != wasmbin.KindFunc {
		return signature{}, true, false
	}
	sig, ok = m.funcType(e.Index)
	return sig, true, ok
}
