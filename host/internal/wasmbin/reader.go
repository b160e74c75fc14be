// Package wasmbin reads the WebAssembly binary format: section framing,
// custom sections, the import section, and the primitive encodings
// (LEB128, value types, limits) that other readers of code build on. It
// is toolhost's one wasm reader: the runtime finds manifests and imports
// with it without compiling a module, and the loop guard walks code with
// it.
//
// It only reads and never validates beyond what it must parse; wazero
// validates what it compiles. Every error wraps ErrMalformed and says
// where the bad byte is.
package wasmbin

import (
	"errors"
	"fmt"
)

// ErrMalformed wraps every error about bytes that do not parse.
var ErrMalformed = errors.New("malformed wasm module")

// Reader decodes the binary encoding. The first error sticks; later reads
// return zero values, so callers check Err once per unit of work.
type Reader struct {
	b    []byte
	pos  int
	base int // offset of b in the module, for errors
	err  error

	// Section and Func say where the bytes come from, for errors: -1
	// when not known.
	Section int
	Func    int64
}

// NewReader reads b, which starts at offset base of the module and
// belongs to section (-1: none or unknown).
func NewReader(b []byte, base, section int) *Reader {
	return &Reader{b: b, base: base, Section: section, Func: -1}
}

// Err returns the first error.
func (r *Reader) Err() error { return r.err }

// Pos returns the offset of the next byte in b.
func (r *Reader) Pos() int { return r.pos }

// Remaining returns how many bytes are left.
func (r *Reader) Remaining() int { return len(r.b) - r.pos }

// Done reports whether every byte was read or an error stopped reading.
func (r *Reader) Done() bool { return r.err != nil || r.pos >= len(r.b) }

// Fail records an error at the current position, unless one is recorded.
func (r *Reader) Fail(format string, args ...any) {
	if r.err != nil {
		return
	}
	where := ""
	if r.Section >= 0 {
		where = fmt.Sprintf("section %d, ", r.Section)
	}
	if r.Func >= 0 {
		where += fmt.Sprintf("function %d, ", r.Func)
	}
	r.err = fmt.Errorf("%w: %sbyte %d: %s", ErrMalformed, where, r.base+r.pos, fmt.Sprintf(format, args...))
}

// FailAt records an error at pos, an offset in b: the start of the thing
// that turned out bad rather than where reading it stopped.
func (r *Reader) FailAt(pos int, format string, args ...any) {
	if r.err != nil {
		return
	}
	r.pos = pos
	r.Fail(format, args...)
}

// Byte reads one byte.
func (r *Reader) Byte() byte {
	if r.err == nil && r.pos < len(r.b) {
		r.pos++
		return r.b[r.pos-1]
	}
	r.Fail("unexpected end")
	return 0
}

// Unread steps back over the byte just read, so an error about it points
// at it.
func (r *Reader) Unread() {
	if r.err == nil && r.pos > 0 {
		r.pos--
	}
}

// Bytes reads n bytes; the result aliases b.
func (r *Reader) Bytes(n int) []byte {
	if r.err != nil {
		return nil
	}
	if n < 0 || n > len(r.b)-r.pos {
		r.Fail("%d bytes needed, %d left", n, len(r.b)-r.pos)
		return nil
	}
	b := r.b[r.pos : r.pos+n]
	r.pos += n
	return b
}

// U32 reads an unsigned LEB128 of at most 5 bytes.
func (r *Reader) U32() uint32 {
	if r.pos < len(r.b) && r.b[r.pos] < 0x80 && r.err == nil { // one-byte fast path
		r.pos++
		return uint32(r.b[r.pos-1])
	}
	return r.u32()
}

// u32 is U32's slow path.
func (r *Reader) u32() uint32 {
	start := r.pos
	var v uint64
	for i := range 5 {
		c := r.Byte()
		if r.err != nil {
			return 0
		}
		v |= uint64(c&0x7f) << (7 * i)
		if c&0x80 == 0 {
			if v > 0xffffffff {
				r.FailAt(start, "u32 LEB128 out of range")
				return 0
			}
			return uint32(v)
		}
	}
	r.FailAt(start, "u32 LEB128 longer than 5 bytes")
	return 0
}

// Count reads the length of a vector whose elements take at least one
// byte each. A count larger than the bytes left is an error at once: a
// loop over a bogus count of four billion would otherwise spin for
// seconds on reads that fail.
func (r *Reader) Count() uint32 {
	start := r.pos
	n := r.U32()
	if r.err == nil && int64(n) > int64(len(r.b)-r.pos) {
		r.FailAt(start, "vector of %d elements in %d bytes", n, len(r.b)-start)
		return 0
	}
	return n
}

// Name reads a name: a length, then that many bytes. It does not check
// that they are UTF-8.
func (r *Reader) Name() string { return string(r.Bytes(int(r.U32()))) }

// SkipLEB skips a LEB128 of at most 10 bytes: an i32, i64, s33 or u64
// whose value the caller does not need. An out-of-range one is left to
// the validator.
func (r *Reader) SkipLEB() {
	start := r.pos
	for range 10 {
		if r.Byte()&0x80 == 0 || r.err != nil {
			return
		}
	}
	r.FailAt(start, "LEB128 longer than 10 bytes")
}

// IsValType reports whether c is a one-byte value type: a number, v128,
// funcref or externref.
func IsValType(c byte) bool {
	return c >= 0x7b && c <= 0x7f || c == 0x70 || c == 0x6f
}

// ValType reads a value type and returns its first byte; a typed
// reference's heap type is skipped.
func (r *Reader) ValType() byte {
	switch c := r.Byte(); {
	case IsValType(c):
		return c
	case c == 0x63 || c == 0x64: // (ref null? heaptype)
		r.HeapType()
		return c
	default:
		r.Unread()
		r.Fail("unknown value type %#x", c)
		return 0
	}
}

// HeapType skips a heap type: an abstract one is a single negative s33
// byte, a concrete one a type index; both read as an s33.
func (r *Reader) HeapType() { r.SkipLEB() }

// BlockType skips a block type: 0x40, a value type, or a type index as an
// s33 (multi-value).
func (r *Reader) BlockType() {
	if r.err != nil {
		return
	}
	if r.pos >= len(r.b) {
		r.Fail("unexpected end in block type")
		return
	}
	switch c := r.b[r.pos]; {
	case c == 0x40, IsValType(c):
		r.pos++
	case c == 0x63 || c == 0x64:
		r.pos++
		r.HeapType()
	default:
		r.SkipLEB()
	}
}

// MemArg skips a memory argument. Bit 6 of the alignment says a memory
// index follows (multi-memory); the offset is a u64 under memory64.
func (r *Reader) MemArg() {
	if align := r.U32(); align&0x40 != 0 {
		r.U32()
	}
	r.SkipLEB()
}

// Limits skips table or memory limits; the flags say whether a maximum
// follows, and memory64 limits are u64.
func (r *Reader) Limits() {
	flags := r.Byte()
	if flags > 0x07 {
		r.Unread()
		r.Fail("unknown limits flags %#x", flags)
		return
	}
	r.SkipLEB()
	if flags&0x01 != 0 {
		r.SkipLEB()
	}
}
