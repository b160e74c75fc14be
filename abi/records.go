package abi

import (
	"encoding/binary"
	"fmt"
)

// FileType is the type of a filesystem entry as host functions report it.
type FileType uint8

// File types. Symlinks are reported, never followed, by listings.
const (
	TypeFile FileType = iota
	TypeDir
	TypeSymlink
	TypeOther
)

func (t FileType) String() string {
	switch t {
	case TypeFile:
		return "file"
	case TypeDir:
		return "dir"
	case TypeSymlink:
		return "symlink"
	}
	return "other"
}

// FileInfo is the response of FnFSStat, and the per-entry record of FnFSList.
//
// Layout: u8 type | u32 mode | u64 size | i64 mtime (Unix ns) | u32 len + path
type FileInfo struct {
	Type    FileType
	Mode    uint32 // permission bits
	Size    int64
	ModTime int64 // Unix nanoseconds
	Path    string
}

// Flags of a LinkInfo.
const (
	LinkOutside uint32 = 1 << iota // it leads outside the allowed roots: Target is empty
	LinkDenied                     // it leads to a denied path: Target is empty
)

// LinkInfo follows the FileInfo in the response of FnFSLstat: for a
// symbolic link, the target as the link stores it, when it leads to a
// path the sandbox allows; otherwise a flag says only why not. Empty
// (and no flags) for anything that is not a link.
//
// Layout: u32 flags | u32 len + target
type LinkInfo struct {
	Flags  uint32
	Target string
}

// AppendLinkInfo encodes li after dst.
func AppendLinkInfo(dst []byte, li LinkInfo) []byte {
	dst = binary.LittleEndian.AppendUint32(dst, li.Flags)
	return appendField(dst, []byte(li.Target))
}

// DecodeLinkInfo decodes one LinkInfo and returns the rest of b.
func DecodeLinkInfo(b []byte) (LinkInfo, []byte, error) {
	if len(b) < 4 {
		return LinkInfo{}, nil, fmt.Errorf("link info: %d bytes, want at least 4", len(b))
	}
	li := LinkInfo{Flags: binary.LittleEndian.Uint32(b)}
	target, rest, err := nextField(b[4:])
	if err != nil {
		return LinkInfo{}, nil, fmt.Errorf("link info target: %w", err)
	}
	li.Target = string(target)
	return li, rest, nil
}

// AppendFileInfo encodes fi after dst.
func AppendFileInfo(dst []byte, fi FileInfo) []byte {
	dst = append(dst, byte(fi.Type))
	dst = binary.LittleEndian.AppendUint32(dst, fi.Mode)
	dst = binary.LittleEndian.AppendUint64(dst, uint64(fi.Size))
	dst = binary.LittleEndian.AppendUint64(dst, uint64(fi.ModTime))
	return appendField(dst, []byte(fi.Path))
}

const fileInfoFixed = 1 + 4 + 8 + 8

// DecodeFileInfo decodes one FileInfo and returns the rest of b.
func DecodeFileInfo(b []byte) (FileInfo, []byte, error) {
	if len(b) < fileInfoFixed {
		return FileInfo{}, nil, fmt.Errorf("file info: %d bytes, want at least %d", len(b), fileInfoFixed)
	}
	fi := FileInfo{
		Type:    FileType(b[0]),
		Mode:    binary.LittleEndian.Uint32(b[1:]),
		Size:    int64(binary.LittleEndian.Uint64(b[5:])),
		ModTime: int64(binary.LittleEndian.Uint64(b[13:])),
	}
	path, rest, err := nextField(b[fileInfoFixed:])
	if err != nil {
		return FileInfo{}, nil, fmt.Errorf("file info path: %w", err)
	}
	fi.Path = string(path)
	return fi, rest, nil
}

// Flags of a ReadInfo.
const (
	ReadIsBinary uint32 = 1 << iota // NUL in the first 8 KiB, or the data is not valid UTF-8
	ReadEOF                         // the data reaches the end of the file
	ReadRecorded                    // the read was recorded in the read cache
)

