package hostfn

import (
	"bytes"
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math/bits"
	"path"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/toolhost/toolhost/abi"
	"github.com/toolhost/toolhost/host/internal/ctxio"
	"github.com/toolhost/toolhost/host/internal/sandbox"
)

// The operations of fs_commit besides writing a file: removing a file,
// link or tree (abi.CommitDelete), making a directory (abi.CommitMkdir)
// and moving (abi.CommitMove). Each is checked as a write is (the
// sandbox, the call's write grants and read scope) and more: every entry
// of a tree removed or moved must be one a tool may write, so nothing is
// carried into or out of git's internals, toolhost's configuration, its
// state or a denied path; a removal names the entry itself (a link, never
// what it leads to). Everything removed or replaced is journaled first,
// a tree entry by entry, so that toolhost undo can put it back.

// knownCommitFlags are the flags of a CommitFile this host understands;
// any other is refused rather than ignored, so an operation a newer
// plugin asks for is never taken for a plain write.
const knownCommitFlags = abi.CommitNew | abi.CommitCreateDirs | abi.CommitDelete | abi.CommitRecursive |
	abi.CommitMkdir | abi.CommitMove | abi.CommitOverwrite

// maxTreeEntries bounds the entries one removal or move of a directory
// may hold: each is checked, journaled and, on undo, restored one by
// one, so a tree of a million files would hold the call, the journal and
// the approval far longer than any person waits. Larger trees are
// refused, saying to remove them in parts.
const maxTreeEntries = 10000

// firstLines is how many lines of a file a removal's description shows,
// and maxShownLine how many bytes of each.
const (
	firstLines   = 10
	maxShownLine = 160
)

// opKind is what one CommitFile does.
type opKind uint8

const (
	opWrite opKind = iota
	opDelete
	opMkdir
	opMove
)

func kindOf(flags uint32) opKind {
	switch {
	case flags&abi.CommitDelete != 0:
		return opDelete
	case flags&abi.CommitMkdir != 0:
		return opMkdir
	case flags&abi.CommitMove != 0:
		return opMove
	}
	return opWrite
}

// verb names an operation in messages.
func (k opKind) verb() string {
	switch k {
	case opDelete:
		return "delete"
	case opMkdir:
		return "create directory"
	case opMove:
		return "move"
	}
	return "write"
}

// checkOp refuses a malformed operation and one the plugin's
// capabilities do not grant, before any path is resolved.
func (c *Call) checkOp(i int, cf abi.CommitFile) error {
	if extra := cf.Flags &^ knownCommitFlags; extra != 0 {
		return fail(abi.StatusInvalid, abi.KindExecutionFailed,
			"fs_commit: operation %d (%s) has flags %#x this host does not know; nothing was changed. Build the plugin against this host's sdk", i, cf.Path, extra)
	}
	if bits.OnesCount32(cf.Flags&abi.CommitOps) > 1 {
		return fail(abi.StatusInvalid, abi.KindExecutionFailed,
			"fs_commit: operation %d (%s) asks for more than one of delete, mkdir and move; nothing was changed. Send each as its own operation", i, cf.Path)
	}
	k := kindOf(cf.Flags)
	var wrong []string
	if cf.Flags&abi.CommitRecursive != 0 && k != opDelete {
		wrong = append(wrong, "recursive is for a removal only")
	}
	if cf.Flags&abi.CommitOverwrite != 0 && k != opMove {
		wrong = append(wrong, "overwrite is for a move only")
	}
	if cf.Flags&(abi.CommitNew|abi.CommitCreateDirs) != 0 && k != opWrite {
		wrong = append(wrong, "new and create_dirs are for writing a file only (a move creates the destination's parents itself)")
	}
	if (k == opDelete || k == opMkdir) && len(cf.Data) > 0 {
		wrong = append(wrong, "a removal or a directory has no content")
	}
	if k == opMove && len(cf.Data) == 0 {
		wrong = append(wrong, "a move's data must be the source path")
	}
	if len(wrong) > 0 {
		return fail(abi.StatusInvalid, abi.KindExecutionFailed, "fs_commit: operation %d (%s): %s; nothing was changed", i, cf.Path, strings.Join(wrong, "; "))
	}
	need := abi.CapFSWrite
	if k == opDelete || k == opMove {
		need = abi.CapFSDelete
	}
	if !slices.Contains(c.Capabilities, need) {
		return fail(abi.StatusNotGranted, abi.KindExecutionFailed,
			"fs_commit: call %s may not %s %s: that needs the capability %s, which the plugin's manifest does not declare; nothing was changed. Use a tool that declares it (delete_file, move_file) or add it to the plugin's manifest",
			c.CallID, k.verb(), cf.Path, need)
	}
	if c.Additive && (k == opDelete || k == opMove || (k == opWrite && cf.Flags&abi.CommitNew == 0)) {
		return fail(abi.StatusNotGranted, abi.KindExecutionFailed,
			"fs_commit: call %s may not %s %s: its tool's manifest says it only adds (additive), so it may create files and directories and never replace, remove or move one; nothing was changed",
			c.CallID, k.verb(), cf.Path)
	}
	return nil
}

