package hostfn

import (
	"context"
	"crypto/sha256"
	"errors"
	"io"
	"io/fs"
	"path/filepath"
	"slices"
	"strings"

	"github.com/toolhost/toolhost/abi"
	"github.com/toolhost/toolhost/host/internal/ctxio"
	"github.com/toolhost/toolhost/host/internal/readcache"
	"github.com/toolhost/toolhost/host/internal/sandbox"
)

// What every write (fs_write, each file of fs_commit) must pass, in this
// order: the sandbox (Resolve, read-only patterns), the call's write
// grant (approval named the path), then, under the file's lock, the
// create-only rule and stale-file protection, right up to the rename.

// reasonNotNamed is the denial reason of a write to a path the call's
// arguments do not name.
const reasonNotNamed = abi.DenialNotNamed

// dryRunRefusal refuses what a dry-run call may not do; nil outside one.
func (c *Call) dryRunRefusal(what string) error {
	if !c.DryRun {
		return nil
	}
	return &Error{
		Status: abi.StatusDenied, Kind: abi.KindSandboxViolation,
		Message: "call " + c.CallID + " is a dry run, which may show a change but not " + what + "; nothing was done",
		Details: map[string]any{"reason": "DryRun"},
	}
}

// writeGrant returns what approval covered for writing p, and refuses a
// path the call's arguments did not name. A dry run
// writes nothing, so checking a change needs no grant.
func (f *Files) writeGrant(c *Call, p sandbox.Path, name string) (WriteGrant, error) {
	if f.Writes == nil || c.DryRun {
		return WriteAny, nil
	}
	if g, ok := f.Writes[p.Abs]; ok {
		return g, nil
	}
	allowed := make([]string, 0, len(f.Writes))
	for abs := range f.Writes {
		allowed = append(allowed, c.displayAbs(abs))
	}
	slices.Sort(allowed)
	msg := "call " + c.CallID + " may write only the paths its arguments name (" + strings.Join(allowed, ", ") + "); " +
		name + " was not named, so nothing was written. To change it, send a call whose arguments name it"
	if len(allowed) == 0 {
		msg = "call " + c.CallID + " may not write any file: its arguments name none to write, and approval covered only what they name; " +
			name + " was not written"
	}
	return 0, &Error{
		Status: abi.StatusDenied, Kind: abi.KindSandboxViolation, Message: msg,
		Details: map[string]any{"reason": string(reasonNotNamed), "attempted": name, "resolved": p.Abs, "allowed": allowed},
	}
}

// displayAbs is display for a canonical path that is not resolved.
func (c *Call) displayAbs(abs string) string {
	if roots := c.Sandbox.Roots(); len(roots) > 0 {
		if rel, err := filepath.Rel(roots[0], abs); err == nil && filepath.IsLocal(rel) {
			return filepath.ToSlash(rel)
		}
	}
	return abs
}

// createdMeanwhile refuses to replace a file the call was approved to
// create: it exists now, so replacing it was never approved.
func (c *Call) createdMeanwhile(p sandbox.Path, name string) error {
	err := fail(abi.StatusStale, abi.KindStaleFile,
		"call %s was approved to create %s, but %s exists now (another call created it); nothing was replaced. Replacing it needs a new call that is approved as an overwrite: read %s, then send the write again",
		c.CallID, name, name, name)
	err.Details = map[string]any{"file": c.display(p), "reason": "File was created after the call was approved to create it"}
	return err
}

// checkCreateOnly refuses a create-only write whose target exists. The
// rename that follows never replaces either (sandbox.Txn.StageNew), so a
// file appearing in between is kept too.
func (c *Call) checkCreateOnly(p sandbox.Path, name string, g WriteGrant) error {
	if g != WriteCreateOnly {
		return nil
	}
	_, err := p.Lstat()
	switch {
	case err == nil:
		return c.createdMeanwhile(p, name)
	case errors.Is(err, fs.ErrNotExist):
		return nil
	}
	return classify(name, err)
}

// lock holds the write locks of paths for the rest of a write: no other
// call, of this process or of another sharing its state directory,
// changes them between the freshness check and the rename. It waits at
// most until the call's deadline.
func (c *Call) lock(ctx context.Context, paths ...sandbox.Path) (unlock func(), err error) {
	abs := make([]string, len(paths))
	for i, p := range paths {
		abs[i] = p.Abs
	}
	unlock, err = c.Sandbox.Lock(ctx, abs...)
	if err != nil {
		name := "the same file"
		if le, ok := errors.AsType[*sandbox.LockError](err); ok {
			name = c.displayAbs(le.Path)
		}
		if stop := interrupted(err, "the call reached its deadline while another call or toolhost process was writing "+name+"; nothing was written. Retry when that write is done"); stop != nil {
			return nil, stop
		}
		return nil, fail(abi.StatusIO, abi.KindExecutionFailed, "%v", err)
	}
	return unlock, nil
}

// checkFresh enforces stale-file protection (FR-TOOL-PATCH-02a/b) for a
// write of p: an existing file may be replaced only if this conversation
// read it and it has not changed since. It runs after sandbox validation
// and, under the file's lock, before any write (FR-TOOL-PATCH-02d).
func checkFresh(ctx context.Context, c *Call, f *Files, p sandbox.Path, name string) error {
	fi, err := p.Lstat()
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return classify(name, err)
	}
	if !fi.Mode().IsRegular() {
		return fail(abi.StatusWrongType, abi.KindExecutionFailed, "%s exists and is not a regular file; refusing to replace it", name)
	}
	if !f.based(p) {
		return stale(c, p, name, "File was not read before writing", "read it with read_file first, then retry")
	}
	sum, err := fileSum(ctx, p)
	if err != nil {
		return classify(name, err)
	}
	return checkSum(c, f, p, name, sum, "writing")
}

