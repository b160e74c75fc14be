//go:build wasip1

package sdk

import "unsafe"

// Raw host imports. The Go linker keeps only those a plugin reaches, so a
// plugin's import section lists exactly the host functions it uses.

//go:wasmimport toolhost_v1 response_take
func hostResponseTake(ptr unsafe.Pointer, n uint32) int64

//go:wasmimport toolhost_v1 event_emit
func hostEventEmit(kind uint32, ptr unsafe.Pointer, n uint32) int64

//go:wasmimport toolhost_v1 fs_stat
func hostFSStat(path unsafe.Pointer, pathLen uint32) int64

//go:wasmimport toolhost_v1 fs_lstat
func hostFSLstat(path unsafe.Pointer, pathLen uint32) int64

//go:wasmimport toolhost_v1 fs_read
func hostFSRead(path unsafe.Pointer, pathLen uint32, offset, limit int64, flags uint32) int64

//go:wasmimport toolhost_v1 fs_read_lines
func hostFSReadLines(path unsafe.Pointer, pathLen uint32, start, end, flags uint32) int64

//go:wasmimport toolhost_v1 fs_list
func hostFSList(path unsafe.Pointer, pathLen uint32, depth, maxEntries, flags uint32) int64

//go:wasmimport toolhost_v1 fs_write
func hostFSWrite(path unsafe.Pointer, pathLen uint32, data unsafe.Pointer, dataLen uint32, flags uint32) int64

//go:wasmimport toolhost_v1 fs_diff
func hostFSDiff(path unsafe.Pointer, pathLen uint32, data unsafe.Pointer, dataLen uint32) int64

//go:wasmimport toolhost_v1 fs_commit
func hostFSCommit(req unsafe.Pointer, reqLen uint32, flags uint32) int64

//go:wasmimport toolhost_v1 fs_search
func hostFSSearch(req unsafe.Pointer, reqLen uint32, flags uint32) int64

//go:wasmimport toolhost_v1 proc_exec
func hostProcExec(req unsafe.Pointer, reqLen uint32, flags uint32) int64

//go:wasmimport toolhost_v1 proc_job
func hostProcJob(req unsafe.Pointer, reqLen uint32, flags uint32) int64

//go:wasmimport toolhost_v1 proc_run
func hostProcRun(cmd unsafe.Pointer, cmdLen uint32, cwd unsafe.Pointer, cwdLen uint32, flags uint32) int64

func strPtr(s string) unsafe.Pointer { return unsafe.Pointer(unsafe.StringData(s)) }

func bytesPtr(b []byte) unsafe.Pointer { return unsafe.Pointer(unsafe.SliceData(b)) }

func takeResponse(n uint32) []byte {
	buf := make([]byte, n)
	if n > 0 {
		hostResponseTake(bytesPtr(buf), n)
	}
	return buf
}

func fsStat(path string) int64 { return hostFSStat(strPtr(path), uint32(len(path))) }

func fsLstat(path string) int64 { return hostFSLstat(strPtr(path), uint32(len(path))) }

func fsRead(path string, offset, limit int64, flags uint32) int64 {
	return hostFSRead(strPtr(path), uint32(len(path)), offset, limit, flags)
}

func fsReadLines(path string, start, end, flags uint32) int64 {
	return hostFSReadLines(strPtr(path), uint32(len(path)), start, end, flags)
}

func fsList(path string, depth, maxEntries, flags uint32) int64 {
	return hostFSList(strPtr(path), uint32(len(path)), depth, maxEntries, flags)
}

func fsWrite(path string, data []byte, flags uint32) int64 {
	return hostFSWrite(strPtr(path), uint32(len(path)), bytesPtr(data), uint32(len(data)), flags)
}

func fsDiff(path string, data []byte) int64 {
	return hostFSDiff(strPtr(path), uint32(len(path)), bytesPtr(data), uint32(len(data)))
}

func eventEmit(kind uint32, data []byte) int64 {
	return hostEventEmit(kind, bytesPtr(data), uint32(len(data)))
}

func fsCommit(req []byte, flags uint32) int64 {
	return hostFSCommit(bytesPtr(req), uint32(len(req)), flags)
}

func procRun(command, cwd string) int64 {
	return hostProcRun(strPtr(command), uint32(len(command)), strPtr(cwd), uint32(len(cwd)), 0)
}

func fsSearch(req []byte, flags uint32) int64 {
	return hostFSSearch(bytesPtr(req), uint32(len(req)), flags)
}

func procExec(req []byte, flags uint32) int64 {
	return hostProcExec(bytesPtr(req), uint32(len(req)), flags)
}

func procJob(req []byte, flags uint32) int64 {
	return hostProcJob(bytesPtr(req), uint32(len(req)), flags)
}