// ResolveEntry resolves name as Sandbox.Resolve does, except that a final
// component that is a symbolic link names the link itself, not what it
// leads to: what a removal or a move acts on. The link's own path is
// checked against the denied patterns; where it leads is never looked
// at, so a link to toolhost's state or out of the roots can be removed
// (the link only) though it could never be followed. Any other name
// resolves exactly as Resolve resolves it.
func ResolveEntry(sb *sandbox.Sandbox, name string) (sandbox.Path, error) {
	p, err := sb.Resolve(name)
	slashed := filepath.ToSlash(name)
	dir, base := path.Split(slashed)
	if base == "" || base == "." || base == ".." {
		return p, err
	}
	if dir == "" {
		dir = "."
	}
	parent, perr := sb.Resolve(filepath.FromSlash(dir))
	if perr != nil {
		return p, err
	}
	entry := parent.Child(base)
	fi, lerr := entry.Lstat()
	if lerr != nil || fi.Mode()&fs.ModeSymlink == 0 {
		return p, err
	}
	if pattern, denied := sb.Denied(entry.Abs); denied {
		return sandbox.Path{}, &sandbox.DenialError{Reason: sandbox.DeniedPatternMatched, Attempted: name, Resolved: entry.Abs, Pattern: pattern}
	}
	entry.Attempted = name
	return entry, nil
}

// resolveEntry resolves a path a removal or a move names (ResolveEntry),
// as the engine resolved it before the plugin ran when it did, and
// refuses one outside the call's read scope: a call touches only what
// its arguments name.
func (c *Call) resolveEntry(name string) (sandbox.Path, error) {
	name = trimSlashes(name)
	p, ok := c.Resolved[name]
	if !ok {
		var err error
		if p, err = ResolveEntry(c.Sandbox, name); err != nil {
			return p, c.classifyOp(name, err)
		}
	}
	if c.Readable != nil && !c.Readable.allows(p) {
		return p, c.notNamed("fs_commit", name, p)
	}
	return p, nil
}

// trimSlashes drops the slashes ending a path a removal or move names:
// "build/" names the directory build, which is what is removed or moved.
func trimSlashes(name string) string {
	for len(name) > 1 && (strings.HasSuffix(name, "/") || strings.HasSuffix(name, string(filepath.Separator))) {
		name = name[:len(name)-1]
	}
	return name
}

// resolveOp validates a removal, directory or move: its paths in the
// sandbox, the call's read scope and write grants, and that the
// sandbox lets a tool write them. What is at the paths is checked later,
// under their locks (checkOpNow).
func resolveOp(c *Call, f *Files, cf abi.CommitFile) (commitTarget, error) {
	t := commitTarget{CommitFile: cf, op: kindOf(cf.Flags)}
	var err error
	switch t.op {
	case opMkdir:
		t.p, err = c.resolveRead("fs_commit", trimSlashes(cf.Path))
		if err != nil {
			return t, c.classifyOp(cf.Path, err)
		}
	case opDelete:
		if t.p, err = c.resolveEntry(cf.Path); err != nil {
			return t, err
		}
	case opMove:
		if t.src, err = c.resolveEntry(string(cf.Data)); err != nil {
			return t, err
		}
		if t.p, err = c.resolveEntry(cf.Path); err != nil {
			return t, err
		}
	}
	for _, p := range t.paths() {
		if p.Rel == "." && t.op != opMkdir {
			return t, fail(abi.StatusDenied, abi.KindSandboxViolation,
				"call %s: %s is a root of the sandbox; toolhost does not %s a root, nothing was changed", c.CallID, p.Attempted, t.op.verb())
		}
		if t.grant, err = f.writeGrant(c, p, p.Attempted); err != nil {
			return t, err
		}
		if err := c.Sandbox.CheckWrite(p); err != nil {
			return t, c.opDenied(t, p, err)
		}
	}
	if t.op == opMove {
		switch {
		case t.src.Abs == t.p.Abs:
			return t, fail(abi.StatusInvalid, abi.KindBadArgs, "call %s: %s and %s are the same path; nothing was moved", c.CallID, t.src.Attempted, cf.Path)
		case within(t.p.Abs, t.src.Abs):
			return t, fail(abi.StatusInvalid, abi.KindBadArgs, "call %s: %s is inside %s, and a directory cannot be moved into itself; nothing was moved. Choose a destination outside it", c.CallID, cf.Path, t.src.Attempted)
		}
		// Overwriting replaces the destination: it needs the
		// approval a replacement needs, never only a creation's.
		t.grant = WriteAny
	}
	return t, nil
}

