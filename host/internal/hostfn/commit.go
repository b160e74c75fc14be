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

// readForUpdate serves fs_read with abi.ReadForUpdate: the whole file, for
// a plugin that will compute new content from it, and only if the
// conversation's read cache vouches for exactly these bytes. The call
// then holds the digest as the base of its change (Files.seen).
func readForUpdate(c *Call, f *Files, name string, p sandbox.Path, file *sandbox.File, st sandbox.FileStat) ([]byte, error) {
	limit := c.scanLimit()
	if st.Size > limit {
		return nil, tooLargeToUpdate(name, st.Size, limit)
	}
	resp := make([]byte, abi.ReadInfoSize+int(st.Size)+1)
	// One byte more than the size seen, to notice a file still growing.
	n, err := io.ReadFull(file, resp[abi.ReadInfoSize:])
	if err != nil && !errors.Is(err, io.ErrUnexpectedEOF) && !errors.Is(err, io.EOF) {
		return nil, classify(name, err)
	}
	if int64(n) > limit {
		return nil, tooLargeToUpdate(name, int64(n), limit)
	}
	data := resp[abi.ReadInfoSize : abi.ReadInfoSize+n]
	sum := sha256.Sum256(data)
	if err := checkSum(c, f, p, name, sum, "patching"); err != nil {
		return nil, err
	}
	f.observe(c, p, sum, false)
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

// commitTarget is one validated operation of an fs_commit request: a
// file's new content, or a removal, directory or move (ops.go).
type commitTarget struct {
	abi.CommitFile
	p     sandbox.Path
	grant WriteGrant

	op  opKind
	src sandbox.Path // a move's source
	// Found under the locks (checkOpNow):
	tree   *tree          // what a removal or move takes
	dsts   []sandbox.Path // where a move puts each entry of tree
	exists bool           // a directory to make is there already; a move's destination is replaced
	made   []sandbox.Path // directories a mkdir or a move creates, top-most first
}

// mustCreate says the file may only be created: the plugin flagged it
// new, or approval covered only its creation.
func (t commitTarget) mustCreate() bool {
	return t.Flags&abi.CommitNew != 0 || t.grant == WriteCreateOnly
}

func fsCommit(ctx context.Context, c *Call, f *Files, mem api.Memory, stack []uint64) ([]byte, error) {
	req, err := guestBytes(mem, uint32(stack[0]), uint32(stack[1]))
	if err != nil {
		return nil, err
	}
	if uint32(stack[2])&abi.CommitDryRun == 0 {
		if err := c.dryRunRefusal("commit files"); err != nil {
			return nil, err
		}
	}
	if err := f.checkCommitFiles(c, req); err != nil {
		return nil, err
	}
	if err := c.checkCommitRequest(req); err != nil {
		return nil, err
	}
	files, err := abi.DecodeCommitRequest(req)
	if err != nil {
		return nil, fail(abi.StatusInvalid, abi.KindExecutionFailed, "fs_commit: %v", err)
	}
	targets, err := resolveCommit(c, f, files)
	if err != nil {
		return nil, err
	}
	if uint32(stack[2])&abi.CommitDryRun != 0 {
		if err := checkCommit(ctx, c, f, targets); err != nil {
			return nil, err
		}
		return dryRun(ctx, c, targets)
	}
	var paths []sandbox.Path
	for _, t := range targets {
		paths = append(paths, t.paths()...)
	}
	// Every file stays locked from its freshness check to the last
	// rename; Lock takes them in sorted order, so two commits of
	// overlapping files cannot deadlock.
	unlock, err := c.lock(ctx, paths...)
	if err != nil {
		return nil, err
	}
	defer unlock()
	if err := checkCommit(ctx, c, f, targets); err != nil {
		return nil, err
	}
	if unlockTrees, err := lockTrees(ctx, c, f, targets); err != nil {
		return nil, err
	} else if unlockTrees != nil {
		defer unlockTrees()
	}
	return commitFiles(ctx, c, f, targets)
}

// checkCommitFiles refuses a commit of more files than the operator
// allows (tools.apply_patch.max_files), from the count
// that heads the request: before it is decoded, and before any file is
// resolved, checked or staged, so a patch of thousands of files fails at
// once.
func (f *Files) checkCommitFiles(c *Call, req []byte) error {
	if f.MaxCommitFiles <= 0 || len(req) < 4 {
		return nil
	}
	n := binary.LittleEndian.Uint32(req)
	if uint64(n) <= uint64(f.MaxCommitFiles) {
		return nil
	}
	err := fail(abi.StatusTooLarge, abi.KindExecutionFailed,
		"call %s would change %d files at once, more than tools.apply_patch.max_files allows (%d); nothing was changed. Split the change into parts of at most %d files each, or ask the operator to raise tools.apply_patch.max_files",
		c.CallID, n, f.MaxCommitFiles, f.MaxCommitFiles)
	err.Details = map[string]any{"files": n, "limit": f.MaxCommitFiles, "key": "tools.apply_patch.max_files"}
	return err
}

// dryRun is the unified diff of every change, after every check a commit
// makes, under the call's deadline. The text stops at the output limit,
// which is all a model could see of it.
func dryRun(ctx context.Context, c *Call, targets []commitTarget) ([]byte, error) {
	var diff strings.Builder
	limit := c.outputLimit()
	for i, t := range targets {
		if int64(diff.Len()) >= limit {
			diff.WriteString("[diffs of " + itoa(uint32(len(targets)-i)) + " more files omitted: the output limit is reached]\n")
			break
		}
		if t.op != opWrite {
			d, err := describeOp(ctx, c, t)
			if err != nil {
				return nil, err
			}
			diff.WriteString(d)
			continue
		}
		d, err := diffFile(ctx, c, t.p, t.Path, t.Data, t.Flags&abi.CommitNew == 0)
		if err != nil {
			return nil, err
		}
		diff.WriteString(d)
	}
	return []byte(diff.String()), nil
}

// resolveCommit validates every path in the sandbox and against the call's
// write grants, and bounds the content, before any file is looked at.
func resolveCommit(c *Call, f *Files, files []abi.CommitFile) ([]commitTarget, error) {
	targets := make([]commitTarget, len(files))
	seen := make(map[string]string, len(files))
	fileLimit, total := c.commitFileLimit(), int64(0)
	ops := false
	for i, cf := range files {
		if len(cf.Path) > maxPathBytes || (cf.Flags&abi.CommitMove != 0 && len(cf.Data) > maxPathBytes) {
			return nil, fail(abi.StatusInvalid, abi.KindBadArgs, "fs_commit: file %d has a path of %d bytes, longer than any file path may be", i, max(len(cf.Path), len(cf.Data)))
		}
		if err := c.checkOp(i, cf); err != nil {
			return nil, err
		}
		if kindOf(cf.Flags) != opWrite {
			t, err := resolveOp(c, f, cf)
			if err != nil {
				return nil, err
			}
			targets[i], ops = t, true
			continue
		}
		// A commit reads each file to diff or update it: a path the call
		// may not read, it may not commit either.
		p, err := c.resolveRead("fs_commit", cf.Path)
		if err != nil {
			return nil, classify(cf.Path, err)
		}
		if other, dup := seen[p.Abs]; dup {
			return nil, fail(abi.StatusInvalid, abi.KindExecutionFailed, "%s and %s are the same file; change it once per commit", other, cf.Path)
		}
		seen[p.Abs] = cf.Path
		grant, err := f.writeGrant(c, p, cf.Path)
		if err != nil {
			return nil, err
		}
		if n := int64(len(cf.Data)); n > fileLimit {
			return nil, fail(abi.StatusTooLarge, abi.KindExecutionFailed,
				"%s: the new content is %d bytes, more than one file of a commit may have (%d: max_scan_bytes plus max_patch_bytes); nothing was changed, write it with write_file instead", cf.Path, n, fileLimit)
		}
		if total += int64(len(cf.Data)); total > c.commitLimit() {
			return nil, fail(abi.StatusTooLarge, abi.KindExecutionFailed,
				"fs_commit: the new content of these files is more than %d bytes in all; nothing was changed, split the change into smaller ones", c.commitLimit())
		}
		targets[i] = commitTarget{CommitFile: cf, p: p, grant: grant}
	}
	if ops {
		if err := overlapping(targets); err != nil {
			return nil, err
		}
	}
	return targets, nil
}

// checkCommit checks every file fresh (FR-TOOL-PATCH-02d: after sandbox
// validation, before any write).
func checkCommit(ctx context.Context, c *Call, f *Files, targets []commitTarget) error {
	for i := range targets {
		if targets[i].op != opWrite {
			if err := checkOpNow(ctx, c, f, &targets[i]); err != nil {
				return err
			}
			continue
		}
		if err := c.checkCreateOnly(targets[i].p, targets[i].Path, targets[i].grant); err != nil {
			return err
		}
		if err := checkCommitFresh(ctx, c, f, &targets[i]); err != nil {
			return err
		}
	}
	return nil
}

// checkCommitFresh checks that the file is as the plugin saw it: an
// existing file read in this conversation and unchanged, or, for a new
// file, still absent.
func checkCommitFresh(ctx context.Context, c *Call, f *Files, t *commitTarget) error {
	if t.Flags&abi.CommitNew == 0 && !f.based(t.p) {
		if _, err := t.p.Lstat(); err == nil { // a missing file is reported below
			return stale(c, t.p, t.Path, "File was not read before patching", "read it with read_file first, then retry")
		}
	}
	sum, err := fileSum(ctx, t.p)
	switch {
	case errors.Is(err, fs.ErrNotExist) && t.Flags&abi.CommitNew != 0:
		return nil
	case errors.Is(err, fs.ErrNotExist):
		return stale(c, t.p, t.Path, "File was deleted since last read", "read the directory again and recreate the file if that is intended")
	case err != nil:
		return classify(t.Path, err)
	case t.Flags&abi.CommitNew != 0:
		return stale(c, t.p, t.Path, "File was created since the change was prepared", "read it with read_file and retry")
	}
	return checkSum(c, f, t.p, t.Path, sum, "patching")
}

// commitFiles stages and commits every target, then records the new
// content of each so the conversation may edit it again without
// re-reading. With a journal, the previous content of every file is
// journaled before the commit and what it left after it.
func commitFiles(ctx context.Context, c *Call, f *Files, targets []commitTarget) ([]byte, error) {
	txn := c.Sandbox.Begin()
	defer txn.Close()
	created := make([]bool, len(targets))
	var paths []sandbox.Path
	var data [][]byte
	for i := range targets {
		t := &targets[i]
		if t.op != opWrite {
			switch t.op {
			case opMkdir:
				t.made = missingDirs(t.p)
			case opMove:
				t.made = missingDirs(parentDir(t.p))
			}
			made, err := stageOp(txn, *t)
			if err != nil {
				return nil, commitError(t.Path, err)
			}
			created[i] = made
			continue
		}
		paths, data = append(paths, t.p), append(data, t.Data)
		made, err := stage(txn, t.p, t.Data, t.Flags&abi.CommitCreateDirs != 0, t.mustCreate())
		if errors.Is(err, fs.ErrExist) {
			return nil, c.appeared(t.p, t.Path, t.grant)
		}
		if err != nil {
			return nil, commitError(t.Path, err)
		}
		created[i] = made
	}
	// Every file's previous content, and everything an operation takes,
	// is journaled, in one transaction, before anything changes.
	opAfter, err := c.beforeCommit(ctx, paths, targets)
	if err != nil {
		return nil, err
	}
	if err := txn.Commit(); err != nil {
		var rb *sandbox.RollbackError
		var pe *fs.PathError
		if !errors.As(err, &rb) && errors.Is(err, fs.ErrExist) && errors.As(err, &pe) {
			// A new file appeared between the check and its rename.
			for _, t := range targets {
				if pe.Path == t.Path {
					return nil, c.appeared(t.p, t.Path, t.grant)
				}
			}
		}
		return nil, commitError("", err)
	}
	c.afterCommit(ctx, paths, data, opAfter, targets)
	resp := binary.LittleEndian.AppendUint32(nil, uint32(len(targets)))
	for i, t := range targets {
		if t.op != opWrite {
			resp = abi.AppendWriteInfo(resp, opInfo(c, t, created[i]))
			continue
		}
		f.observe(c, t.p, sha256.Sum256(t.Data), true)
		wi := abi.WriteInfo{Size: int64(len(t.Data)), Path: c.display(t.p)}
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
		return fail(abi.StatusIO, abi.KindExecutionFailed,
			"the change failed and could not be undone completely: %v. Nothing will repair this by itself: for each file named, move the backup named over it by hand (or remove a file it says was created), then read the files again", err)
	}
	var pe *fs.PathError
	if name == "" && errors.As(err, &pe) {
		name = pe.Path
	}
	e := classify(name, err)
	e.Message += " (no file was changed)"
	return e
}
