package loopguard

import "fmt"

// reader decodes the wasm binary encoding. The first error sticks; later
// reads return zero values, so callers check err once per unit of work.
type reader struct {
	b    []byte
	pos  int
	base int // offset of b in the module, for errors
	err  error

	// Where the bytes come from, for errors: -1 when not known.
	section int
	fn      int64
}

func newReader(b []byte, base, section int) *reader {
	return &reader{b: b, base: base, section: section, fn: -1}
}

func (r *reader) done() bool { return r.err != nil || r.pos >= len(r.b) }

func (r *reader) fail(format string, args ...any) {
	if r.err != nil {
		return
	}
	where := ""
	if r.section >= 0 {
		where = fmt.Sprintf("section %d, ", r.section)
	}
	if r.fn >= 0 {
		where += fmt.Sprintf("function %d, ", r.fn)
	}
	r.err = fmt.Errorf("%w: %sbyte %d: %s", ErrMalformed, where, r.base+r.pos, fmt.Sprintf(format, args...))
}

func (r *reader) byte() byte {
	if r.err != nil {
		return 0
	}
	if r.pos >= len(r.b) {
		r.fail("unexpected end")
		return 0
	}
	c := r.b[r.pos]
	r.pos++
	return c
}

// unread steps back over the byte just read, so an error about it points
// at it.
func (r *reader) unread() {
	if r.err == nil && r.pos > 0 {
		r.pos--
	}
}

func (r *reader) bytes(n int) []byte {
	if r.err != nil {
		return nil
	}
	if n < 0 || n > len(r.b)-r.pos {
		r.fail("%d bytes needed, %d left", n, len(r.b)-r.pos)
		return nil
	}
	b := r.b[r.pos : r.pos+n]
	r.pos += n
	return b
}

// u32 reads an unsigned LEB128 of at most 5 bytes.
func (r *reader) u32() uint32 {
	if r.err == nil && r.pos < len(r.b) && r.b[r.pos] < 0x80 { // one-byte fast path
		r.pos++
		return uint32(r.b[r.pos-1])
	}
	start := r.pos
	var v uint64
	for i := range 5 {
		c := r.byte()
		if r.err != nil {
			return 0
		}
		v |= uint64(c&0x7f) << (7 * i)
		if c&0x80 == 0 {
			if v > 0xffffffff {
				r.pos = start
				r.fail("u32 LEB128 out of range")
				return 0
			}
			return uint32(v)
		}
	}
	r.pos = start
	r.fail("u32 LEB128 longer than 5 bytes")
	return 0
}

// count reads the length of a vector whose elements take at least one
// byte each. A count larger than the bytes left is an error at once: a
// loop over a bogus count of four billion would otherwise spin for
// seconds on reads that fail.
func (r *reader) count() uint32 {
	start := r.pos
	n := r.u32()
	if r.err == nil && int64(n) > int64(len(r.b)-r.pos) {
		r.pos = start
		r.fail("vector of %d elements in %d bytes", n, len(r.b)-r.pos)
		return 0
	}
	return n
}

// leb skips a LEB128 of at most 10 bytes: an i32, i64, s33 or u64 whose
// value never matters here. An out-of-range one is left to the validator.
func (r *reader) leb() {
	start := r.pos
	for range 10 {
		if r.byte()&0x80 == 0 || r.err != nil {
			return
		}
	}
	r.pos = start
	r.fail("LEB128 longer than 10 bytes")
}

func isValtype(c byte) bool {
	return c >= 0x7b && c <= 0x7f || c == 0x70 || c == 0x6f
}

func (r *reader) valtype() byte {
	switch c := r.byte(); {
	case isValtype(c):
		return c
	case c == 0x63 || c == 0x64: // (ref null? heaptype)
		r.heaptype()
		return c
	default:
		r.unread()
		r.fail("unknown value type %#x", c)
		return 0
	}
}

// heaptype skips a heap type: an abstract one is a single negative s33
// byte, a concrete one a type index; both read as an s33.
func (r *reader) heaptype() { r.leb() }

// blocktype skips a block type: 0x40, a value type, or a type index as an
// s33 (multi-value).
func (r *reader) blocktype() {
	if r.err != nil {
		return
	}
	if r.pos >= len(r.b) {
		r.fail("unexpected end in block type")
		return
	}
	switch c := r.b[r.pos]; {
	case c == 0x40, isValtype(c):
		r.pos++
	case c == 0x63 || c == 0x64:
		r.pos++
		r.heaptype()
	default:
		r.leb()
	}
}

// memarg skips a memory argument. Bit 6 of the alignment says a memory
// index follows (multi-memory); the offset is a u64 under memory64.
func (r *reader) memarg() {
	if align := r.u32(); align&0x40 != 0 {
		r.u32()
	}
	r.leb()
}

// limits skips table or memory limits; the flags say whether a maximum
// follows, and memory64 limits are u64.
func (r *reader) limits() {
	flags := r.byte()
	if flags > 0x07 {
		r.unread()
		r.fail("unknown limits flags %#x", flags)
		return
	}
	r.leb()
	if flags&0x01 != 0 {
		r.leb()
	}
}
