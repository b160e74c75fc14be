package runtime

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
)

var wasmHeader = []byte{0x00, 'a', 's', 'm', 0x01, 0x00, 0x00, 0x00}

// customSection returns the payload of the first custom section called
// name. It reads only section headers, so finding a manifest costs
// microseconds where compiling the module costs a second.
func customSection(wasm []byte, name string) ([]byte, bool, error) {
	if !bytes.HasPrefix(wasm, wasmHeader) {
		return nil, false, errors.New("not a WebAssembly 1.0 binary module")
	}
	rest := wasm[len(wasmHeader):]
	for len(rest) > 0 {
		id := rest[0]
		size, n := binary.Uvarint(rest[1:])
		if n <= 0 || size > uint64(len(rest)-1-n) {
			return nil, false, fmt.Errorf("malformed section header at offset %d", len(wasm)-len(rest))
		}
		body := rest[1+n : 1+n+int(size)]
		rest = rest[1+n+int(size):]
		if id != 0 {
			continue
		}
		nameLen, m := binary.Uvarint(body)
		if m <= 0 || nameLen > uint64(len(body)-m) {
			return nil, false, errors.New("malformed custom section name")
		}
		if string(body[m:m+int(nameLen)]) == name {
			return body[m+int(nameLen):], true, nil
		}
	}
	return nil, false, nil
}

// withCustomSection returns wasm with every custom section called name
// replaced by one holding payload, appended at the end.
func withCustomSection(wasm []byte, name string, payload []byte) ([]byte, error) {
	if !bytes.HasPrefix(wasm, wasmHeader) {
		return nil, errors.New("not a WebAssembly 1.0 binary module")
	}
	out := append([]byte(nil), wasmHeader...)
	rest := wasm[len(wasmHeader):]
	for len(rest) > 0 {
		size, n := binary.Uvarint(rest[1:])
		if n <= 0 || size > uint64(len(rest)-1-n) {
			return nil, fmt.Errorf("malformed section header at offset %d", len(wasm)-len(rest))
		}
		section := rest[:1+n+int(size)]
		body := section[1+n:]
		rest = rest[len(section):]
		if section[0] == 0 {
			if nameLen, m := binary.Uvarint(body); m > 0 && nameLen <= uint64(len(body)-m) && string(body[m:m+int(nameLen)]) == name {
				continue
			}
		}
		out = append(out, section...)
	}
	var body []byte
	body = binary.AppendUvarint(body, uint64(len(name)))
	body = append(body, name...)
	body = append(body, payload...)
	out = append(out, 0)
	out = binary.AppendUvarint(out, uint64(len(body)))
	return append(out, body...), nil
}

// importedFunctions lists the module and name of every function import,
// read from the import section without compiling the module.
func importedFunctions(wasm []byte) ([][2]string, error) {
	if !bytes.HasPrefix(wasm, wasmHeader) {
		return nil, errors.New("not a WebAssembly 1.0 binary module")
	}
	rest := wasm[len(wasmHeader):]
	for len(rest) > 0 {
		id := rest[0]
		size, n := binary.Uvarint(rest[1:])
		if n <= 0 || size > uint64(len(rest)-1-n) {
			return nil, fmt.Errorf("malformed section header at offset %d", len(wasm)-len(rest))
		}
		body := rest[1+n : 1+n+int(size)]
		rest = rest[1+n+int(size):]
		if id == 2 {
			return parseImports(body)
		}
	}
	return nil, nil
}

func parseImports(b []byte) ([][2]string, error) {
	d := &leb{b: b}
	var out [][2]string
	for range d.uint() {
		module, name := d.name(), d.name()
		switch kind := d.byte(); kind {
		case 0x00: // function
			d.uint()
			out = append(out, [2]string{module, name})
		case 0x01: // table: reftype, limits
			d.byte()
			d.limits()
		case 0x02: // memory
			d.limits()
		case 0x03: // global: valtype, mutability
			d.byte()
			d.byte()
		case 0x04: // tag
			d.byte()
			d.uint()
		default:
			return nil, fmt.Errorf("unknown import kind %#x", kind)
		}
		if d.err != nil {
			return nil, d.err
		}
	}
	return out, d.err
}

// leb reads the wasm binary encoding; the first error sticks.
type leb struct {
	b   []byte
	err error
}

func (d *leb) byte() byte {
	if d.err != nil || len(d.b) == 0 {
		d.fail()
		return 0
	}
	c := d.b[0]
	d.b = d.b[1:]
	return c
}

func (d *leb) uint() uint64 {
	if d.err != nil {
		return 0
	}
	v, n := binary.Uvarint(d.b)
	if n <= 0 {
		d.fail()
		return 0
	}
	d.b = d.b[n:]
	return v
}

func (d *leb) name() string {
	n := d.uint()
	if d.err != nil || n > uint64(len(d.b)) {
		d.fail()
		return ""
	}
	s := string(d.b[:n])
	d.b = d.b[n:]
	return s
}

func (d *leb) limits() {
	if d.byte()&1 != 0 {
		d.uint()
	}
	d.uint()
}

func (d *leb) fail() {
	if d.err == nil {
		d.err = errors.New("malformed import section")
	}
}
