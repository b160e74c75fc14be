package wasmbin

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
)

// Header is the magic number and version every WebAssembly 1.0 binary
// module starts with.
const Header = "\x00asm\x01\x00\x00\x00"

// Section ids.
const (
	SectionCustom = 0
	SectionType   = 1
	SectionImport = 2
	SectionGlobal = 6
	SectionExport = 7
	SectionStart  = 8
	SectionCode   = 10
)

// Rank orders non-custom sections as the spec requires them (the tag
// section, 13, sits between memory and global; data count, 12, before
// code); 0 means an unknown id.
func Rank(id byte) int {
	switch id {
	case 1, 2, 3, 4, 5:
		return int(id)
	case 13:
		return 6
	case 6, 7, 8, 9:
		return int(id) + 1
	case 12:
		return 11
	case 10, 11:
		return int(id) + 2
	}
	return 0
}

// Section is one section of a module held in memory.
type Section struct {
	ID     byte
	Offset int    // of Body in the module, for errors
	Body   []byte // as in the module: a custom section's starts with its name
}

// Reader returns a reader of the section's body.
func (s Section) Reader() *Reader { return NewReader(s.Body, s.Offset, int(s.ID)) }

// Custom returns a custom section's name and the bytes after it.
func (s Section) Custom() (name string, payload []byte, err error) {
	r := s.Reader()
	at := r.pos
	if n := r.U32(); r.err == nil && int(n) > r.Remaining() {
		r.FailAt(at, "custom section name longer than the section")
	}
	r.pos = at
	name = r.Name()
	if r.err != nil {
		return "", nil, r.err
	}
	return name, s.Body[r.pos:], nil
}

// Sections splits a module into its sections, checking the header, that
// the sections are framed and ordered as the spec requires, and that
// custom sections have a name. It does not look inside the others.
func Sections(module []byte) ([]Section, error) {
	if !bytes.HasPrefix(module, []byte(Header)) {
		return nil, fmt.Errorf("%w: not a WebAssembly 1.0 binary", ErrMalformed)
	}
	var out []Section
	var order order
	r := NewReader(module, 0, -1)
	r.pos = len(Header)
	for !r.Done() {
		r.Section = -1
		id := r.Byte()
		r.Section = int(id)
		size := r.U32()
		off := r.pos
		body := r.Bytes(int(size))
		if r.err != nil {
			return nil, r.err
		}
		if msg := order.next(id); msg != "" {
			r.FailAt(off, "%s", msg)
			return nil, r.err
		}
		s := Section{ID: id, Offset: off, Body: body}
		if id == SectionCustom {
			if _, _, err := s.Custom(); err != nil {
				return nil, err
			}
		}
		out = append(out, s)
	}
	return out, nil
}

// order checks that non-custom sections come in the spec's order, once
// each.
type order struct{ last int }

// next returns what is wrong with a section id coming next, or "".
func (o *order) next(id byte) string {
	if id == SectionCustom {
		return ""
	}
	switch rank := Rank(id); {
	case rank == 0:
		return "unknown section id"
	case rank <= o.last:
		return "section out of order or repeated"
	default:
		o.last = rank
	}
	return ""
}

// CustomSection returns the payload of the first custom section called
// name. It reads only section headers, so finding a manifest costs
// microseconds where compiling the module costs a second.
func CustomSection(module []byte, name string) ([]byte, bool, error) {
	sections, err := Sections(module)
	if err != nil {
		return nil, false, err
	}
	for _, s := range sections {
		if s.ID != SectionCustom {
			continue
		}
		n, payload, err := s.Custom()
		if err != nil {
			return nil, false, err
		}
		if n == name {
			return payload, true, nil
		}
	}
	return nil, false, nil
}

