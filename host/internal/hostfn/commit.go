package hostfn

import (
	"context"
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"io"
	"io/fs"
	"strings"

	"github.com/tetratelabs/wazero/api"

	"github.com/toolhost/toolhost/abi"
	"github.com/toolhost/toolhost/host/internal/sandbox"
)

func (e *Env) scanLimit() int64 {
	if e.Limits.MaxScanBytes > 0 {
		return e.Limits.MaxScanBytes
	}
	return defaultScanBytes
}

// readForUpdate serves fs_read with abi.ReadForUpdate: the whole file, for
// a plugin that will compute new content from it, and only if the
// conversation's read cache vouches for exactly these bytes.
func readForUpdate(env *Env, name string, p sandbox.Path, f *sandbox.File, st sandbox.FileStat) ([]byte, error) {
	limit := env.scanLimit()
	if st.Size > limit {
		return nil, tooLargeToUpdate(name, st.Size, limit)
	}
	resp := make([]byte, abi.ReadInfoSize+int(st.Size)+1)
	// One byte more than the size seen, to notice a file still growing.
	n, err := io.ReadFull(f, resp[abi.ReadInfoSize:])
	if err != nil && !errors.Is(err, io.ErrUnexpectedEOF) && !errors.Is(err, io.EOF) {
		return nil, classify(name, err)
	}
	if int64(n) > limit {
		return nil, tooLargeToUpdate(name, int64(n), limit)
	}
	data := resp[abi.ReadInfoSize : abi.ReadInfoSize+n]
	if err := checkSum(env, p, name, sha256.Sum256(data), "patching"); err != nil {
		return nil, err
	}
	info := abi.ReadInfo{FileSize: int64(n), ModTime: st.ModTime.UnixNano(), Flags: abi.ReadEOF}
	if isBinary(data, true) || !validUTF8(data, true) {
		info.Flags |= abi.ReadIsBinary
	}
	abi.AppendReadInfo(resp[:0], info)
	return resp[:abi.ReadInfoSize+n], nil
}

func tooLargeToUpdate(name string, size, limit int64) error {
	return fail(abi.StatusTooLarge, abi.KindExecutionFailed,
		"%s is %d bytes, more than max_scan_bytes (%d), too large to edit in place; replace it with write_file or raise tools.read_file.max_scan_bytes", name, size, limit)
}

// checkSum is stale-file protection (FR-TOOL-PATCH-02a/b, worded as the
// SRD has it): the conversation must have read the file, and its SHA-256
// then must equal sum, the digest of what is there now. action names what
// was refused ("writing", "patching").
func checkSum(env *Env, p sandbox.Path, name string, sum [32]byte, action string) error {
	var read, same bool
	if env.Reads != nil {
		read, same = env.Reads.Matches(p.Abs, sum)
	}
	switch {
	case !read:
		return stale(env, p, name, "File was not read before "+action, "read it with read_file first, then retry")
	case !same:
		return stale(env, p, name, "File content changed since last read", "read it again with read_file and base the change on what is there now")
	}
	return nil
}

// commitTarget is one validated file of an fs_commit request.
type commitTarget struct {
	abi.CommitFile
	p sandbox.Path
}

func fsCommit(_ context.Context, env *Env, mem api.Memory, stack []uint64) ([]byte, error) {
	req, err := guestBytes(mem, uint32(stack[0]), uint32(stack[1]))
	if err != nil {
		return nil, err
	}
	files, err := abi.DecodeCommitRequest(req)
	if err != nil {
		return nil, fail(abi.StatusInvalid, abi.KindExecutionFailed, "fs_commit: %v", err)
	}
	targets, err := prepareCommit(env, files)
	if err != nil {
		return nil, err
	}
	if uint32(stack[2])&abi.CommitDryRun != 0 {
		return dryRun(env, targets)
	}
	return commit(env, targets)
}

