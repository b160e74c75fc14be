package loopguard

import "fmt"

// reader decodes the wasm binary encoding. The first error sticks; later
// reads return zero values, so callers check err once per unit of work.
type reader struct {
	b    []byte
	pos  int
	base int // offset of b in the module, for error messages
	err  error
}

func (r *reader) done() bool { return r.err != nil || r.pos >= len(r.b) }

func (r *reader) fail(format string, args ...any) {
	if r.err == nil {
		r.err = malformed(r.base+r.pos, "%s", fmt.Sprintf(format, args...))
	}
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
	var v uint64
	for i := 0; i < 5; i++ {
		c := r.byte()
		if r.err != nil {
			return 0
		}
		v |= uint64(c&0x7f) << (7 * i)
		if c&0x80 == 0 {
			if v > 0xffffffff {
				r.fail("u32 out of range")
				return 0
			}
			return uint32(v)
		}
	}
	r.fail("u32 LEB128 longer than 5 bytes")
	return 0
}

// sleb skips a signed LEB128 of at most 10 bytes (i32, i64 or s33).
func (r *reader) sleb() {
	for i := 0; i < 10; i++ {
		if r.byte()&0x80 == 0 || r.err != nil {
			return
		}
	}
	r.fail("signed LEB128 longer than 10 bytes")
}

func (r *reader) name() string { return string(r.bytes(int(r.u32()))) }

func isValtype(c byte) bool {
	return c >= 0x7b && c <= 0x7f || c == 0x70 || c == 0x6f
}

func (r *reader) valtype() {
	switch c := r.byte(); {
	case isValtype(c):
	case c == 0x63 || c == 0x64: // (ref null? heaptype)
		r.heaptype()
	default:
		r.fail("unknown value type %#x", c)
	}
}

func (r *reader) heaptype() {
	if r.pos < len(r.b) && r.b[r.pos] >= 0x69 && r.b[r.pos] <= 0x74 {
		r.pos++ // abstract heap type
		return
	}
	r.sleb()
}

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
		r.sleb() // type index as s33
	}
}

func (r *reader) memarg() {
	if align := r.u32(); align&0x40 != 0 {
		r.u32() // memory index (multi-memory)
	}
	r.u32() // offset (u64 for memory64: 5 bytes suffice for wasm32)
}
