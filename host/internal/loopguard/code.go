package loopguard

import "encoding/binary"

// rewriteCode appends the code section's new body to out: the flag check
// is inserted after every loop header of every function body, and body
// sizes are re-encoded. Bodies are built in one reused scratch buffer,
// because fresh multi-megabyte allocations cost more in page faults than
// the walk itself.
func rewriteCode(out []byte, s section, m moduleInfo) ([]byte, error) {
	check := guard(m.flag, m.yield)
	r := s.reader()
	n := r.count()
	out = binary.AppendUvarint(out, uint64(n))
	var scratch []byte
	for i := range n {
		r.fn = int64(m.importedFuncs) + int64(i)
		size := r.u32()
		start := r.pos
		body := r.bytes(int(size))
		if r.err != nil {
			return nil, r.err
		}
		var err error
		if scratch, err = rewriteBody(scratch[:0], body, s.off+start, r.fn, check); err != nil {
			return nil, err
		}
		out = binary.AppendUvarint(out, uint64(len(scratch)))
		out = append(out, scratch...)
	}
	r.fn = -1
	if r.err == nil && !r.done() {
		r.fail("%d trailing bytes after %d function bodies", len(r.b)-r.pos, n)
	}
	return out, r.err
}

// guard is the code inserted after every loop header:
//
//	global.get $flag  if  unreachable  end
//	global.get $count  i32.const -1  i32.add  global.set $count
//	global.get $count  i32.eqz
//	if  i32.const yieldEvery  global.set $count  call $sched_yield  drop  end
//
// The flag check comes first so a set flag traps before anything else
// happens; the countdown is shared by all loops, since what matters is how
// long the guest runs without returning to Go, not in which loop.
func guard(flag, yield uint32) []byte {
	count := uint64(flag) + 1
	b := binary.AppendUvarint([]byte{0x23}, uint64(flag))
	b = append(b, 0x04, 0x40, 0x00, 0x0b)
	b = binary.AppendUvarint(append(b, 0x23), count)
	b = append(b, 0x41, 0x7f, 0x6a, 0x24)
	b = binary.AppendUvarint(b, count)
	b = binary.AppendUvarint(append(b, 0x23), count)
	b = append(b, 0x45, 0x04, 0x40, 0x41)
	b = appendI32(b, yieldEvery)
	b = binary.AppendUvarint(append(b, 0x24), count)
	b = binary.AppendUvarint(append(b, 0x10), uint64(yield))
	return append(b, 0x1a, 0x0b)
}