// dryRun is the unified diff of every change, after every check a commit
// makes.
func dryRun(env *Env, targets []commitTarget) ([]byte, error) {
	var diff strings.Builder
	for _, t := range targets {
		var current []byte
		if t.Flags&abi.CommitNew == 0 {
			var err error
			if current, err = readAll(t.p); err != nil {
				return nil, classify(t.Path, err)
			}
		}
		diff.WriteString(unifiedDiff(env.display(t.p), current, t.Flags&abi.CommitNew == 0, t.Data))
	}
	return []byte(diff.String()), nil
}

// prepareCommit validates every path in the sandbox first, then checks every
// file fresh (FR-TOOL-PATCH-02d: after sandbox validation, before any write).
func prepareCommit(env *Env, files []abi.CommitFile) ([]commitTarget, error) {
	targets := make([]commitTarget, len(files))
	seen := make(map[string]string, len(files))
	for i, f := range files {
		p, err := env.resolve(f.Path)
		if err != nil {
			return nil, classify(f.Path, err)
		}
		if other, dup := seen[p.Abs]; dup {
			return nil, fail(abi.StatusInvalid, abi.KindExecutionFailed, "%s and %s are the same file; change it once per commit", other, f.Path)
		}
		seen[p.Abs] = f.Path
		targets[i] = commitTarget{CommitFile: f, p: p}
	}
	for i := range targets {
		if err := checkCommitFresh(env, &targets[i]); err != nil {
			return nil, err
		}
	}
	return targets, nil
}

// checkCommitFresh checks that the file is as the plugin saw it: an
// existing file read in this conversation and unchanged, or, for a new
// file, still absent.
func checkCommitFresh(env *Env, t *commitTarget) error {
	sum, err := fileSum(t.p)
	switch {
	case errors.Is(err, fs.ErrNotExist) && t.Flags&abi.CommitNew != 0:
		return nil
	case errors.Is(err, fs.ErrNotExist):
		return stale(env, t.p, t.Path, "File was deleted since last read", "read the directory again and recreate the file if that is intended")
	case err != nil:
		return classify(t.Path, err)
	case t.Flags&abi.CommitNew != 0:
		return stale(env, t.p, t.Path, "File was created since the change was prepared", "read it with read_file and retry")
	}
	return checkSum(env, t.p, t.Path, sum, "patching")
}

// commit stages and commits every target, then records the new content of
// each so the conversation may edit it again without re-reading.
func commit(env *Env, targets []commitTarget) ([]byte, error) {
	txn := env.Sandbox.Begin()
	defer txn.Close()
	created := make([]bool, len(targets))
	for i, t := range targets {
		c, err := txn.Stage(t.p, t.Data, t.Flags&abi.CommitCreateDirs != 0)
		if err != nil {
			return nil, commitError(t.Path, err)
		}
		created[i] = c
	}
	if err := txn.Commit(); err != nil {
		return nil, commitError("", err)
	}
	resp := binary.LittleEndian.AppendUint32(nil, uint32(len(targets)))
	for i, t := range targets {
		if env.Reads != nil {
			env.Reads.Record(t.p.Abs, sha256.Sum256(t.Data), env.now())
		}
		wi := abi.WriteInfo{Size: int64(len(t.Data)), Path: env.display(t.p)}
		if created[i] {
			wi.Flags |= abi.WriteCreated
		}
		resp = abi.AppendWriteInfo(resp, wi)
	}
	return resp, nil
}

// commitError says plainly that nothing was changed, unless a rollback
// failed, which must be said louder.
func commitError(name string, err error) error {
	var rb *sandbox.RollbackError
	if errors.As(err, &rb) {
		return fail(abi.StatusIO, abi.KindExecutionFailed, "%v", err)
	}
	var pe *fs.PathError
	if name == "" && errors.As(err, &pe) {
		name = pe.Path
	}
	e := classify(name, err)
	e.Message += " (no file was changed)"
	return e
}