// paths are the paths an operation changes: the destination and, for a
// move, the source.
func (t commitTarget) paths() []sandbox.Path {
	if t.op == opMove {
		return []sandbox.Path{t.src, t.p}
	}
	return []sandbox.Path{t.p}
}

// opDenied explains a path of an operation the sandbox does not let a
// tool write.
func (c *Call) opDenied(t commitTarget, p sandbox.Path, err error) error {
	e := c.classifyOp(p.Attempted, err)
	var de *sandbox.DenialError
	if errors.As(err, &de) {
		e.Message = fmt.Sprintf("call %s may not %s %s: %s; nothing was changed", c.CallID, t.op.verb(), p.Attempted, de.Error())
	}
	return e
}

// within reports whether path is dir or below it.
func within(path, dir string) bool {
	rel, err := filepath.Rel(dir, path)
	return err == nil && (rel == "." || filepath.IsLocal(rel))
}

// overlapping refuses operations of one commit that touch the same entry
// or one inside another's tree (removing a directory and writing a file
// in it): their order would decide what is left, so they are made in
// separate commits.
func overlapping(targets []commitTarget) error {
	type named struct{ abs, name string }
	var all []named
	for _, t := range targets {
		for _, p := range t.paths() {
			all = append(all, named{p.Abs, p.Attempted})
		}
	}
	for i, a := range all {
		for _, b := range all[i+1:] {
			if within(a.abs, b.abs) || within(b.abs, a.abs) {
				return fail(abi.StatusInvalid, abi.KindExecutionFailed,
					"fs_commit: %s and %s are the same entry or one is inside the other; nothing was changed. Change them in separate calls", a.name, b.name)
			}
		}
	}
	return nil
}

// treeEntry is one entry of what a removal or move takes: the top, or
// something below a directory.
type treeEntry struct {
	p    sandbox.Path
	rel  string      // below the top, slash-separated; "" for the top
	mode fs.FileMode // type bits and permissions, as Lstat gave them
	size int64
}

// tree is what a removal or move takes, checked entry by entry.
type tree struct {
	entries []treeEntry // the top first, then depth first in name order
	files   int         // regular files and links
	dirs    int         // directories, the top included
	bytes   int64       // of the regular files
}

// walkTree lists what removing or moving top takes, refusing, with the
// first offending entry named, a tree that holds anything no tool may
// write (git's internals, toolhost's configuration, its state, a denied
// or read-only path), another root of the sandbox, an entry that is not
// a file, link or directory, or more than maxTreeEntries entries. Links
// are entries of their own and never followed.
func walkTree(ctx context.Context, c *Call, verb string, top sandbox.Path) (*tree, error) {
	fi, err := top.Lstat()
	if err != nil {
		return nil, c.classifyOp(top.Attempted, err)
	}
	tr := &tree{}
	if err := tr.add(c, verb, top, treeEntry{p: top, mode: fi.Mode(), size: fi.Size()}); err != nil {
		return nil, err
	}
	if !fi.IsDir() {
		return tr, nil
	}
	for _, root := range c.Sandbox.Roots() {
		if root != top.Abs && within(root, top.Abs) {
			return nil, fail(abi.StatusDenied, abi.KindSandboxViolation,
				"call %s may not %s %s: it holds %s, another root of the sandbox; nothing was changed", c.CallID, verb, top.Attempted, root)
		}
	}
	return tr, tr.walk(ctx, c, verb, top, "")
}

