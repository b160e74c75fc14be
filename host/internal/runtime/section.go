package runtime

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"

	"github.com/toolhost/toolhost/host/internal/wasmbin"
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

// functionImports lists the module and name of each function import in an
// import section's body.
func functionImports(body []byte) ([][2]string, error) {
	imports, err := wasmbin.Imports(body)
	if err != nil {
		return nil, err
	}
	var out [][2]string
	for _, imp := range imports {
		if imp.Kind == wasmbin.KindFunc {
			out = append(out, [2]string{imp.Module, imp.Name})
		}
	}
	return out, nil
}

// sectionRef locates a section's body in a module file.
type sectionRef struct {
	id     byte
	name   string // custom sections only
	offset int64  // of the body (after the name, for custom sections)
	size   int64
}

// scanSections reads only the section headers of a module, so a host can
// find its manifest and imports without reading megabytes of code.
func scanSections(r io.ReaderAt, size int64) ([]sectionRef, error) {
	head := make([]byte, len(wasmHeader))
	if _, err := r.ReadAt(head, 0); err != nil || !bytes.Equal(head, wasmHeader) {
		return nil, errors.New("not a WebAssembly 1.0 binary module")
	}
	var out []sectionRef
	buf := make([]byte, 16)
	for off := int64(len(wasmHeader)); off < size; {
		n, err := r.ReadAt(buf, off)
		if n < 2 && err != nil {
			return nil, fmt.Errorf("malformed section header at offset %d", off)
		}
		body, m := binary.Uvarint(buf[1:n])
		start := off + 1 + int64(m)
		if m <= 0 || body > uint64(size-start) {
			return nil, fmt.Errorf("malformed section header at offset %d", off)
		}
		ref := sectionRef{id: buf[0], offset: start, size: int64(body)}
		if ref.id == 0 {
			if err := readCustomName(r, &ref); err != nil {
				return nil, err
			}
		}
		out = append(out, ref)
		off = start + int64(body)
	}
	return out, nil
}

func readCustomName(r io.ReaderAt, ref *sectionRef) error {
	buf := make([]byte, min(ref.size, 5+64))
	if _, err := r.ReadAt(buf, ref.offset); err != nil && !errors.Is(err, io.EOF) {
		return err
	}
	n, m := binary.Uvarint(buf)
	if m <= 0 || n > uint64(ref.size-int64(m)) {
		return fmt.Errorf("malformed custom section at offset %d", ref.offset)
	}
	name := make([]byte, n)
	if _, err := r.ReadAt(name, ref.offset+int64(m)); err != nil {
		return err
	}
	ref.name = string(name)
	skip := int64(m) + int64(n)
	ref.offset, ref.size = ref.offset+skip, ref.size-skip
	return nil
}

func readSection(r io.ReaderAt, ref sectionRef) ([]byte, error) {
	b := make([]byte, ref.size)
	_, err := r.ReadAt(b, ref.offset)
	return b, err
}
