//go:build wasip1

package sdk

import (
	"unsafe"

	"github.com/toolhost/toolhost/abi"
)

// The guest's two buffers: in receives what the host writes through
// toolhost_alloc; out holds the last result until the next export call.
var in, out []byte

//go:wasmexport toolhost_abi_v1
func abiVersion() {}

//go:wasmexport toolhost_alloc
func alloc(size uint32) uint32 {
	if int(size) > cap(in) {
		in = make([]byte, size)
	}
	in = in[:size]
	if size == 0 {
		return 0
	}
	return uint32(uintptr(unsafe.Pointer(&in[0])))
}

//go:wasmexport toolhost_describe
func describe() uint64 {
	if registered == nil {
		return 0
	}
	return share(registered.manifest)
}

//go:wasmexport toolhost_summary
func summary(ptr, n uint32) uint64 {
	return share(abi.AppendResult(out[:0], registered.summary(input(ptr, n))))
}

//go:wasmexport toolhost_call
func call(ptr, n uint32) uint64 {
	out = abi.AppendResult(out[:0], registered.call(input(ptr, n)))
	return share(out)
}

// input returns the bytes the host wrote through toolhost_alloc. The ABI
// only allows ptr to be the pointer alloc returned, so anything else is
// treated as empty input rather than trusted as an address.
func input(ptr, n uint32) []byte {
	if n == 0 || int(n) > len(in) || ptr != uint32(uintptr(unsafe.Pointer(&in[0]))) {
		return nil
	}
	return in[:n]
}

func share(b []byte) uint64 {
	if len(b) == 0 {
		return 0
	}
	return abi.Pack(uint32(uintptr(unsafe.Pointer(&b[0]))), uint32(len(b)))
}