func (tr *tree) walk(ctx context.Context, c *Call, verb string, dir sandbox.Path, rel string) error {
	if err := ctx.Err(); err != nil {
		return interrupted(err, "the call reached its deadline while listing what "+verb+" would take; nothing was changed")
	}
	list, more, err := dir.ReadDirFirst(maxTreeEntries+1-len(tr.entries), nil)
	if err != nil {
		return c.classifyOp(dir.Attempted, err)
	}
	if more {
		return tr.tooMany(c, verb, dir)
	}
	for _, de := range list {
		child := dir.Child(de.Name())
		fi, err := de.Info()
		if err != nil {
			return c.classifyOp(child.Attempted, err)
		}
		crel := path.Join(rel, de.Name())
		if err := tr.add(c, verb, dir, treeEntry{p: child, rel: crel, mode: fi.Mode(), size: fi.Size()}); err != nil {
			return err
		}
		if fi.IsDir() {
			if err := tr.walk(ctx, c, verb, child, crel); err != nil {
				return err
			}
		}
	}
	return nil
}

// add checks one entry and counts it.
func (tr *tree) add(c *Call, verb string, dir sandbox.Path, e treeEntry) error {
	if len(tr.entries) >= maxTreeEntries {
		return tr.tooMany(c, verb, dir)
	}
	if e.rel != "" {
		if err := c.Sandbox.CheckWrite(e.p); err != nil {
			return treeRefusal(c, verb, tr.top(e), e, err)
		}
	}
	switch t := e.mode.Type(); {
	case t == 0:
		tr.files++
		tr.bytes += e.size
	case t == fs.ModeSymlink:
		tr.files++
	case t == fs.ModeDir:
		tr.dirs++
	default:
		return fail(abi.StatusWrongType, abi.KindExecutionFailed,
			"call %s may not %s %s: %s is not a file, link or directory (%s), which toolhost could not restore; nothing was changed. Remove it with the operator's own tools",
			c.CallID, verb, tr.top(e), e.p.Attempted, e.mode.Type())
	}
	tr.entries = append(tr.entries, e)
	return nil
}

func (tr *tree) top(e treeEntry) string {
	if len(tr.entries) == 0 {
		return e.p.Attempted
	}
	return tr.entries[0].p.Attempted
}

func (tr *tree) tooMany(c *Call, verb string, dir sandbox.Path) error {
	return fail(abi.StatusTooLarge, abi.KindExecutionFailed,
		"call %s may not %s %s: it holds more than %d entries (at %s), more than toolhost checks and journals in one call; nothing was changed. Do it in parts, one subdirectory at a time",
		c.CallID, verb, tr.top(treeEntry{p: dir}), maxTreeEntries, dir.Attempted)
}

// treeRefusal says which entry below a tree keeps it from being removed
// or moved.
func treeRefusal(c *Call, verb, top string, e treeEntry, err error) error {
	var de *sandbox.DenialError
	if !errors.As(err, &de) {
		return c.classifyOp(e.p.Attempted, err)
	}
	why := de.Reason.String()
	if de.Pattern != "" {
		why += " (" + de.Pattern + ")"
	}
	he := &Error{
		Status: abi.StatusDenied, Kind: abi.KindSandboxViolation,
		Message: fmt.Sprintf("call %s may not %s %s: it holds %s, which no tool may change: %s; nothing was changed. Leave that entry where it is and %s the others one by one",
			c.CallID, verb, top, e.p.Attempted, why, verb),
		Details: denialDetails(de),
	}
	he.Details["entry"] = e.p.Attempted
	return he
}

// destinations checks that every entry of a tree moved to dst may be
// written there: nothing may be carried into a place no tool writes,
// whatever its name was where it came from.
func destinations(c *Call, tr *tree, dst sandbox.Path) ([]sandbox.Path, error) {
	out := make([]sandbox.Path, len(tr.entries))
	for i, e := range tr.entries {
		p := dst
		if e.rel != "" {
			for _, name := range strings.Split(e.rel, "/") {
				p = p.Child(name)
			}
			if err := c.Sandbox.CheckWrite(p); err != nil {
				var de *sandbox.DenialError
				if errors.As(err, &de) {
					he := c.classifyOp(p.Attempted, err)
					he.Message = fmt.Sprintf("call %s may not move %s to %s: %s would become %s, which no tool may write: %s; nothing was changed",
						c.CallID, tr.entries[0].p.Attempted, dst.Attempted, e.p.Attempted, p.Attempted, de.Error())
					return nil, he
				}
				return nil, c.classifyOp(p.Attempted, err)
			}
		}
		out[i] = p
	}
	return out, nil
}

