package loopguard

import (
	"encoding/binary"
	"fmt"
)

// rewriteCode appends the code section's new body to out: the flag check
// is inserted after every loop header of every function body, and body
// sizes are re-encoded. Bodies are built in one reused scratch buffer,
// because fresh multi-megabyte allocations cost more in page faults than
// the walk itself.
func rewriteCode(out []byte, s section, flag, yield uint32) ([]byte, error) {
	check := guard(flag, yield)
	r := &reader{b: s.body, base: s.at}
	n := r.u32()
	out = binary.AppendUvarint(out, uint64(n))
	var scratch []byte
	for i := range n {
		size := r.u32()
		start := r.pos
		body := r.bytes(int(size))
		if r.err != nil {
			return nil, r.err
		}
		var err error
		scratch, err = rewriteBody(scratch[:0], body, s.at+start, check)
		if err != nil {
			return nil, fmt.Errorf("function body %d: %w", i, err)
		}
		out = binary.AppendUvarint(out, uint64(len(scratch)))
		out = append(out, scratch...)
	}
	if !r.done() {
		return nil, malformed(s.at+r.pos, "%d trailing bytes in code section", len(r.b)-r.pos)
	}
	return out, nil
}

// guard is the code inserted after every loop header:
//
//	global.get $flag  if  unreachable  end
//	global.get $count  i32.const -1  i32.add  global.set $count
//	global.get $count  i32.eqz
//	if  i32.const yieldEvery  global.set $count  call $sched_yield  drop  end
func guard(flag, yield uint32) []byte {
	count := uint64(flag) + 1
	b := binary.AppendUvarint([]byte{0x23}, uint64(flag))
	b = append(b, 0x04, 0x40, 0x00, 0x0b)
	b = binary.AppendUvarint(append(b, 0x23), count)
	b = append(b, 0x41, 0x7f, 0x6a, 0x24)
	b = binary.AppendUvarint(b, count)
	b = binary.AppendUvarint(append(b, 0x23), count)
	b = append(b, 0x45, 0x04, 0x40, 0x41)
	b = binary.AppendVarint(b, yieldEvery)
	b = binary.AppendUvarint(append(b, 0x24), count)
	b = binary.AppendUvarint(append(b, 0x10), uint64(yield))
	return append(b, 0x1a, 0x0b)
}

func rewriteBody(out, body []byte, base int, check []byte) ([]byte, error) {
	r := &reader{b: body, base: base}
	for range r.u32() { // local declarations
		r.u32()
		r.valtype()
	}
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
// mistakes an immediate byte for an opcode. The cases are constants so the
// compiler emits a jump table: this runs once per instruction of a 3 MB
// module.
func (r *reader) immediates(op byte) {
	if op >= 0x45 && op <= 0xc4 { // numeric instructions
		return
	}
	switch op {
	case 0x00, 0x01, 0x05, 0x0a, 0x0b, 0x0f, 0x19, 0x1a, 0x1b, 0xd1, 0xd3, 0xd5:
		// no immediates
	case 0x02, 0x04, 0x06: // block, if, try
		r.blocktype()
	case 0x1f: // try_table
		r.blocktype()
		for range r.u32() {
			if kind := r.byte(); kind <= 1 {
				r.u32()
			}
			r.u32()
		}
	case 0x07, 0x08, 0x09, 0x18, 0x0c, 0x0d, 0xd4, 0xd6, 0x10, 0x12, 0x14, 0x15,
		0x20, 0x21, 0x22, 0x23, 0x24, 0x25, 0x26, 0xd2, 0x3f, 0x40:
		r.u32() // one index: tag, label, function, type, local, global, table or memory
	case 0x0e: // br_table
		for range r.u32() {
			r.u32()
		}
		r.u32()
	case 0x11, 0x13: // call_indirect, return_call_indirect
		r.u32()
		r.u32()
	case 0x1c: // select with types
		for range r.u32() {
			r.valtype()
		}
	case 0x28, 0x29, 0x2a, 0x2b, 0x2c, 0x2d, 0x2e, 0x2f, 0x30, 0x31, 0x32, 0x33, 0x34, 0x35,
		0x36, 0x37, 0x38, 0x39, 0x3a, 0x3b, 0x3c, 0x3d, 0x3e:
		r.memarg()
	case 0x41, 0x42:
		r.sleb()
	case 0x43:
		r.bytes(4)
	case 0x44:
		r.bytes(8)
	case 0xd0:
		r.heaptype()
	case 0xfc:
		r.prefixFC()
	case 0xfd:
		r.prefixFD()
	case 0xfe:
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