// ReadInfo heads the response of FnFSRead and FnFSReadLines; the data
// follows it.
//
// Layout: u64 file size | i64 mtime | u32 flags | u32 lines | data
type ReadInfo struct {
	FileSize int64
	ModTime  int64
	Flags    uint32
	Lines    uint32 // lines in data, for FnFSReadLines
}

// ReadInfoSize is the encoded size of a ReadInfo.
const ReadInfoSize = 8 + 8 + 4 + 4

// AppendReadInfo encodes ri after dst; the caller appends the data.
func AppendReadInfo(dst []byte, ri ReadInfo) []byte {
	dst = binary.LittleEndian.AppendUint64(dst, uint64(ri.FileSize))
	dst = binary.LittleEndian.AppendUint64(dst, uint64(ri.ModTime))
	dst = binary.LittleEndian.AppendUint32(dst, ri.Flags)
	return binary.LittleEndian.AppendUint32(dst, ri.Lines)
}

// DecodeReadInfo splits a read response into its header and data.
func DecodeReadInfo(b []byte) (ReadInfo, []byte, error) {
	if len(b) < ReadInfoSize {
		return ReadInfo{}, nil, fmt.Errorf("read info: %d bytes, want at least %d", len(b), ReadInfoSize)
	}
	return ReadInfo{
		FileSize: int64(binary.LittleEndian.Uint64(b)),
		ModTime:  int64(binary.LittleEndian.Uint64(b[8:])),
		Flags:    binary.LittleEndian.Uint32(b[16:]),
		Lines:    binary.LittleEndian.Uint32(b[20:]),
	}, b[ReadInfoSize:], nil
}

// Flags of a listing.
const (
	ListTruncated uint32 = 1 << iota // more entries existed than max_entries
)

// Listing response of FnFSList: u32 flags | u32 count | count × FileInfo.
// Entry paths are relative to the working directory (the first root), with
// forward slashes, sorted.

// AppendListHeader encodes the listing header after dst.
func AppendListHeader(dst []byte, flags, count uint32) []byte {
	dst = binary.LittleEndian.AppendUint32(dst, flags)
	return binary.LittleEndian.AppendUint32(dst, count)
}

// DecodeListing decodes a listing response.
func DecodeListing(b []byte) (flags uint32, entries []FileInfo, err error) {
	if len(b) < 8 {
		return 0, nil, fmt.Errorf("listing: %d bytes, want at least 8", len(b))
	}
	flags, count := binary.LittleEndian.Uint32(b), binary.LittleEndian.Uint32(b[4:])
	rest := b[8:]
	if uint64(count) > uint64(len(rest)/fileInfoFixed) {
		return 0, nil, fmt.Errorf("listing: %d entries cannot fit in %d bytes", count, len(rest))
	}
	entries = make([]FileInfo, 0, count)
	for range count {
		var fi FileInfo
		if fi, rest, err = DecodeFileInfo(rest); err != nil {
			return 0, nil, err
		}
		entries = append(entries, fi)
	}
	return flags, entries, nil
}

// WriteInfo is the response of FnFSWrite.
//
// Layout: u32 flags (WriteCreated) | u64 bytes written | u32 len + path
type WriteInfo struct {
	Flags uint32
	Size  int64
	Path  string // display path of the written file
}

// Flags of a WriteInfo.
const (
	WriteCreated uint32 = 1 << iota // the file did not exist before
)

// AppendWriteInfo encodes wi after dst.
func AppendWriteInfo(dst []byte, wi WriteInfo) []byte {
	dst = binary.LittleEndian.AppendUint32(dst, wi.Flags)
	dst = binary.LittleEndian.AppendUint64(dst, uint64(wi.Size))
	return appendField(dst, []byte(wi.Path))
}

// DecodeWriteInfo decodes a WriteInfo.
func DecodeWriteInfo(b []byte) (WriteInfo, error) {
	if len(b) < 12 {
		return WriteInfo{}, fmt.Errorf("write info: %d bytes, want at least 12", len(b))
	}
	path, _, err := nextField(b[12:])
	if err != nil {
		return WriteInfo{}, fmt.Errorf("write info path: %w", err)
	}
	return WriteInfo{
		Flags: binary.LittleEndian.Uint32(b),
		Size:  int64(binary.LittleEndian.Uint64(b[4:])),
		Path:  string(path),
	}, nil
}