// checkOpNow checks, holding the paths' locks, what is at an operation's
// paths now, and lists what it takes.
func checkOpNow(ctx context.Context, c *Call, f *Files, t *commitTarget) error {
	switch t.op {
	case opMkdir:
		fi, err := t.p.Lstat()
		switch {
		case errors.Is(err, fs.ErrNotExist):
			return nil
		case err != nil:
			return c.classifyOp(t.Path, err)
		case !fi.IsDir():
			return fail(abi.StatusWrongType, abi.KindExecutionFailed,
				"call %s: %s exists and is not a directory (%s); nothing was created. Choose another name, or delete it first", c.CallID, t.Path, entryKind(t.p, fi.Mode()))
		}
		t.exists = true
		return nil
	case opDelete:
		fi, err := t.p.Lstat()
		if errors.Is(err, fs.ErrNotExist) {
			return fail(abi.StatusNotFound, abi.KindExecutionFailed, "call %s: %s: no such file or directory, so there is nothing to delete; check the path with list_directory", c.CallID, t.Path)
		}
		if err != nil {
			return c.classifyOp(t.Path, err)
		}
		if fi.IsDir() && t.Flags&abi.CommitRecursive == 0 {
			return fail(abi.StatusWrongType, abi.KindExecutionFailed,
				"call %s: %s is a directory; nothing was deleted. To delete it and everything below it, set recursive", c.CallID, t.Path)
		}
		t.tree, err = walkTree(ctx, c, "delete", t.p)
		return err
	}
	// A move.
	fi, err := t.src.Lstat()
	if errors.Is(err, fs.ErrNotExist) {
		return fail(abi.StatusNotFound, abi.KindExecutionFailed, "call %s: %s: no such file or directory, so there is nothing to move; check the path with list_directory", c.CallID, t.src.Attempted)
	}
	if err != nil {
		return c.classifyOp(t.src.Attempted, err)
	}
	if t.tree, err = walkTree(ctx, c, "move", t.src); err != nil {
		return err
	}
	if t.dsts, err = destinations(c, t.tree, t.p); err != nil {
		return err
	}
	dfi, err := t.p.Lstat()
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return nil
	case err != nil:
		return c.classifyOp(t.Path, err)
	case t.Flags&abi.CommitOverwrite == 0:
		return fail(abi.StatusInvalid, abi.KindExecutionFailed,
			"call %s: %s exists; nothing was moved. To replace it, read it with read_file and move again with overwrite, or choose another destination", c.CallID, t.Path)
	case !dfi.Mode().IsRegular() || !fi.Mode().IsRegular():
		return fail(abi.StatusWrongType, abi.KindExecutionFailed,
			"call %s: %s exists and overwrite replaces only a file with a file (it is %s, the source %s); nothing was moved. Delete it first", c.CallID, t.Path, entryKind(t.p, dfi.Mode()), entryKind(t.src, fi.Mode()))
	}
	t.exists = true
	// Replacing the destination loses its content: as for any other
	// replacement, the conversation must have read it, unchanged since.
	if !f.based(t.p) {
		return stale(c, t.p, t.Path, "File was not read before overwriting", "read it with read_file first, then retry")
	}
	sum, err := fileSum(ctx, t.p)
	if err != nil {
		return c.classifyOp(t.Path, err)
	}
	return checkSum(c, f, t.p, t.Path, sum, "overwriting")
}

// lockTrees holds, for the rest of the commit, the locks of every entry
// below a tree removed or moved (the tops are locked already), so that
// no other call of this host writes one of them between the journal's
// record and the removal; then it checks the trees again, now that
// nothing of this host can change them, and refuses one that changed in
// between. nil when no operation takes a tree.
func lockTrees(ctx context.Context, c *Call, f *Files, targets []commitTarget) (unlock func(), err error) {
	var below []sandbox.Path
	seen := map[string]bool{}
	for _, t := range targets {
		if t.tree == nil {
			continue
		}
		for _, e := range t.tree.entries {
			if e.rel != "" && !seen[e.p.Abs] {
				seen[e.p.Abs] = true
				below = append(below, e.p)
			}
		}
	}
	if len(below) == 0 {
		return nil, nil
	}
	unlock, err = c.lock(ctx, below...)
	if err != nil {
		return nil, err
	}
	for i := range targets {
		t := &targets[i]
		if t.tree == nil {
			continue
		}
		was := t.tree
		if err := checkOpNow(ctx, c, f, t); err != nil {
			unlock()
			return nil, err
		}
		if !sameTree(was, t.tree) {
			unlock()
			return nil, fail(abi.StatusStale, abi.KindStaleFile,
				"call %s: %s changed while toolhost checked it (another call or program added, removed or changed an entry); nothing was changed. Look at it again, then retry", c.CallID, t.tree.entries[0].p.Attempted)
		}
	}
	return unlock, nil
}