// CheckFresh is stale-file protection for a change of p, in sb, that has
// not begun: the rule the host functions apply when the call writes p
// (checkFresh, checkCommitFresh), with what the conversation read
// (reads; nil: nothing was read) as the only basis, since the call has
// read nothing yet. It lets a planner refuse, before anyone is asked to
// approve it, a call that would certainly fail as stale. action names
// the change ("writing", "patching").
//
// It never replaces the check at the write, which alone holds the file's
// lock up to the rename: a file that changes after CheckFresh is still
// refused there. So it refuses only what is certain: a missing file (a
// creation), one that is not a regular file, or one it cannot hash is
// left to the write to judge. A file the conversation never read is
// refused without being read; only one it read is hashed, streaming, and
// no longer than ctx allows.
func CheckFresh(ctx context.Context, sb *sandbox.Sandbox, reads *readcache.Cache, p sandbox.Path, name, action string) error {
	fi, err := p.Lstat()
	if err != nil || !fi.Mode().IsRegular() {
		return nil
	}
	c, f := &Call{Sandbox: sb}, &Files{Reads: reads}
	if !f.based(p) {
		return stale(c, p, name, "File was not read before "+action, "read it with read_file first, then retry")
	}
	sum, err := fileSum(ctx, p)
	if err != nil {
		return nil
	}
	return checkSum(c, f, p, name, sum, action)
}

// checkSum is stale-file protection (FR-TOOL-PATCH-02a/b, worded as the
// SRD has it) for a file whose SHA-256 now is sum. The content a change
// is based on must still be there: what this call itself read, or else
// what the conversation last read, unchanged since this call began.
// action names what was refused ("writing", "patching").
func checkSum(c *Call, f *Files, p sandbox.Path, name string, sum [sha256.Size]byte, action string) error {
	if base, ok := f.seen[p.Abs]; ok {
		if base != sum {
			return stale(c, p, name, "File content changed since this call read it",
				"another call or program changed it meanwhile; read it again with read_file and base the change on what is there now")
		}
		return nil
	}
	var read, same bool
	if f.Reads != nil {
		read, same = f.Reads.Matches(p.Abs, sum)
	}
	switch {
	case !read:
		return stale(c, p, name, "File was not read before "+action, "read it with read_file first, then retry")
	case !same:
		return stale(c, p, name, "File content changed since last read", "read it again with read_file and base the change on what is there now")
	case f.ReadsAt > 0 && f.Reads.ChangedSince(p.Abs, f.ReadsAt, c.origin()):
		return stale(c, p, name, "File content changed since this call was planned",
			"another batch of this conversation changed it meanwhile; read it again with read_file and base the change on what is there now")
	}
	return nil
}

// observe notes that the call saw (or wrote) content with digest sum at
// p, for its own later writes and, when record is set, for the
// conversation's.
func (f *Files) observe(c *Call, p sandbox.Path, sum [sha256.Size]byte, record bool) {
	if f.seen == nil {
		f.seen = make(map[string][sha256.Size]byte)
	}
	f.seen[p.Abs] = sum
	if record && f.Reads != nil {
		f.Reads.RecordFrom(p.Abs, sum, f.now(), c.origin())
	}
}

// based reports whether a change of p can be based on anything this call
// or its conversation read: if not, it is refused as not read without
// hashing the file (which holds p's lock for as long as it takes).
func (f *Files) based(p sandbox.Path) bool {
	if _, ok := f.seen[p.Abs]; ok {
		return true
	}
	if f.Reads == nil {
		return false
	}
	_, ok := f.Reads.Lookup(p.Abs)
	return ok
}

// fileSum hashes the file at p as it streams: a freshness check needs the
// digest, not the content, and must not load a large file whole. It stops
// when the call's ctx ends, so a huge file cannot hold p's lock past the
// call's deadline.
func fileSum(ctx context.Context, p sandbox.Path) ([sha256.Size]byte, error) {
	f, err := p.OpenFile()
	if err != nil {
		return [sha256.Size]byte{}, err
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, ctxio.Reader(ctx, f)); err != nil {
		return [sha256.Size]byte{}, err
	}
	return [sha256.Size]byte(h.Sum(nil)), nil
}

func stale(c *Call, p sandbox.Path, name, reason, hint string) error {
	e := fail(abi.StatusStale, abi.KindStaleFile, "%s: %s; %s", name, reason, hint)
	e.Details = map[string]any{"file": c.display(p), "reason": reason}
	return e
}

// stage adds the new content of p to txn: as a file that must not exist
// when it is new or create-only, else as a replacement.
func stage(txn *sandbox.Txn, p sandbox.Path, data []byte, createDirs, mustCreate bool) (created bool, err error) {
	if mustCreate {
		return true, txn.StageNew(p, data, createDirs)
	}
	return txn.Stage(p, data, createDirs)
}

// appeared explains a creation that failed because the file exists now.
func (c *Call) appeared(p sandbox.Path, name string, g WriteGrant) error {
	if g == WriteCreateOnly {
		return c.createdMeanwhile(p, name)
	}
	return stale(c, p, name, "File was created since the change was prepared", "read it with read_file and retry")
}