// WithCustomSection returns module with every custom section called name
// removed and one holding payload appended at the end.
func WithCustomSection(module []byte, name string, payload []byte) ([]byte, error) {
	sections, err := Sections(module)
	if err != nil {
		return nil, err
	}
	out := make([]byte, 0, len(module)+len(name)+len(payload)+16)
	out = append(out, Header...)
	for _, s := range sections {
		if s.ID == SectionCustom {
			n, _, err := s.Custom()
			if err != nil {
				return nil, err
			}
			if n == name {
				continue
			}
		}
		out = AppendSection(out, s.ID, s.Body)
	}
	body := binary.AppendUvarint(nil, uint64(len(name)))
	body = append(body, name...)
	body = append(body, payload...)
	return AppendSection(out, SectionCustom, body), nil
}

// AppendSection appends a section: its id, its size and body.
func AppendSection(out []byte, id byte, body []byte) []byte {
	out = append(out, id)
	out = binary.AppendUvarint(out, uint64(len(body)))
	return append(out, body...)
}

// SectionHeader locates a section of a module file without its body.
type SectionHeader struct {
	ID   byte
	Name string // custom sections only
	// Offset and Size locate the body in the file; a custom section's
	// body starts after its name.
	Offset, Size int64
}

// maxHeader is the most bytes a section header takes: an id and a u32
// LEB128 size.
const maxHeader = 1 + 5

// maxScannedName is how much of a custom section's name ScanFile reads
// with the header: longer names are read apart.
const maxScannedName = 64

// ScanFile reads only the section headers of a module of size bytes (and
// the names of custom sections), so a host can find its manifest and
// imports without reading megabytes of code. The checks are Sections'.
func ScanFile(f io.ReaderAt, size int64) ([]SectionHeader, error) {
	head := make([]byte, len(Header))
	if _, err := f.ReadAt(head, 0); err != nil || string(head) != Header {
		return nil, fmt.Errorf("%w: not a WebAssembly 1.0 binary", ErrMalformed)
	}
	var out []SectionHeader
	var order order
	buf := make([]byte, maxHeader+5+maxScannedName)
	for off := int64(len(Header)); off < size; {
		n, err := f.ReadAt(buf[:min(int64(len(buf)), size-off)], off)
		if err != nil && !errors.Is(err, io.EOF) {
			return nil, fmt.Errorf("read section header at byte %d: %w", off, err)
		}
		r := NewReader(buf[:n], int(off), -1)
		id := r.Byte()
		r.Section = int(id)
		body := int64(r.U32())
		start := off + int64(r.pos)
		if r.err == nil && body > size-start {
			r.Fail("%d bytes needed, %d left", body, size-start)
		}
		if r.err == nil {
			if msg := order.next(id); msg != "" {
				r.Fail("%s", msg)
			}
		}
		h := SectionHeader{ID: id, Offset: start, Size: body}
		if r.err == nil && id == SectionCustom {
			nameAt := r.pos
			nameLen := int64(r.U32())
			lenBytes := int64(r.pos - nameAt)
			if r.err == nil && nameLen > body-lenBytes {
				r.FailAt(nameAt, "custom section name longer than the section")
			}
			if r.err == nil {
				if h.Name, err = customName(f, r, nameLen, start+lenBytes); err != nil {
					return nil, err
				}
				skip := lenBytes + nameLen
				h.Offset, h.Size = start+skip, body-skip
			}
		}
		if r.err != nil {
			return nil, r.err
		}
		out = append(out, h)
		off = start + body
	}
	return out, nil
}

// customName returns a custom section's name of n bytes at offset at of
// the file: from r when the header buffer holds it, else from the file.
func customName(f io.ReaderAt, r *Reader, n, at int64) (string, error) {
	if n <= int64(r.Remaining()) {
		return string(r.Bytes(int(n))), nil
	}
	name := make([]byte, n)
	if _, err := f.ReadAt(name, at); err != nil {
		return "", fmt.Errorf("read custom section name at byte %d: %w", at, err)
	}
	return string(name), nil
}

// Read reads the section's body (after the name, for a custom section).
func (h SectionHeader) Read(f io.ReaderAt) ([]byte, error) {
	b := make([]byte, h.Size)
	if _, err := f.ReadAt(b, h.Offset); err != nil && !(errors.Is(err, io.EOF) && h.Size == 0) {
		return nil, fmt.Errorf("read section %d at byte %d: %w", h.ID, h.Offset, err)
	}
	return b, nil
}