// sameTree reports whether two listings of a tree name the same entries
// of the same kinds and sizes.
func sameTree(a, b *tree) bool {
	if len(a.entries) != len(b.entries) {
		return false
	}
	for i, e := range a.entries {
		o := b.entries[i]
		if e.p.Abs != o.p.Abs || e.mode != o.mode || (e.mode.IsRegular() && e.size != o.size) {
			return false
		}
	}
	return true
}

// missingDirs are the directories making p would create, top-most first.
func missingDirs(p sandbox.Path) []sandbox.Path {
	var out []sandbox.Path
	for cur := p; cur.Rel != "." && cur.Rel != ""; {
		if _, err := cur.Lstat(); !errors.Is(err, fs.ErrNotExist) {
			break
		}
		out = append(out, cur)
		parent, ok := parentOf(cur)
		if !ok {
			break
		}
		cur = parent
	}
	slices.Reverse(out)
	return out
}

// parentOf is the Path of p's parent directory in the same root, for
// naming the directories a commit creates.
func parentOf(p sandbox.Path) (sandbox.Path, bool) {
	dir := path.Dir(p.Rel)
	if p.Rel == "." || dir == p.Rel {
		return sandbox.Path{}, false
	}
	// Rebuild from the root down: Child needs a resolved ancestor, and
	// p's root directory is one.
	q := rootOf(p)
	if dir == "." {
		return q, true
	}
	for _, name := range strings.Split(dir, "/") {
		q = q.Child(name)
	}
	return q, true
}

// rootOf is the Path of p's root directory.
func rootOf(p sandbox.Path) sandbox.Path {
	q := p
	q.Rel, q.Abs, q.Attempted, q.Dir = ".", p.RootDir, p.RootDir, false
	return q
}

// describeOp is what a dry run of an operation says: what it would do,
// what it would take, and whether undo could restore it.
func describeOp(ctx context.Context, c *Call, t commitTarget) (string, error) {
	var b strings.Builder
	switch t.op {
	case opMkdir:
		if t.exists {
			fmt.Fprintf(&b, "%s exists already as a directory; nothing would change\n", c.display(t.p))
			return b.String(), nil
		}
		made := missingDirs(t.p)
		fmt.Fprintf(&b, "would create directory %s", c.display(t.p))
		if len(made) > 1 {
			names := make([]string, len(made)-1)
			for i, d := range made[:len(made)-1] {
				names[i] = c.display(d)
			}
			fmt.Fprintf(&b, " and its missing parents %s", strings.Join(names, ", "))
		}
		b.WriteString("\n")
		return b.String(), nil
	case opDelete:
		fmt.Fprintf(&b, "would delete %s", c.display(t.p))
	case opMove:
		fmt.Fprintf(&b, "would move %s to %s", c.display(t.src), c.display(t.p))
		if t.exists {
			fi, _ := t.p.Lstat()
			size := int64(0)
			if fi != nil {
				size = fi.Size()
			}
			fmt.Fprintf(&b, ", replacing the file there (%s)", plural(size, "byte"))
		} else if made := missingDirs(parentDir(t.p)); len(made) > 0 {
			fmt.Fprintf(&b, ", creating directory %s", c.display(made[len(made)-1]))
		}
	}
	top := t.tree.entries[0]
	switch top.mode.Type() {
	case fs.ModeDir:
		fmt.Fprintf(&b, ": a directory holding %s and %s, %s in all\n",
			plural(int64(t.tree.files), "file"), plural(int64(t.tree.dirs-1), "directory"), plural(t.tree.bytes, "byte"))
	case fs.ModeSymlink:
		target, _ := readLink(top.p)
		fmt.Fprintf(&b, ": a symbolic link to %s (the link itself; what it points to is kept)\n", strconv.Quote(target))
	default:
		b.WriteString(": ")
		if err := describeFile(ctx, c, &b, top); err != nil {
			return "", err
		}
	}
	b.WriteString(undoNote(c, t) + "\n")
	return b.String(), nil
}

// parentDir is the Path of p's parent; p itself for a root.
func parentDir(p sandbox.Path) sandbox.Path {
	q, ok := parentOf(p)
	if !ok {
		return p
	}
	return q
}