// rewriteBody appends body, the function fn at offset base of the module,
// to out with check inserted after every loop's block type. Whether the
// body ends with end, or its blocks nest properly, is left to the
// validator: only the walk itself must not desync.
func rewriteBody(out, body []byte, base int, fn int64, check []byte) ([]byte, error) {
	r := newReader(body, base, secCode)
	r.fn = fn
	for n := r.count(); n > 0 && r.err == nil; n-- { // local declarations
		r.u32()
		r.valtype()
	}
	copied := 0
	for !r.done() {
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
// mistakes an immediate byte for an opcode: a byte search for 0x03 would
// hit constants, offsets and indices. The cases are constants so the
// compiler emits a jump table: this runs once per instruction of a 3 MB
// module.
func (r *reader) immediates(op byte) {
	if op >= 0x45 && op <= 0xc4 { // numeric and sign-extension instructions
		return
	}
	switch op {
	case 0x00, 0x01, 0x05, 0x0a, 0x0b, 0x0f, 0x19, 0x1a, 0x1b, 0xd1, 0xd3, 0xd4:
		// unreachable, nop, else, throw_ref, end, return, catch_all, drop,
		// select, ref.is_null, ref.eq, ref.as_non_null: no immediates
	case 0x02, 0x04, 0x06: // block, if, try
		r.blocktype()
	case 0x1f: // try_table
		r.blocktype()
		r.catches()
	case 0x07, 0x08, 0x09, 0x18, 0x0c, 0x0d, 0xd5, 0xd6, 0x10, 0x12, 0x14, 0x15,
		0x20, 0x21, 0x22, 0x23, 0x24, 0x25, 0x26, 0xd2, 0x3f, 0x40:
		// catch, throw, rethrow, delegate, br, br_if, br_on_null,
		// br_on_non_null, call, return_call, call_ref, return_call_ref,
		// local.*, global.*, table.get/set, ref.func, memory.size/grow:
		// one index
		r.u32()
	case 0x0e: // br_table: label vector, then the default label
		for n := r.count(); n > 0 && r.err == nil; n-- {
			r.u32()
		}
		r.u32()
	case 0x11, 0x13: // call_indirect, return_call_indirect: type, table
		r.u32()
		r.u32()
	case 0x1c: // select with types
		for n := r.count(); n > 0 && r.err == nil; n-- {
			r.valtype()
		}
	case 0x28, 0x29, 0x2a, 0x2b, 0x2c, 0x2d, 0x2e, 0x2f, 0x30, 0x31, 0x32, 0x33, 0x34, 0x35,
		0x36, 0x37, 0x38, 0x39, 0x3a, 0x3b, 0x3c, 0x3d, 0x3e: // loads and stores
		r.memarg()
	case 0x41, 0x42: // i32.const, i64.const
		r.leb()
	case 0x43: // f32.const
		r.bytes(4)
	case 0x44: // f64.const
		r.bytes(8)
	case 0xd0: // ref.null
		r.heaptype()
	case 0xfc:
		r.prefixFC()
	case 0xfd:
		r.prefixFD()
	case 0xfe:
		r.prefixFE()
	default:
		r.unread()
		r.fail("unknown opcode %#x", op)
	}
}

// catches skips try_table's catch clauses: catch and catch_ref name a tag
// and a label, catch_all and catch_all_ref only a label.
func (r *reader) catches() {
	for n := r.count(); n > 0 && r.err == nil; n-- {
		switch kind := r.byte(); kind {
		case 0x00, 0x01:
			r.u32()
			r.u32()
		case 0x02, 0x03:
			r.u32()
		default:
			r.unread()
			r.fail("unknown catch kind %#x", kind)
		}
	}
}

// prefixFC skips the immediates of the 0xfc instructions: saturating
// truncation, bulk memory and table instructions.
func (r *reader) prefixFC() {
	start := r.pos
	switch sub := r.u32(); {
	case sub <= 7: // i32/i64.trunc_sat_*: none
	case sub == 8, sub == 10, sub == 12, sub == 14:
		// memory.init data mem, memory.copy mem mem, table.init elem
		// table, table.copy table table
		r.u32()
		r.u32()
	case sub == 9, sub == 11, sub == 13, sub >= 15 && sub <= 17:
		// data.drop, memory.fill, elem.drop, table.grow/size/fill: one
		// index
		r.u32()
	default:
		if r.err == nil {
			r.pos = start
			r.fail("unknown 0xfc opcode %d", sub)
		}
	}
}

// prefixFD skips the immediates of the SIMD instructions, relaxed SIMD
// included; the other SIMD opcodes have none.
func (r *reader) prefixFD() {
	start := r.pos
	switch sub := r.u32(); {
	case sub <= 11, sub == 92, sub == 93: // v128 loads and stores
		r.memarg()
	case sub == 12, sub == 13: // v128.const, i8x16.shuffle
		r.bytes(16)
	case sub >= 21 && sub <= 34: // extract_lane and replace_lane
		r.byte()
	case sub >= 84 && sub <= 91: // load_lane and store_lane
		r.memarg()
		r.byte()
	case sub > 0x113:
		if r.err == nil {
			r.pos = start
			r.fail("unknown 0xfd opcode %d", sub)
		}
	}
}

// prefixFE skips the immediates of the threads proposal's atomics.
func (r *reader) prefixFE() {
	start := r.pos
	switch sub := r.u32(); {
	case sub == 3: // atomic.fence
		r.byte()
	case sub <= 2, sub >= 0x10 && sub <= 0x4e:
		r.memarg()
	default:
		if r.err == nil {
			r.pos = start
			r.fail("unknown 0xfe opcode %d", sub)
		}
	}
}