// CommitFile is one operation of an FnFSCommit request: by default a
// file's new content; with CommitDelete, CommitMkdir or CommitMove a
// removal, a directory or a move. Every operation of a request is made
// all or nothing.
type CommitFile struct {
	Flags uint32 // CommitNew, CommitCreateDirs, CommitDelete, ...
	Path  string
	// Data is the file's new content; for CommitMove the source path;
	// empty for CommitDelete and CommitMkdir.
	Data []byte
}

// Flags of a CommitFile.
const (
	// CommitNew says the caller found no file at Path: the commit creates
	// it and fails (StatusStale) if one has appeared since.
	CommitNew uint32 = 1 << iota
	// CommitCreateDirs creates missing parent directories of a new file.
	CommitCreateDirs
	// CommitDelete removes Path: a file, or a symbolic link itself (never
	// what it leads to); a directory only with CommitRecursive. It needs
	// the capability fs.delete, and no earlier read.
	CommitDelete
	// CommitRecursive lets CommitDelete remove a directory with
	// everything below it. The host refuses the whole removal when any
	// entry below is one no tool may write (git's internals, toolhost's
	// configuration, a denied pattern), naming it.
	CommitRecursive
	// CommitMkdir creates the directory Path and its missing parents; a
	// directory already there is success. It needs fs.write.
	CommitMkdir
	// CommitMove moves the file, symbolic link or directory at the path
	// Data holds to Path, creating Path's missing parent directories. It
	// needs fs.delete. An existing Path is refused unless CommitOverwrite.
	CommitMove
	// CommitOverwrite lets CommitMove replace an existing file at Path;
	// the file must have been read in this conversation and be unchanged,
	// as for any other replacement.
	CommitOverwrite
)

// CommitOps are the flags that make a CommitFile something other than a
// file's new content; at most one may be set.
const CommitOps = CommitDelete | CommitMkdir | CommitMove

// A commit request is u32 count | count × (u32 flags | u32 len + path |
// u32 len + data). A commit response is u32 count | count × WriteInfo, one
// per operation in request order (for a removal or a move: the bytes
// removed or moved, and the path removed or moved to; for a directory
// made: WriteCreated when it did not exist); a dry run responds with the
// diff text, and for a removal or a move the host's description of it.

// AppendCommitRequest encodes files after dst.
func AppendCommitRequest(dst []byte, files []CommitFile) []byte {
	dst = binary.LittleEndian.AppendUint32(dst, uint32(len(files)))
	for _, f := range files {
		dst = binary.LittleEndian.AppendUint32(dst, f.Flags)
		dst = appendField(dst, []byte(f.Path))
		dst = appendField(dst, f.Data)
	}
	return dst
}

// DecodeCommitRequest decodes a commit request. Data aliases b.
func DecodeCommitRequest(b []byte) ([]CommitFile, error) {
	if len(b) < 4 {
		return nil, fmt.Errorf("commit request: %d bytes, want at least 4", len(b))
	}
	count, rest := binary.LittleEndian.Uint32(b), b[4:]
	const minFile = 4 + 4 + 4
	if uint64(count) > uint64(len(rest)/minFile) {
		return nil, fmt.Errorf("commit request: %d files cannot fit in %d bytes", count, len(rest))
	}
	files := make([]CommitFile, count)
	for i := range files {
		if len(rest) < 4 {
			return nil, fmt.Errorf("commit request: file %d truncated", i)
		}
		files[i].Flags, rest = binary.LittleEndian.Uint32(rest), rest[4:]
		path, r, err := nextField(rest)
		if err != nil {
			return nil, fmt.Errorf("commit request: file %d path: %w", i, err)
		}
		data, r, err := nextField(r)
		if err != nil {
			return nil, fmt.Errorf("commit request: file %d data: %w", i, err)
		}
		files[i].Path, files[i].Data, rest = string(path), data, r
	}
	if len(rest) != 0 {
		return nil, fmt.Errorf("commit request: %d bytes after the last file", len(rest))
	}
	return files, nil
}