// describeFile says a file's size, line count and first lines, read no
// further than the call's scan limit.
func describeFile(ctx context.Context, c *Call, b *strings.Builder, e treeEntry) error {
	fmt.Fprintf(b, "a file of %s", plural(e.size, "byte"))
	file, err := e.p.OpenFile()
	if err != nil {
		return c.classifyOp(e.p.Attempted, err)
	}
	defer file.Close()
	limit := c.scanLimit()
	var buf bytes.Buffer
	if _, err := buf.ReadFrom(io.LimitReader(ctxio.Reader(ctx, file), limit+1)); err != nil {
		if stop := interrupted(err, "the call reached its deadline while reading "+e.p.Attempted+"; nothing was changed"); stop != nil {
			return stop
		}
		return c.classifyOp(e.p.Attempted, err)
	}
	data := buf.Bytes()
	whole := int64(len(data)) <= limit
	if !whole {
		data = data[:limit]
	}
	if isBinary(data, whole) || !validUTF8(data, whole) {
		b.WriteString(", binary (its content is not shown)\n")
		return nil
	}
	lines := bytes.Count(data, []byte("\n"))
	if len(data) > 0 && data[len(data)-1] != '\n' && whole {
		lines++
	}
	if whole {
		fmt.Fprintf(b, ", %s\n", plural(int64(lines), "line"))
	} else {
		fmt.Fprintf(b, ", more than %s (lines counted no further than max_scan_bytes)\n", plural(int64(lines), "line"))
	}
	if len(data) == 0 {
		return nil
	}
	b.WriteString("first lines:\n")
	rest := data
	for n := 1; n <= firstLines && len(rest) > 0; n++ {
		line, after, _ := bytes.Cut(rest, []byte("\n"))
		rest = after
		// Shown as approval diffs are: each line on its own, rendered
		// visibly where it is displayed; cut where it is too long.
		shown := string(line)
		if len(shown) > maxShownLine {
			cut := maxShownLine
			for cut > 0 && !utf8Start(shown[cut]) {
				cut--
			}
			shown = shown[:cut] + " [line cut]"
		}
		fmt.Fprintf(b, "%5d  %s\n", n, shown)
	}
	if more := lines - firstLines; more > 0 {
		fmt.Fprintf(b, "      [%s not shown]\n", plural(int64(more), "more line"))
	}
	return nil
}

func utf8Start(b byte) bool { return b&0xC0 != 0x80 }

// undoNote says whether toolhost undo could restore what the operation
// takes: the journal keeps at most its pre-image cap of content for one
// operation.
func undoNote(c *Call, t commitTarget) string {
	verb := "restore it"
	if t.op == opMove {
		verb = "move it back"
	}
	var limit int64
	switch {
	case c.Journal != nil:
		limit = c.Journal.MaxPreimageBytes()
	case c.DryRun && c.PreviewJournalBytes > 0:
		limit = c.PreviewJournalBytes // the previewed call's journal
	default:
		return "this cannot be undone: toolhost keeps no journal here"
	}
	if t.tree.bytes > limit {
		return fmt.Sprintf("this cannot be undone: its content is %s, more than journal max_preimage_bytes (%d) keeps for one operation", plural(t.tree.bytes, "byte"), limit)
	}
	if t.exists && t.op == opMove {
		if fi, err := t.p.Lstat(); err == nil && t.tree.bytes+fi.Size() > limit {
			return fmt.Sprintf("this cannot be undone: with the file it replaces its content is more than journal max_preimage_bytes (%d) keeps for one operation", limit)
		}
	}
	return "toolhost undo can " + verb
}

func plural(n int64, unit string) string {
	s := strconv.FormatInt(n, 10) + " " + unit
	if n != 1 {
		switch {
		case strings.HasSuffix(unit, "y"):
			s = s[:len(s)-1] + "ies"
		default:
			s += "s"
		}
	}
	return s
}

// readLink reads the link at p through its root.
func readLink(p sandbox.Path) (string, error) {
	if p.Root == nil {
		return "", fs.ErrInvalid
	}
	return p.Root.Readlink(p.Rel)
}

