package hostfn

import (
	"bytes"
	"context"
	"crypto/sha256"
	"errors"
	"io"
	"io/fs"

	"github.com/toolhost/toolhost/abi"
	"github.com/toolhost/toolhost/host/internal/ctxio"
	"github.com/toolhost/toolhost/host/internal/sandbox"
)

// CallJournal is the journal as one call's host functions see it: they
// record there, before doing it, what the call does that outlives it, so
// that a crash leaves a record of it. A nil CallJournal records
// nothing.
type CallJournal interface {
	// ProcessStarted records that the call's command runs in the process
	// group and session pid, as soon as they exist and before toolhost
	// waits on them, so that recovery after a crash can kill what is left
	// of them. An error stops the command: a command the journal cannot
	// record does not go on running.
	ProcessStarted(pid int) error
	// MaxPreimageBytes is the most previous content the journal keeps
	// for one file: BeforeChange is given no more than one byte past it.
	MaxPreimageBytes() int64
	// BeforeChange records, in one journal transaction, what the files
	// about to change hold now (their pre-images, for undo:). It is called once the new content is staged, before the
	// commit; an error refuses the change, and nothing is written.
	BeforeChange(ctx context.Context, files []FileState) error
	// AfterChange records, in one journal transaction, what a committed
	// change left, so that undo can tell whether a file changed since.
	// A failure is logged: the change is made, and an undo of it is
	// refused for want of the record.
	AfterChange(ctx context.Context, files []FileState)
}

// FileState is a file's state at one moment, by canonical absolute path:
// a regular file, or, when Mode says so, a directory or a symbolic link
// (entries a removal, a move or a new directory takes or leaves).
type FileState struct {
	Path   string
	Exists bool
	// Mode is the permission bits, with fs.ModeDir for a directory and
	// fs.ModeSymlink for a link (whose Content is its target).
	Mode fs.FileMode
	Size int64
	// Content is the content before a change, whole only when its length
	// is Size: a larger file than the journal keeps is read no further
	// than one byte past MaxPreimageBytes. Unset after a change.
	Content []byte
	// SHA256 is the digest of the content after a change; unset before.
	SHA256 [sha256.Size]byte
}

// beforeChange records the pre-images of paths, whose new content is
// staged, in the call's journal. The caller holds their locks. An error
// is the call's, saying nothing was changed.
func (c *Call) beforeChange(ctx context.Context, paths []sandbox.Path) error {
	_, err := c.beforeCommit(ctx, paths, nil)
	return err
}

// beforeCommit records, in one journal transaction, the pre-images of
// paths and of everything the operations among targets take (ops.go),
// and returns what those operations will leave, for afterCommit. Each
// operation keeps at most the journal's pre-image cap of content: past
// it the rest is journaled as not undoable.
func (c *Call) beforeCommit(ctx context.Context, paths []sandbox.Path, targets []commitTarget) ([]FileState, error) {
	if c.Journal == nil {
		return nil, nil
	}
	limit := c.Journal.MaxPreimageBytes()
	states := make([]FileState, len(paths), len(paths)+len(targets))
	for i, p := range paths {
		st, err := readPreimage(ctx, p, limit)
		if err != nil {
			return nil, commitError(p.Attempted, err)
		}
		states[i] = st
	}
	var opAfter []FileState
	for _, t := range targets {
		if t.op == opWrite {
			continue
		}
		budget := limit
		before, after, err := opStates(ctx, t, &budget)
		if err != nil {
			return nil, commitError(t.Path, err)
		}
		states, opAfter = append(states, before...), append(opAfter, after...)
	}
	if len(states) == 0 {
		return nil, nil
	}
	if err := c.Journal.BeforeChange(ctx, states); err != nil {
		name := c.displayAbs(states[0].Path)
		if len(paths) > 0 {
			name = paths[0].Attempted
		}
		if len(states) > 1 {
			name += " and " + itoa(uint32(len(states)-1)) + " more files"
		}
		return nil, fail(abi.StatusIO, abi.KindExecutionFailed,
			"call %s did not change %s: toolhost journals the previous content of every file before changing it, so the change can be undone, and that failed: %v. Nothing was written; fix the journal as it says, then retry",
			c.CallID, name, err)
	}
	return opAfter, nil
}

// afterChange records what a committed change left at paths: data[i]
// at paths[i], with the mode the file has now.
func (c *Call) afterChange(ctx context.Context, paths []sandbox.Path, data [][]byte) {
	c.afterCommit(ctx, paths, data, nil, nil)
}

// afterCommit records, in one journal transaction, what a committed
// change left at paths and what its operations left (opAfter, from
// beforeCommit), with the modes of the directories they made.
func (c *Call) afterCommit(ctx context.Context, paths []sandbox.Path, data [][]byte, opAfter []FileState, targets []commitTarget) {
	if c.Journal == nil {
		return
	}
	states := make([]FileState, len(paths), len(paths)+len(opAfter))
	for i, p := range paths {
		st := FileState{Path: p.Abs, Exists: true, Size: int64(len(data[i])), SHA256: sha256.Sum256(data[i])}
		if fi, err := p.Lstat(); err == nil {
			st.Mode = fi.Mode().Perm()
		}
		states[i] = st
	}
	for _, t := range targets {
		madeModes(t, opAfter)
	}
	states = append(states, opAfter...)
	if len(states) > 0 {
		c.Journal.AfterChange(ctx, states)
	}
}

// readPreimage reads what p holds now: nothing when it does not exist,
// else its mode, size and content up to one byte past limit.
func readPreimage(ctx context.Context, p sandbox.Path, limit int64) (FileState, error) {
	st := FileState{Path: p.Abs}
	f, err := p.OpenFile()
	if errors.Is(err, fs.ErrNotExist) {
		return st, nil
	}
	if err != nil {
		return st, err
	}
	defer f.Close()
	fst, err := f.Stat()
	if err != nil {
		return st, err
	}
	st.Exists, st.Mode, st.Size = true, fst.Mode.Perm(), fst.Size
	// One byte past the cap at most: a larger file is not kept whole.
	var buf bytes.Buffer
	buf.Grow(int(min(fst.Size, limit) + 1))
	if _, err := buf.ReadFrom(io.LimitReader(ctxio.Reader(ctx, f), limit+1)); err != nil {
		return st, err
	}
	st.Content = buf.Bytes()
	if n := int64(len(st.Content)); n <= limit {
		st.Size = n // read whole: what is there now, whatever the stat said
	}
	return st, nil
}
