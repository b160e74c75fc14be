package loopguard

import (
	"encoding/binary"
	"fmt"
)

// rewriteCode inserts the flag check after every loop header of every
// function body, re-encoding the body sizes.
func rewriteCode(s section, flag uint32) ([]byte, error) {
	check := binary.AppendUvarint([]byte{0x23}, uint64(flag)) // global.get $flag
	check = append(check, 0x04, 0x40, 0x00, 0x0b)             // if; unreachable; end
	r := &reader{b: s.body, base: s.at}
	n := r.u32()
	out := binary.AppendUvarint(nil, uint64(n))
	for i := range n {
		size := r.u32()
		start := r.pos
		body := r.bytes(int(size))
		if r.err != nil {
			return nil, r.err
		}
		nb, err := rewriteBody(body, s.at+start, check)
		if err != nil {
			return nil, fmt.Errorf("function body %d: %w", i, err)
		}
		out = binary.AppendUvarint(out, uint64(len(nb)))
		out = append(out, nb...)
	}
	if !r.done() {
		return nil, malformed(s.at+r.pos, "%d trailing bytes in code section", len(r.b)-r.pos)
	}
	return out, nil
}

func rewriteBody(body []byte, base int, check []byte) ([]byte, error) {
	r := &reader{b: body, base: base}
	for range r.u32() { // local declarations
		r.u32()
		r.valtype()
	}
	out := make([]byte, 0, len(body)+64)
	copied := 0
	for !r.done() && r.err == nil {
		op := r.byte()
		if op == 0x03 { // loop
			r.blocktype()
			out = append(out, body[copied:r.pos]...)
			out = append(out, check...)
			copied = r.pos
			continue
		}
		r.immediates(op)
	}
	if r.err != nil {
		return nil, r.err
	}
	return append(out, body[copied:]...), nil
}

// immediates skips the immediates of the instruction op, so the walk never
// mistakes an immediate byte for an opcode.
func (r *reader) immediates(op byte) {
	switch {
	case op <= 0x01, op == 0x05, op == 0x0a, op == 0x0b, op == 0x0f, op == 0x19,
		op == 0x1a, op == 0x1b, op >= 0x45 && op <= 0xc4, op == 0xd1, op == 0xd3, op == 0xd5:
		// no immediates
	case op == 0x02, op == 0x04, op == 0x06: // block, if, try
		r.blocktype()
	case op == 0x1f: // try_table
		r.blocktype()
		for range r.u32() {
			if kind := r.byte(); kind <= 1 {
				r.u32()
			}
			r.u32()
		}
	case op == 0x07, op == 0x08, op == 0x09, op == 0x18, op == 0x0c, op == 0x0d, op == 0xd4, op == 0xd6,
		op == 0x10, op == 0x12, op == 0x14, op == 0x15, op >= 0x20 && op <= 0x26, op == 0xd2:
		r.u32() // one index: tag, label, function, type, local, global or table
	case op == 0x0e: // br_table
		for range r.u32() {
			r.u32()
		}
		r.u32()
	case op == 0x11, op == 0x13: // call_indirect, return_call_indirect
		r.u32()
		r.u32()
	case op == 0x1c: // select with types
		for range r.u32() {
			r.valtype()
		}
	case op >= 0x28 && op <= 0x3e:
		r.memarg()
	case op == 0x3f, op == 0x40:
		r.u32()
	case op == 0x41, op == 0x42:
		r.sleb()
	case op == 0x43:
		r.bytes(4)
	case op == 0x44:
		r.bytes(8)
	case op == 0xd0:
		r.heaptype()
	case op == 0xfc:
		r.prefixFC()
	case op == 0xfd:
		r.prefixFD()
	case op == 0xfe:
		r.prefixFE()
	default:
		r.fail("unsupported opcode %#x", op)
	}
}

func (r *reader) prefixFC() {
	switch sub := r.u32(); {
	case sub <= 7: // saturating truncation
	case sub == 8: // memory.init
		r.u32()
		r.u32()
	case sub == 9, sub == 11, sub == 13, sub >= 15 && sub <= 17:
		r.u32()
	case sub == 10, sub == 12, sub == 14:
		r.u32()
		r.u32()
	default:
		r.fail("unsupported 0xfc opcode %d", sub)
	}
}

func (r *reader) prefixFD() {
	switch sub := r.u32(); {
	case sub <= 11, sub == 92, sub == 93: // loads and stores
		r.memarg()
	case sub == 12, sub == 13: // v128.const, i8x16.shuffle
		r.bytes(16)
	case sub >= 21 && sub <= 34: // extract/replace lane
		r.byte()
	case sub >= 84 && sub <= 91: // load/store lane
		r.memarg()
		r.byte()
	}
}

func (r *reader) prefixFE() {
	switch sub := r.u32(); {
	case sub == 3: // atomic.fence
		r.byte()
	case sub <= 2, sub >= 0x10 && sub <= 0x4e:
		r.memarg()
	default:
		r.fail("unsupported 0xfe opcode %d", sub)
	}
}
