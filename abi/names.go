package abi

// Version is the ABI version string carried in every manifest.
const Version = "toolhost/v1"

// Exports a plugin module must provide.
const (
	// ExportVersionMarker is never called; its presence tells the host the
	// module speaks toolhost/v1, the way Proxy-Wasm marks its ABI version.
	ExportVersionMarker = "toolhost_abi_v1"
	// ExportAlloc is alloc(size u32) -> ptr u32: a guest buffer of at least
	// size bytes, valid until the next call of any toolhost export.
	ExportAlloc = "toolhost_alloc"
	// ExportDescribe is describe() -> packed u64: the manifest JSON.
	ExportDescribe = "toolhost_describe"
	// ExportSummary is summary(ptr, len u32) -> packed u64: given the
	// arguments JSON, a result envelope whose content is the approval text.
	// It must be pure: every host function fails during it.
	ExportSummary = "toolhost_summary"
	// ExportCall is call(ptr, len u32) -> packed u64: given a request
	// envelope, a result envelope.
	ExportCall = "toolhost_call"
	// StartFunction initialises a WASI reactor before any export is called.
	StartFunction = "_initialize"
)

// ManifestSection is the name of an optional custom section holding the
// manifest JSON, so the host can list tools without compiling the module.
const ManifestSection = "toolhost.manifest"

// HostModule is the import module name of every toolhost host function.
const HostModule = "toolhost_v1"

// Host functions. Each returns i64: a value >= 0 is the length of a staged
// response that the guest copies out with FnResponseTake; a negative value
// -(status<<32 | n) is a failure whose staged response is an n-byte
// HostError JSON object.
const (
	FnResponseTake = "response_take" // (ptr, len u32) -> i64
	FnEventEmit    = "event_emit"    // (kind, ptr, len u32) -> i64
	FnFSStat       = "fs_stat"       // (path_ptr, path_len u32) -> i64
	FnFSLstat      = "fs_lstat"      // (path_ptr, path_len u32) -> i64
	FnFSRead       = "fs_read"       // (path_ptr, path_len u32, offset, limit i64, flags u32) -> i64
	FnFSReadLines  = "fs_read_lines" // (path_ptr, path_len u32, start, end u32, flags u32) -> i64
	FnFSList       = "fs_list"       // (path_ptr, path_len u32, depth, max_entries, flags u32) -> i64
	FnFSWrite      = "fs_write"      // (path_ptr, path_len, data_ptr, data_len u32, flags u32) -> i64
	FnFSDiff       = "fs_diff"       // (path_ptr, path_len, data_ptr, data_len u32) -> i64
	FnFSCommit     = "fs_commit"     // (req_ptr, req_len u32, flags u32) -> i64
	FnProcRun      = "proc_run"      // (cmd_ptr, cmd_len, cwd_ptr, cwd_len u32, flags u32) -> i64
	FnFSSearch     = "fs_search"     // (req_ptr, req_len u32, flags u32) -> i64
	FnProcExec     = "proc_exec"     // (req_ptr, req_len u32, flags u32) -> i64
	FnProcJob      = "proc_job"      // (req_ptr, req_len u32, flags u32) -> i64
)

// Capability names a family of host functions a manifest may ask for.
type Capability string

// The capabilities of toolhost/v1.
const (
	CapFSRead   Capability = "fs.read"
	CapFSWrite  Capability = "fs.write"
	CapFSList   Capability = "fs.list"
	CapProcExec Capability = "proc.exec"
	// CapFSDelete lets fs_commit remove and move files and directories
	// (abi.CommitDelete, abi.CommitMove), so that a tool that only edits
	// cannot delete.
	CapFSDelete Capability = "fs.delete"
	// CapFSSearch lets a plugin have the host walk a tree and match
	// file contents natively (fs_search: SearchRequest, SearchResult),
	// under the same rules as every read: the call's read scope, the
	// denied paths, the limits.
	CapFSSearch Capability = "fs.search"
	// CapProcJobs lets a plugin read, signal and list the background
	// jobs and kept outputs of its call's conversation (proc_job:
	// JobRequest, JobResult). It starts nothing: proc.exec does.
	CapProcJobs Capability = "proc.jobs"
)

// CapabilityFunctions maps each capability to the host functions it grants.
// FnResponseTake and FnEventEmit need no capability.
func CapabilityFunctions() map[Capability][]string {
	return map[Capability][]string{
		CapFSRead:   {FnFSStat, FnFSLstat, FnFSRead, FnFSReadLines, FnFSDiff},
		CapFSWrite:  {FnFSStat, FnFSWrite, FnFSDiff, FnFSCommit},
		CapFSList:   {FnFSStat, FnFSLstat, FnFSList},
		CapProcExec: {FnProcRun, FnProcExec},
		CapFSDelete: {FnFSStat, FnFSCommit},
		CapFSSearch: {FnFSStat, FnFSLstat, FnFSSearch},
		CapProcJobs: {FnProcJob},
	}
}

// UngatedFunctions are linked for every plugin.
func UngatedFunctions() []string { return []string{FnResponseTake, FnEventEmit} }

// Flags for FnFSRead and FnFSReadLines.
const (
	// ReadRecord asks the host to record the read (path, SHA-256 of the
	// whole file, time) in the conversation's read cache.
	ReadRecord uint32 = 1 << iota
	// ReadBase64 asks for the data base64-encoded (standard alphabet).
	ReadBase64
	// ReadForUpdate reads a file the caller will rewrite: the whole file
	// (offset and limit are ignored), at most the call's scan limit, and
	// only if this conversation read it and it has not changed since
	// (StatusStale otherwise). A missing file is StatusNotFound.
	ReadForUpdate
)

// Flags for FnFSList.
const (
	ListHidden uint32 = 1 << iota // include names starting with "."
)

// Flags for FnFSWrite.
const (
	WriteCreateDirs uint32 = 1 << iota // create missing parent directories
)

// Flags for FnFSCommit.
const (
	// CommitDryRun checks everything a commit would and returns unified
	// diffs of the changes instead of writing.
	CommitDryRun uint32 = 1 << iota
)

// Event kinds for FnEventEmit.
const (
	EventStdout uint32 = 1
	EventStderr uint32 = 2
)

// Pack joins a guest pointer and length into the u64 returned by
// describe, summary and call.
func Pack(ptr, n uint32) uint64 { return uint64(ptr)<<32 | uint64(n) }

// Unpack splits a packed u64 into pointer and length.
func Unpack(v uint64) (ptr, n uint32) { return uint32(v >> 32), uint32(v) }
