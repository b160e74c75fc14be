package sdk

import (
	"github.com/toolhost/toolhost/abi"
)

// result interprets a host function's return value: the staged response on
// success, or a *HostError.
func result(v int64) ([]byte, error) {
	status, n := abi.DecodeReturn(v)
	resp := takeResponse(n)
	if status == abi.StatusOK {
		return resp, nil
	}
	he := &HostError{Status: status}
	if err := registeredDecoder().hostError(resp, &he.HostError); err != nil || he.Message == "" {
		he.Kind, he.Message = abi.KindExecutionFailed, "host function failed with status "+status.String()
	}
	return nil, he
}

// Stat describes the file or directory at path.
func Stat(path string) (abi.FileInfo, error) {
	resp, err := result(fsStat(path))
	if err != nil {
		return abi.FileInfo{}, err
	}
	fi, _, err := abi.DecodeFileInfo(resp)
	return fi, err
}

// Lstat describes what is at path without following a symbolic link its
// last name is: for a link, the FileInfo is the link's own (type
// abi.TypeSymlink) and the LinkInfo says where it leads, as far as the
// sandbox lets a tool know; Stat then describes what it leads to. For
// anything else it is Stat's answer and an empty LinkInfo. It needs
// fs.read or fs.list.
func Lstat(path string) (abi.FileInfo, abi.LinkInfo, error) {
	resp, err := result(fsLstat(path))
	if err != nil {
		return abi.FileInfo{}, abi.LinkInfo{}, err
	}
	fi, rest, err := abi.DecodeFileInfo(resp)
	if err != nil {
		return abi.FileInfo{}, abi.LinkInfo{}, err
	}
	li, _, err := abi.DecodeLinkInfo(rest)
	return fi, li, err
}

// Read returns up to limit bytes of path from offset (limit < 0: to the end).
// abi.ReadRecord records the read for stale-file protection; abi.ReadBase64
// returns the bytes base64-encoded.
func Read(path string, offset, limit int64, flags uint32) (abi.ReadInfo, []byte, error) {
	resp, err := result(fsRead(path, offset, limit, flags))
	if err != nil {
		return abi.ReadInfo{}, nil, err
	}
	return abi.DecodeReadInfo(resp)
}

// ReadLines returns lines start..end (1-based, inclusive; end 0 means to the
// end of the file), scanning at most the call's scan limit.
func ReadLines(path string, start, end, flags uint32) (abi.ReadInfo, []byte, error) {
	resp, err := result(fsReadLines(path, start, end, flags))
	if err != nil {
		return abi.ReadInfo{}, nil, err
	}
	return abi.DecodeReadInfo(resp)
}

// List returns up to maxEntries entries under path, depth levels deep,
// sorted by path. Symlinks are reported, not followed; denied paths are left out.
func List(path string, depth, maxEntries, flags uint32) (truncated bool, entries []abi.FileInfo, err error) {
	resp, err := result(fsList(path, depth, maxEntries, flags))
	if err != nil {
		return false, nil, err
	}
	f, entries, err := abi.DecodeListing(resp)
	return f&abi.ListTruncated != 0, entries, err
}

// Write replaces path with data atomically. The host refuses to overwrite a
// file that was not read in this conversation or changed since (StaleFile).
func Write(path string, data []byte, flags uint32) (abi.WriteInfo, error) {
	resp, err := result(fsWrite(path, data, flags))
	if err != nil {
		return abi.WriteInfo{}, err
	}
	return abi.DecodeWriteInfo(resp)
}

// Diff returns a unified diff from the current content of path (empty if it
// does not exist) to data.
func Diff(path string, data []byte) (string, error) {
	resp, err := result(fsDiff(path, data))
	return string(resp), err
}

// Commit replaces every file in files, and makes every operation
// (Remove, Move, Mkdir) among them, all or none. The host refuses
// (StaleFile) an existing file this conversation did not read or that
// changed since, and a file flagged abi.CommitNew that exists now. Use
// Read with abi.ReadForUpdate to get content to base the change on.
func Commit(files []abi.CommitFile) ([]abi.WriteInfo, error) {
	resp, err := result(fsCommit(abi.AppendCommitRequest(nil, files), 0))
	if err != nil {
		return nil, err
	}
	return abi.DecodeCommitResult(resp)
}

// Remove is the commit operation that removes path: a file, or a
// symbolic link itself (never what it leads to); a directory with
// everything below it only when recursive. Commit runs it; the plugin
// needs the capability fs.delete, and no earlier read.
func Remove(path string, recursive bool) abi.CommitFile {
	f := abi.CommitFile{Flags: abi.CommitDelete, Path: path}
	if recursive {
		f.Flags |= abi.CommitRecursive
	}
	return f
}