// opStates are the journal's records of what an operation takes (before)
// and leaves (after): every entry of a tree, directories with their
// modes, links with their targets, files with their content as far as
// budget allows (a file not kept whole is journaled as not undoable).
func opStates(ctx context.Context, t commitTarget, budget *int64) (before, after []FileState, err error) {
	// The directories made: absent before, directories after (their
	// modes are read again once they exist, madeModes).
	for _, d := range t.made {
		before = append(before, FileState{Path: d.Abs})
		after = append(after, FileState{Path: d.Abs, Exists: true, Mode: fs.ModeDir | 0o755})
	}
	switch t.op {
	case opMkdir:
		return before, after, nil
	case opMove:
		if t.exists {
			st, err := readPreimage(ctx, t.p, min(*budget, maxInt64))
			if err != nil {
				return nil, nil, err
			}
			*budget -= int64(len(st.Content))
			before = append(before, st)
		}
	}
	moved := make([]FileState, 0, len(t.tree.entries))
	for _, e := range t.tree.entries {
		st := FileState{Path: e.p.Abs, Exists: true, Mode: e.mode.Type() | e.mode.Perm(), Size: e.size}
		var sum [sha256.Size]byte
		switch e.mode.Type() {
		case fs.ModeDir:
			st.Size = 0
		case fs.ModeSymlink:
			target, err := readLink(e.p)
			if err != nil {
				return nil, nil, err
			}
			st.Content, st.Size = []byte(target), int64(len(target))
			sum = sha256.Sum256(st.Content)
		default:
			if st, sum, err = readEntry(ctx, e, budget); err != nil {
				return nil, nil, err
			}
		}
		before = append(before, st)
		after = append(after, FileState{Path: e.p.Abs})
		moved = append(moved, FileState{Exists: true, Mode: st.Mode, Size: st.Size, SHA256: sum})
	}
	if t.op == opMove {
		for i, d := range t.dsts {
			if !t.exists || i > 0 {
				before = append(before, FileState{Path: d.Abs})
			}
			m := moved[i]
			m.Path = d.Abs
			after = append(after, m)
		}
	}
	return before, after, nil
}

const maxInt64 = int64(^uint64(0) >> 1)

// readEntry reads a file of a tree for the journal: whole when it fits
// what is left of budget, with its digest; else only its mode and size,
// so that it is journaled as not undoable.
func readEntry(ctx context.Context, e treeEntry, budget *int64) (FileState, [sha256.Size]byte, error) {
	st := FileState{Path: e.p.Abs, Exists: true, Mode: e.mode.Perm(), Size: e.size}
	if e.size > *budget {
		*budget = -1 // nothing after it is kept either: undo is all or nothing
		return st, [sha256.Size]byte{}, nil
	}
	file, err := e.p.OpenFile()
	if err != nil {
		return st, [sha256.Size]byte{}, err
	}
	defer file.Close()
	var buf bytes.Buffer
	if _, err := buf.ReadFrom(io.LimitReader(ctxio.Reader(ctx, file), *budget+1)); err != nil {
		return st, [sha256.Size]byte{}, err
	}
	st.Content = buf.Bytes()
	if n := int64(len(st.Content)); n > *budget {
		*budget = -1
		return st, [sha256.Size]byte{}, nil
	}
	st.Size = int64(len(st.Content))
	*budget -= st.Size
	return st, sha256.Sum256(st.Content), nil
}

// stageOp adds an operation to txn; created reports a directory made.
func stageOp(txn *sandbox.Txn, t commitTarget) (created bool, err error) {
	switch t.op {
	case opMkdir:
		return txn.StageMkdir(t.p)
	case opDelete:
		return false, txn.StageRemove(t.p, t.Flags&abi.CommitRecursive != 0)
	}
	return false, txn.StageMove(t.src, t.p, t.Flags&abi.CommitOverwrite != 0, true)
}

// opInfo is what the commit's response says of an operation.
func opInfo(c *Call, t commitTarget, created bool) abi.WriteInfo {
	wi := abi.WriteInfo{Path: c.display(t.p)}
	if t.tree != nil {
		wi.Size = t.tree.bytes
	}
	if created {
		wi.Flags |= abi.WriteCreated
	}
	return wi
}

// madeModes sets, in after, the modes the directories t made have now
// that they exist.
func madeModes(t commitTarget, after []FileState) {
	for _, d := range t.made {
		fi, err := d.Lstat()
		if err != nil {
			continue
		}
		for i := range after {
			if after[i].Path == d.Abs {
				after[i].Mode = fs.ModeDir | fi.Mode().Perm()
			}
		}
	}
}

// entryKind names what is at p, of mode m, in a message.
func entryKind(p sandbox.Path, m fs.FileMode) string {
	switch m.Type() {
	case 0:
		return "a regular file"
	case fs.ModeDir:
		return "a directory"
	case fs.ModeSymlink:
		return "a symbolic link"
	}
	return fileKind(p, m)
}

// classifyOp is classify for an operation of c: a path swapped under it
// (escaped) is named with the call.
func (c *Call) classifyOp(name string, err error) *Error {
	e := classify(name, err)
	if escaped(err) {
		e.Message = "call " + c.CallID + ": " + e.Message
	}
	return e
}
