package loopguard

import (
	"encoding/binary"

	"github.com/toolhost/toolhost/host/internal/wasmbin"
)

// rewriteCode appends the code section's new body to out: the flag check
// is inserted after every loop header of every function body, and body
// sizes are re-encoded. Bodies are built in one reused scratch buffer,
// because fresh multi-megabyte allocations cost more in page faults than
// the walk itself.
func rewriteCode(out []byte, s wasmbin.Section, m moduleInfo) ([]byte, error) {
	check := guard(m.flag, m.yield)
	r := s.Reader()
	n := r.Count()
	out = binary.AppendUvarint(out, uint64(n))
	var scratch []byte
	for i := range n {
		r.Func = int64(m.importedFuncs) + int64(i)
		size := r.U32()
		start := r.Pos()
		body := r.Bytes(int(size))
		if err := r.Err(); err != nil {
			return nil, err
		}
		var err error
		if scratch, err = rewriteBody(scratch[:0], body, s.Offset+start, r.Func, check); err != nil {
			return nil, err
		}
		out = binary.AppendUvarint(out, uint64(len(scratch)))
		out = append(out, scratch...)
	}
	r.Func = -1
	if r.Err() == nil && !r.Done() {
		r.Fail("%d trailing bytes after %d function bodies", r.Remaining(), n)
	}
	return out, r.Err()
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
	r := wasmbin.NewReader(body, base, secCode)
	r.Func = fn
	for n := r.Count(); n > 0 && r.Err() == nil; n-- { // local declarations
		r.U32()
		r.ValType()
	}
	copied := 0
	for !r.Done() {
		op := r.Byte()
		if op == 0x03 { // loop
			r.BlockType()
			out = append(out, body[copied:r.Pos()]...)
			out = append(out, check...)
			copied = r.Pos()
			continue
		}
		immediates(r, op)
	}
	if err := r.Err(); err != nil {
		return nil, err
	}
	return append(out, body[copied:]...), nil
}

// immediates skips the immediates of the instruction op, so the walk never
// mistakes an immediate byte for an opcode: a byte search for 0x03 would
// hit constants, offsets and indices. The cases are constants so the
// compiler emits a jump table: this runs once per instruction of a 3 MB
// module.
func immediates(r *wasmbin.Reader, op byte) {
	if op >= 0x45 && op <= 0xc4 { // numeric and sign-extension instructions
		return
	}
	switch op {
	case 0x00, 0x01, 0x05, 0x0a, 0x0b, 0x0f, 0x19, 0x1a, 0x1b, 0xd1, 0xd3, 0xd4:
		// unreachable, nop, else, throw_ref, end, return, catch_all, drop,
		// select, ref.is_null, ref.eq, ref.as_non_null: no immediates
	case 0x02, 0x04, 0x06: // block, if, try
		r.BlockType()
	case 0x1f: // try_table
		r.BlockType()
		catches(r)
	case 0x07, 0x08, 0x09, 0x18, 0x0c, 0x0d, 0xd5, 0xd6, 0x10, 0x12, 0x14, 0x15,
		0x20, 0x21, 0x22, 0x23, 0x24, 0x25, 0x26, 0xd2, 0x3f, 0x40:
		// catch, throw, rethrow, delegate, br, br_if, br_on_null,
		// br_on_non_null, call, return_call, call_ref, return_call_ref,
		// local.*, global.*, table.get/set, ref.func, memory.size/grow:
		// one index
		r.U32()
	case 0x0e: // br_table: label vector, then the default label
		for n := r.Count(); n > 0 && r.Err() == nil; n-- {
			r.U32()
		}
		r.U32()
	case 0x11, 0x13: // call_indirect, return_call_indirect: type, table
		r.U32()
		r.U32()
	case 0x1c: // select with types
		for n := r.Count(); n > 0 && r.Err() == nil; n-- {
			r.ValType()
		}
	case 0x28, 0x29, 0x2a, 0x2b, 0x2c, 0x2d, 0x2e, 0x2f, 0x30, 0x31, 0x32, 0x33, 0x34, 0x35,
		0x36, 0x37, 0x38, 0x39, 0x3a, 0x3b, 0x3c, 0x3d, 0x3e: // loads and stores
		r.MemArg()
	case 0x41, 0x42: // i32.const, i64.const
		r.SkipLEB()
	case 0x43: // f32.const
		r.Bytes(4)
	case 0x44: // f64.const
		r.Bytes(8)
	case 0xd0: // ref.null
		r.HeapType()
	case 0xfc:
		prefixFC(r)
	case 0xfd:
		prefixFD(r)
	case 0xfe:
		prefixFE(r)
	default:
		r.Unread()
		r.Fail("unknown opcode %#x", op)
	}
}

// catches skips try_table's catch clauses: catch and catch_ref name a tag
// and a label, catch_all and catch_all_ref only a label.
func catches(r *wasmbin.Reader) {
	for n := r.Count(); n > 0 && r.Err() == nil; n-- {
		switch kind := r.Byte(); kind {
		case 0x00, 0x01:
			r.U32()
			r.U32()
		case 0x02, 0x03:
			r.U32()
		default:
			r.Unread()
			r.Fail("unknown catch kind %#x", kind)
		}
	}
}

// prefixFC skips the immediates of the 0xfc instructions: saturating
// truncation, bulk memory and table instructions.
func prefixFC(r *wasmbin.Reader) {
	start := r.Pos()
	switch sub := r.U32(); {
	case sub <= 7: // i32/i64.trunc_sat_*: none
	case sub == 8, sub == 10, sub == 12, sub == 14:
		// memory.init data mem, memory.copy mem mem, table.init elem
		// table, table.copy table table
		r.U32()
		r.U32()
	case sub == 9, sub == 11, sub == 13, sub >= 15 && sub <= 17:
		// data.drop, memory.fill, elem.drop, table.grow/size/fill: one
		// index
		r.U32()
	default:
		r.FailAt(start, "unknown 0xfc opcode %d", sub)
	}
}

// prefixFD skips the immediates of the SIMD instructions, relaxed SIMD
// included; the other SIMD opcodes have none.
func prefixFD(r *wasmbin.Reader) {
	start := r.Pos()
	switch sub := r.U32(); {
	case sub <= 11, sub == 92, sub == 93: // v128 loads and stores
		r.MemArg()
	case sub == 12, sub == 13: // v128.const, i8x16.shuffle
		r.Bytes(16)
	case sub >= 21 && sub <= 34: // extract_lane and replace_lane
		r.Byte()
	case sub >= 84 && sub <= 91: // load_lane and store_lane
		r.MemArg()
		r.Byte()
	case sub > 0x113:
		r.FailAt(start, "unknown 0xfd opcode %d", sub)
	}
}

// prefixFE skips the immediates of the threads proposal's atomics.
func prefixFE(r *wasmbin.Reader) {
	start := r.Pos()
	switch sub := r.U32(); {
	case sub == 3: // atomic.fence
		r.Byte()
	case sub <= 2, sub >= 0x10 && sub <= 0x4e:
		r.MemArg()
	default:
		r.FailAt(start, "unknown 0xfe opcode %d", sub)
	}
}
