// Package wasmbin reads the parts of the WebAssembly binary format that
// toolhost inspects without compiling a module. It only reads.
package wasmbin

import (
	"encoding/binary"
	"errors"
	"fmt"
)

// SectionImport is the id of the import section.
const SectionImport = 2

// Import kinds.
const (
	KindFunc   byte = 0x00
	KindTable  byte = 0x01
	KindMemory byte = 0x02
	KindGlobal byte = 0x03
	KindTag    byte = 0x04
)

// Import is one entry of an import section.
type Import struct {
	Module, Name string
	Kind         byte
}

// ErrMalformed wraps every error about bytes that do not parse.
var ErrMalformed = errors.New("malformed wasm")

// Imports parses the body of an import section.
func Imports(body []byte) ([]Import, error) {
	d := decoder{b: body}
	n := d.uint()
	var out []Import
	for i := uint64(0); i < n && d.err == nil; i++ {
		imp := Import{Module: d.name(), Name: d.name(), Kind: d.byte()}
		switch imp.Kind {
		case KindFunc:
			d.uint() // type index
		case KindTable:
			d.byte() // reference type
			d.limits()
		case KindMemory:
			d.limits()
		case KindGlobal:
			d.byte() // value type
			d.byte() // mutability
		case KindTag:
			d.byte() // attribute
			d.uint() // type index
		default:
			d.fail("unknown import kind %#x", imp.Kind)
		}
		out = append(out, imp)
	}
	if d.err != nil {
		return nil, d.err
	}
	return out, nil
}

// decoder reads the binary encoding; the first error sticks.
type decoder struct {
	b   []byte
	off int
	err error
}

func (d *decoder) fail(format string, args ...any) {
	if d.err == nil {
		d.err = fmt.Errorf("%w: import section byte %d: %s", ErrMalformed, d.off, fmt.Sprintf(format, args...))
	}
}

func (d *decoder) byte() byte {
	if d.err != nil || d.off >= len(d.b) {
		d.fail("unexpected end")
		return 0
	}
	d.off++
	return d.b[d.off-1]
}

func (d *decoder) uint() uint64 {
	if d.err != nil {
		return 0
	}
	v, n := binary.Uvarint(d.b[d.off:])
	if n <= 0 {
		d.fail("bad LEB128")
		return 0
	}
	d.off += n
	return v
}

func (d *decoder) name() string {
	n := d.uint()
	if d.err != nil || n > uint64(len(d.b)-d.off) {
		d.fail("name longer than the section")
		return ""
	}
	s := string(d.b[d.off : d.off+int(n)])
	d.off += int(n)
	return s
}

func (d *decoder) limits() {
	if d.byte()&1 != 0 {
		d.uint()
	}
	d.uint()
}