// Move is the commit operation that moves the file, link or directory at
// src to dst, creating dst's missing parents. An existing dst is refused
// unless overwrite, and then it must have been read in this conversation
// and be unchanged. The plugin needs the capability fs.delete.
func Move(src, dst string, overwrite bool) abi.CommitFile {
	f := abi.CommitFile{Flags: abi.CommitMove, Path: dst, Data: []byte(src)}
	if overwrite {
		f.Flags |= abi.CommitOverwrite
	}
	return f
}

// Mkdir is the commit operation that creates the directory path and its
// missing parents; a directory already there is success. The plugin
// needs the capability fs.write.
func Mkdir(path string) abi.CommitFile {
	return abi.CommitFile{Flags: abi.CommitMkdir, Path: path}
}

// CommitDiff checks files as Commit would and returns unified diffs of the
// changes instead of writing; for a removal or a move, the host's
// description of what would be removed or moved (a file's size, line
// count and first lines, a directory's files and bytes) and whether undo
// could restore it.
func CommitDiff(files []abi.CommitFile) (string, error) {
	resp, err := result(fsCommit(abi.AppendCommitRequest(nil, files), abi.CommitDryRun))
	return string(resp), err
}

// Search has the host walk req.Path and match natively (needs the
// capability fs.search): the ignore rules, the denied paths, the call's
// read scope and its limits apply as they do to every read. The result's
// totals count everything, returned or not; Truncated and StoppedBy say
// what was left out and why.
func Search(req abi.SearchRequest) (abi.SearchResult, error) {
	resp, err := result(fsSearch(abi.AppendSearchRequest(nil, req), 0))
	if err != nil {
		return abi.SearchResult{}, err
	}
	var r abi.SearchResult
	if err := registeredDecoder().json.Unmarshal(resp, &r); err != nil {
		return abi.SearchResult{}, &HostError{Status: abi.StatusInvalid, HostError: abi.HostError{Kind: abi.KindExecutionFailed, Message: "fs_search: the host's response could not be decoded: " + err.Error()}}
	}
	return r, nil
}

// SearchRendered has the host run req (with req.Render set) and shape
// the result as the tool returns it: the text, and the structured
// object when req.RenderStructured asks for it. The entries never cross
// into the plugin as JSON to decode.
func SearchRendered(req abi.SearchRequest) (text, structured []byte, err error) {
	resp, err := result(fsSearch(abi.AppendSearchRequest(nil, req), 0))
	if err != nil {
		return nil, nil, err
	}
	text, structured, err = abi.DecodeRendered(resp)
	if err != nil {
		return nil, nil, &HostError{Status: abi.StatusInvalid, HostError: abi.HostError{Kind: abi.KindExecutionFailed, Message: "fs_search: the host's rendered response could not be decoded: " + err.Error()}}
	}
	return text, structured, nil
}

// Run runs command with the platform shell in cwd (empty: the working
// directory) and waits for it. Its output streams to the host's
// subscribers while it runs; the result holds the start of each stream. A
// non-zero exit is not an error; the call's deadline is (Timeout).
func Run(command, cwd string) (abi.ProcResult, error) {
	resp, err := result(procRun(command, cwd))
	if err != nil {
		return abi.ProcResult{}, err
	}
	return abi.DecodeProcResult(resp)
}

// Exec has the host run req.Command (needs the capability proc.exec)
// under the call's confinement, deadline and approval. Its output
// streams to the host's subscribers while it runs. A non-zero exit is
// not an error; it is in ExecResult.ExitCode. With req.Background it
// returns at once with ExecResult.JobID.
func Exec(req abi.ExecRequest) (abi.ExecResult, error) {
	var r abi.ExecResult
	err := hostJSON("proc_exec", procExec(abi.AppendExecRequest(nil, req), 0), &r)
	return r, err
}

// Job reads, signals or lists the background jobs and kept outputs of
// the call's conversation (needs the capability proc.jobs).
func Job(req abi.JobRequest) (abi.JobResult, error) {
	var r abi.JobResult
	err := hostJSON("proc_job", procJob(abi.AppendJobRequest(nil, req), 0), &r)
	return r, err
}

// hostJSON decodes the JSON response of host function fn, whose return
// value is v, into out.
func hostJSON(fn string, v int64, out any) error {
	resp, err := result(v)
	if err != nil {
		return err
	}
	if err := registeredDecoder().json.Unmarshal(resp, out); err != nil {
		return &HostError{Status: abi.StatusInvalid, HostError: abi.HostError{Kind: abi.KindExecutionFailed, Message: fn + ": the host's response could not be decoded: " + err.Error()}}
	}
	return nil
}

// Emit streams a chunk of output to the host's event subscribers.
func Emit(kind uint32, data []byte) error {
	_, err := result(eventEmit(kind, data))
	return err
}