// DecodeCommitResult decodes the WriteInfo list of a commit response.
func DecodeCommitResult(b []byte) ([]WriteInfo, error) {
	if len(b) < 4 {
		return nil, fmt.Errorf("commit result: %d bytes, want at least 4", len(b))
	}
	count, rest := binary.LittleEndian.Uint32(b), b[4:]
	if uint64(count) > uint64(len(rest)/16) {
		return nil, fmt.Errorf("commit result: %d files cannot fit in %d bytes", count, len(rest))
	}
	infos := make([]WriteInfo, count)
	for i := range infos {
		if len(rest) < 16 {
			return nil, fmt.Errorf("commit result: file %d truncated", i)
		}
		path, r, err := nextField(rest[12:])
		if err != nil {
			return nil, fmt.Errorf("commit result: file %d path: %w", i, err)
		}
		infos[i] = WriteInfo{
			Flags: binary.LittleEndian.Uint32(rest),
			Size:  int64(binary.LittleEndian.Uint64(rest[4:])),
			Path:  string(path),
		}
		rest = r
	}
	return infos, nil
}

// ProcResult is the response of FnProcRun.
//
// Layout: i32 exit code | u32 flags | u64 stdout bytes | u64 stderr bytes |
// u32 len + stdout | u32 len + stderr | u32 len + stdout tail |
// u32 len + stderr tail
type ProcResult struct {
	ExitCode    int32 // -1 when a signal ended the process
	Flags       uint32
	StdoutBytes int64 // produced: Stdout, then what was omitted, then StdoutTail
	StderrBytes int64
	Stdout      []byte // the first part of the stream
	Stderr      []byte
	StdoutTail  []byte // the last part, when the stream was longer than Stdout
	StderrTail  []byte
}

// Flags of a ProcResult.
const (
	ProcStdoutCut uint32 = 1 << iota // bytes between Stdout and StdoutTail were omitted
	ProcStderrCut                    // bytes between Stderr and StderrTail were omitted
)

// AppendProcResult encodes r after dst.
func AppendProcResult(dst []byte, r ProcResult) []byte {
	dst = binary.LittleEndian.AppendUint32(dst, uint32(r.ExitCode))
	dst = binary.LittleEndian.AppendUint32(dst, r.Flags)
	dst = binary.LittleEndian.AppendUint64(dst, uint64(r.StdoutBytes))
	dst = binary.LittleEndian.AppendUint64(dst, uint64(r.StderrBytes))
	dst = appendField(dst, r.Stdout)
	dst = appendField(dst, r.Stderr)
	dst = appendField(dst, r.StdoutTail)
	return appendField(dst, r.StderrTail)
}

// DecodeProcResult decodes a ProcResult; the output slices alias b.
func DecodeProcResult(b []byte) (ProcResult, error) {
	const fixed = 4 + 4 + 8 + 8
	if len(b) < fixed {
		return ProcResult{}, fmt.Errorf("proc result: %d bytes, want at least %d", len(b), fixed)
	}
	r := ProcResult{
		ExitCode:    int32(binary.LittleEndian.Uint32(b)),
		Flags:       binary.LittleEndian.Uint32(b[4:]),
		StdoutBytes: int64(binary.LittleEndian.Uint64(b[8:])),
		StderrBytes: int64(binary.LittleEndian.Uint64(b[16:])),
	}
	rest := b[fixed:]
	for _, f := range []struct {
		name string
		dst  *[]byte
	}{{"stdout", &r.Stdout}, {"stderr", &r.Stderr}, {"stdout tail", &r.StdoutTail}, {"stderr tail", &r.StderrTail}} {
		var err error
		if *f.dst, rest, err = nextField(rest); err != nil {
			return ProcResult{}, fmt.Errorf("proc result %s: %w", f.name, err)
		}
	}
	return r, nil
}
