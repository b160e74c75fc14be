package sandbox

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strings"
)

// ErrIsDirectory is returned (wrapped in an *fs.PathError) by StageRemove
// without recursive when the entry is a directory.
var ErrIsDirectory = errors.New("is a directory; removing it takes recursive, which removes everything under it")

// ErrNotDirectory is returned (wrapped in an *fs.PathError) by StageMkdir
// when the path, or one of its parents, exists and is not a directory.
var ErrNotDirectory = errors.New("exists and is not a directory")

// errCrossRoot is a rename between two roots where the system cannot
// rename between two open directories; the move copies instead.
var errCrossRoot = errors.New("rename between roots is not possible here")

// StageRemove stages the removal of the entry p names: a regular file,
// a symbolic link, anything else that is not a directory, or with
// recursive a directory and everything under it. The final component is
// never followed: for a link, the link itself is removed, wherever it
// points (inside the roots, at toolhost's state, outside), and nothing it
// points at is looked at. p comes from Resolve, which follows a final
// link to its target; to name the link itself, resolve its parent and
// take Child(name), whose own path CheckWrite and the denied patterns
// still check.
//
// Errors at staging: an error matching fs.ErrNotExist when nothing is
// there, ErrIsDirectory for a directory without recursive, a
// *DenialError for a path no tool may write. Nothing changes until
// Commit, which renames the entry to a backup name beside it (one atomic
// rename, a whole tree at once); a later failure, or Recover after a
// crash, renames it back, and the end of a successful commit removes the
// backup (tree).
func (t *Txn) StageRemove(p Path, recursive bool) error {
	return t.stageRemove(p, recursive, false)
}

// StageDelete is StageRemove of a regular file, which undo uses: any
// other entry is refused with ErrNotRegular.
func (t *Txn) StageDelete(p Path) error { return t.stageRemove(p, false, true) }

func (t *Txn) stageRemove(p Path, recursive, regularOnly bool) error {
	if err := t.checkStage(entryPath(p)); err != nil {
		return err
	}
	d, err := t.dirs.open(p, nil)
	if err != nil {
		return err
	}
	f := &txnFile{kind: opRemove, p: p, dir: d.id, base: path.Base(p.Rel), id: newStageID()}
	fi, err := d.root.Lstat(f.base)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return &fs.PathError{Op: "remove", Path: p.Attempted, Err: fs.ErrNotExist}
	case err != nil:
		return &fs.PathError{Op: "remove", Path: p.Attempted, Err: err}
	case regularOnly && !fi.Mode().IsRegular():
		return &fs.PathError{Op: "write", Path: p.Attempted, Err: ErrNotRegular}
	case fi.IsDir() && !recursive:
		return &fs.PathError{Op: "remove", Path: p.Attempted, Err: ErrIsDirectory}
	}
	if err := p.wantDir(fi.Mode()); err != nil {
		return err
	}
	f.tree = fi.IsDir()
	if f.tree {
		if err := t.s.checkTree(p, nil); err != nil {
			return err
		}
	}
	if t.s.recoveryDir != "" {
		if err := t.record(f, false, nil); err != nil {
			return err
		}
	}
	t.add(f)
	return nil
}

// checkTree refuses a directory whose removal or move would take
// something no tool may write: another root of the sandbox, a mount
// point, or any entry
// CheckWrite refuses (git's internals, toolhost's configuration and
// state, a denied or read-only path). With dst set (a move) each entry's
// new path must be writable too: nothing is carried into a place no tool
// writes. Links are entries and never followed. Callers that list the
// tree anyway check the same; the sandbox checks it whatever they do.
func (s *Sandbox) checkTree(top Path, dst *Path) error {
	for _, r := range s.roots {
		if r.dir != top.Abs && within(r.dir, top.Abs) {
			return fmt.Errorf("%w: %s holds %s, another root of the sandbox, which no tool may remove or move; nothing was changed", ErrDenied, top.Attempted, r.dir)
		}
	}
	topInfo, err := top.Lstat()
	if err != nil {
		return err
	}
	var walk func(dir Path, to *Path) error
	walk = func(dir Path, to *Path) error {
		entries, err := dir.ReadDir()
		if err != nil {
			return err
		}
		for _, e := range entries {
			c := dir.Child(e.Name())
			if err := s.CheckWrite(c); err != nil {
				return err
			}
			var ct *Path
			if to != nil {
				n := to.Child(e.Name())
				if err := s.CheckWrite(n); err != nil {
					return err
				}
				ct = &n
			}
			if !e.IsDir() {
				continue
			}
			// A file system mounted inside is not the tree's to take:
			// removing it would empty whatever is mounted there.
			if fi, err := c.Lstat(); err != nil {
				return err
			} else if !sameDevice(fi, topInfo) {
				return fmt.Errorf("%w: %s holds %s, where another file system is mounted, which no tool may remove or move; nothing was changed", ErrDenied, top.Attempted, c.Attempted)
			}
			if err := walk(c, ct); err != nil {
				return err
			}
		}
		return nil
	}
	return walk(top, dst)
}

// entryPath is p as a write checks it: a removal, a move or a directory
// may name a directory with a trailing slash.
func entryPath(p Path) Path {
	p.Dir = false
	return p
}

// add appends a staged entry.
func (t *Txn) add(f *txnFile) {
	t.files = append(t.files, f)
	if hook := t.s.testHookAfterStage; hook != nil {
		hook(len(t.files) - 1)
	}
}

// commitRemove renames entry i to its backup name: one rename removes it
// and keeps it for a rollback; the end of the commit removes the backup.
func (t *Txn) commitRemove(i int, f *txnFile) error {
	if err := t.step(i, ""); err != nil {
		return err
	}
	d, err := t.dirs.open(f.p, f.dir)
	if err != nil {
		return err
	}
	fi, err := d.root.Lstat(f.base)
	if err != nil {
		return fmt.Errorf("remove: %w", err)
	}
	if fi.IsDir() != f.tree {
		return fmt.Errorf("remove: %s changed between directory and file since it was checked; nothing was removed", f.p.Attempted)
	}
	name := leftoverName(bakKind, f.id, f.base)
	if err := renameEntry(d, f.base, d, name); err != nil {
		return fmt.Errorf("remove: %w", err)
	}
	f.backup, f.done = name, true
	return nil
}

// StageMkdir stages directory p and its missing parents. Unlike the other
// steps it takes effect at once, so that files staged later in the same
// Txn can go into it: the directories are created now (mode 0777 less the
// umask, as mkdir -p makes them), each recorded first, and a Txn that
// does not commit (a failure, a Close without Commit, Recover after a
// crash) removes the ones it created, newest first, if they are still
// empty. created reports that p did not exist. An existing directory is
// success; an existing file there, or as a parent, is an error matching
// ErrNotDirectory.
func (t *Txn) StageMkdir(p Path) (created bool, err error) {
	q := entryPath(p)
	if p.Rel == "." {
		// The root exists; only the sandbox's own checks apply.
		if t.closed {
			return false, errors.New("sandbox: Stage on a closed transaction")
		}
		return false, t.s.owns(q)
	}
	if err := t.checkStage(q); err != nil {
		return false, err
	}
	return t.mkdirAll(p, p.Rel)
}

// mkdirParents creates p's missing parent directories (createDirs).
func (t *Txn) mkdirParents(p Path) error {
	dirRel := path.Dir(p.Rel)
	if dirRel == "." {
		return nil
	}
	_, err := t.mkdirAll(p, dirRel)
	return err
}

// mkdirAll creates each missing directory of rel, a path in p's root,
// one component at a time in its parent opened and checked like any
// write's (a parent swapped for a symlink is refused), recording each
// before it is made. created reports that the last one was made.
func (t *Txn) mkdirAll(p Path, rel string) (created bool, err error) {
	comps := strings.Split(rel, "/")
	for i, c := range comps {
		sub := strings.Join(comps[:i+1], "/")
		q := Path{
			Attempted: sub, Abs: filepath.Join(p.RootDir, filepath.FromSlash(sub)),
			Root: p.Root, RootDir: p.RootDir, Rel: sub, root: p.root,
		}
		if sub == p.Rel {
			q.Attempted = p.Attempted
		}
		d, err := t.dirs.open(q, nil)
		if err != nil {
			return false, err
		}
		fi, err := d.root.Lstat(c)
		switch {
		case err == nil && fi.IsDir():
			created = false
			continue
		case err == nil:
			return false, &fs.PathError{Op: "mkdir", Path: q.Attempted, Err: ErrNotDirectory}
		case !errors.Is(err, fs.ErrNotExist):
			return false, err
		}
		f := &txnFile{kind: opMkdir, p: q, dir: d.id, base: c, id: newStageID()}
		if t.s.recoveryDir != "" {
			if err := t.record(f, true, nil); err != nil {
				return false, err
			}
		}
		if err := d.root.Mkdir(c, 0o777); err != nil {
			if t.intent != nil {
				t.intent.drop(leftoverName(tmpKind, f.id, f.base))
			}
			if fi, lerr := d.root.Lstat(c); errors.Is(err, fs.ErrExist) && lerr == nil && fi.IsDir() {
				created = false // made by someone else meanwhile: theirs
				continue
			}
			return false, err
		}
		f.done = true
		t.add(f)
		created = true
	}
	return created, nil
}

// rmdirEmpty removes the directory name in d if it is empty; a directory
// that is not (someone put a file there) is kept, and so is anything
// that is not a directory.
func rmdirEmpty(d *parentDir, name string) (removed bool) {
	err := rmdirAt(d.file, name)
	if errors.Is(err, errors.ErrUnsupported) {
		fi, lerr := d.root.Lstat(name)
		if lerr != nil || !fi.IsDir() {
			return false
		}
		err = d.root.Remove(name)
	}
	return err == nil
}

// StageMove stages moving the entry src names (a file, a symbolic link,
// which is moved as a link and never followed, or a directory with
// everything under it) to dst. src's final component is handled like
// StageRemove's (name a link by its parent's Child). Both paths must be
// writable (CheckWrite); dst must not be src or lie inside it, nor
// contain it.
//
// dst must not exist unless overwrite is set: then what is there at
// Commit is renamed to a backup name first, exactly as a replace keeps
// its old content, and put back if the Txn fails. If dst did not exist
// when staged, Commit refuses one that appeared since, as Stage does.
// With createDirs, dst's missing parents are created now (as
// StageMkdir), and removed again if the Txn does not commit.
//
// Within one file system Commit renames src to dst (atomically, never
// replacing: renameat2 RENAME_NOREPLACE on Linux). Across file systems
// (known when staged, or the rename says EXDEV) the entry is copied to
// a temporary name beside dst — modes, modification times and, where
// the process may, owners kept; links copied as links, never followed;
// hard links become separate files; a device, FIFO or socket is
// refused — and Commit renames the copy into place and then removes src
// the way StageRemove does. Either way all or nothing, with the other
// steps of the Txn, and recoverable after a crash.
func (t *Txn) StageMove(src, dst Path, overwrite, createDirs bool) error {
	if err := t.checkStage(entryPath(src)); err != nil {
		return err
	}
	if err := t.checkStage(entryPath(dst)); err != nil {
		return err
	}
	switch {
	case within(dst.Abs, src.Abs):
		return &fs.PathError{Op: "move", Path: dst.Attempted, Err: fmt.Errorf("is %s or inside it; nothing can be moved into itself", src.Attempted)}
	case within(src.Abs, dst.Abs):
		return &fs.PathError{Op: "move", Path: dst.Attempted, Err: fmt.Errorf("contains %s, the entry being moved; move it somewhere else", src.Attempted)}
	}
	if createDirs {
		if err := t.mkdirParents(dst); err != nil {
			return err
		}
	}
	sd, err := t.dirs.open(src, nil)
	if err != nil {
		return err
	}
	f := &txnFile{kind: opMove, p: dst, id: newStageID(), src: src, srcDir: sd.id, srcBase: path.Base(src.Rel), overwrite: overwrite}
	fi, err := sd.root.Lstat(f.srcBase)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return &fs.PathError{Op: "move", Path: src.Attempted, Err: fs.ErrNotExist}
	case err != nil:
		return &fs.PathError{Op: "move", Path: src.Attempted, Err: err}
	}
	if err := src.wantDir(fi.Mode()); err != nil {
		return err
	}
	f.tree = fi.IsDir()
	if f.tree {
		if err := t.s.checkTree(src, &dst); err != nil {
			return err
		}
	}
	dd, err := t.dirs.open(dst, nil)
	if err != nil {
		return err
	}
	f.dir, f.base = dd.id, path.Base(dst.Rel)
	_, err = dd.root.Lstat(f.base)
	switch {
	case err == nil && !overwrite:
		return &fs.PathError{Op: "move", Path: dst.Attempted, Err: fs.ErrExist}
	case errors.Is(err, fs.ErrNotExist):
		f.created = true
	case err != nil:
		return &fs.PathError{Op: "move", Path: dst.Attempted, Err: err}
	}
	f.tmp = leftoverName(tmpKind, f.id, f.base)
	if t.s.recoveryDir != "" {
		if err := t.record(f, f.created, nil); err != nil {
			return err
		}
	}
	if !sameDevice(sd.id, dd.id) {
		// Known already: copy now, like Stage writing its temporary
		// file, so that Commit only renames.
		if err := t.copyMoved(len(t.files), f, sd, dd); err != nil {
			dd.root.RemoveAll(f.tmp)
			if t.intent != nil {
				t.intent.drop(f.tmp)
			}
			return err
		}
	}
	t.add(f)
	return nil
}

// copyMoved copies a move's source to its temporary name beside the
// destination, durably, and then records that the copy is complete: from
// then on Recover treats the destination as the copy.
func (t *Txn) copyMoved(i int, f *txnFile, sd, dd *parentDir) error {
	if err := t.step(i, "copy"); err != nil {
		return err
	}
	onCopied := func() error { return t.step(i, "copied") }
	if err := copyEntry(sd.root, f.srcBase, dd.root, f.tmp, onCopied); err != nil {
		return fmt.Errorf("copy %s to %s (another file system): %w", f.src.Attempted, f.p.Attempted, err)
	}
	if err := dd.file.Sync(); err != nil && !errors.Is(err, errors.ErrUnsupported) {
		return err
	}
	if t.intent != nil {
		if err := t.intent.copied(f.tmp); err != nil {
			return err
		}
	}
	f.copied = true
	return nil
}

// commitMove does entry i's move: backs up an existing destination
// (overwrite), then renames the source into place or, across file
// systems, renames the copy into place and the source to its backup name.
func (t *Txn) commitMove(i int, f *txnFile) error {
	if err := t.step(i, ""); err != nil {
		return err
	}
	dd, err := t.dirs.open(f.p, f.dir)
	if err != nil {
		return err
	}
	sd, err := t.dirs.open(f.src, f.srcDir)
	if err != nil {
		return err
	}
	fi, err := sd.root.Lstat(f.srcBase)
	if err != nil {
		return &fs.PathError{Op: "move", Path: f.src.Attempted, Err: err}
	}
	if fi.IsDir() != f.tree {
		// The tree was checked when staged; a file is not, and the
		// other way round.
		return fmt.Errorf("%s changed between directory and file since it was checked; nothing was moved", f.src.Attempted)
	}
	if !f.created {
		// overwrite: what is there now is kept until the commit ends.
		// One that vanished since staging is a change like any other,
		// and refused: Recover knows a destination that had an entry
		// by its backup.
		name := leftoverName(bakKind, f.id, f.base)
		err := renameEntry(dd, f.base, dd, name)
		switch {
		case errors.Is(err, fs.ErrNotExist):
			return fmt.Errorf("%s, which the move was to replace, is gone since it was checked; nothing was moved", f.p.Attempted)
		case err != nil:
			return fmt.Errorf("keep %s for rollback: %w", f.p.Attempted, err)
		}
		f.backup = name
		if err := t.step(i, "backup"); err != nil {
			return err
		}
	}
	if !f.copied {
		err := renameEntry(sd, f.srcBase, dd, f.base)
		if err == nil {
			f.placed, f.done = true, true
			return nil
		}
		if !isCrossDevice(err) && !errors.Is(err, errCrossRoot) {
			return existsAs(f.p, err)
		}
		if err := t.copyMoved(i, f, sd, dd); err != nil {
			return err
		}
	}
	if err := renameEntry(dd, f.tmp, dd, f.base); err != nil {
		return existsAs(f.p, err)
	}
	// tmp keeps the name: a rollback renames the copy back to it.
	f.placed = true
	if err := t.step(i, "placed"); err != nil {
		return err
	}
	name := leftoverName(bakKind, f.id, f.srcBase)
	if err := renameEntry(sd, f.srcBase, sd, name); err != nil {
		return fmt.Errorf("remove %s after copying it: %w", f.src.Attempted, err)
	}
	f.srcBackup, f.done = name, true
	return nil
}

// existsAs says that the destination p appeared since it was staged.
func existsAs(p Path, err error) error {
	if errors.Is(err, fs.ErrExist) {
		return &fs.PathError{Op: "move", Path: p.Attempted, Err: fs.ErrExist}
	}
	return err
}

// undoMove puts a move back: the source first (so that the entry always
// has at least one name), then the destination's old entry.
func (t *Txn) undoMove(f *txnFile) (target, where string, err error) {
	dd, derr := t.dirs.open(f.p, f.dir)
	sd, serr := t.dirs.open(f.src, f.srcDir)
	fail := func(where string, err error) (string, string, error) {
		return f.src.Abs, where, err
	}
	if f.srcBackup != "" {
		if serr != nil {
			return fail(filepath.Join(filepath.Dir(f.src.Abs), f.srcBackup), serr)
		}
		if err := renameEntry(sd, f.srcBackup, sd, f.srcBase); err != nil {
			return fail(filepath.Join(filepath.Dir(f.src.Abs), f.srcBackup), err)
		}
		f.srcBackup = ""
	}
	if f.placed {
		switch {
		case derr != nil:
			return fail(f.p.Abs, derr)
		case f.copied:
			// The copy goes back to its temporary name, which
			// removeStaged removes.
			err = renameEntry(dd, f.base, dd, f.tmp)
		case serr != nil:
			err = serr
		default:
			err = renameEntry(dd, f.base, sd, f.srcBase)
		}
		if err != nil {
			return fail(f.p.Abs, err)
		}
		f.placed = false
	}
	if f.backup != "" {
		backup := filepath.Join(filepath.Dir(f.p.Abs), f.backup)
		if derr != nil {
			f.backup = ""
			return f.p.Abs, backup, derr
		}
		if err := renameEntry(dd, f.backup, dd, f.base); err != nil {
			f.backup = ""
			return f.p.Abs, backup, err
		}
		f.backup = ""
	}
	f.done = false
	if derr == nil {
		_ = dd.file.Sync()
	}
	if serr == nil {
		_ = sd.file.Sync()
	}
	return "", "", nil
}

// renameEntry renames from in d1 to to in d2 without ever replacing an
// entry at to: between the two open, checked directories where the
// system can (renameat2), so no path is looked up again; atomically
// where it has RENAME_NOREPLACE, else after checking that to is free.
// Across file systems it fails with an error isCrossDevice knows.
func renameEntry(d1 *parentDir, from string, d2 *parentDir, to string) error {
	err := renameAt(d1.file, from, d2.file, to, true)
	if !errors.Is(err, errors.ErrUnsupported) {
		return err
	}
	switch _, lerr := d2.root.Lstat(to); {
	case lerr == nil:
		return &os.LinkError{Op: "rename", Old: from, New: to, Err: fs.ErrExist}
	case !errors.Is(lerr, fs.ErrNotExist):
		return lerr
	}
	err = renameAt(d1.file, from, d2.file, to, false)
	switch {
	case !errors.Is(err, errors.ErrUnsupported):
		return err
	case d1.abs == d2.abs:
		return d1.root.Rename(from, to)
	case d1.top == d2.top:
		return d1.top.Rename(path.Join(d1.rel, from), path.Join(d2.rel, to))
	}
	return errCrossRoot
}

// copyEntry copies the entry name in from to the new name newName in to:
// a regular file with its content, mode and modification time, a
// symbolic link as a link with the same target (never followed), a
// directory with everything under it. Anything else is refused. Every
// file is synced; each directory once filled. onCopied runs after each
// entry (a test hook; nil-safe).
func copyEntry(from *os.Root, name string, to *os.Root, newName string, onCopied func() error) error {
	fi, err := from.Lstat(name)
	if err != nil {
		return err
	}
	mode := fi.Mode()
	switch {
	case mode&fs.ModeSymlink != 0:
		target, err := from.Readlink(name)
		if err != nil {
			return err
		}
		if err := to.Symlink(target, newName); err != nil {
			return err
		}
	case mode.IsRegular():
		if err := copyFile(from, name, fi, to, newName); err != nil {
			return err
		}
	case mode.IsDir():
		if err := copyDir(from, name, fi, to, newName, onCopied); err != nil {
			return err
		}
	default:
		return fmt.Errorf("%s is a %v, which cannot be copied to another file system; nothing was moved", name, mode.Type())
	}
	keepOwner(to, newName, fi)
	if onCopied != nil {
		return onCopied()
	}
	return nil
}

// keepOwner gives a copy the owner and group of the original where the
// process may (it runs as root, or the group is one of its own); a copy
// it may not give them keeps the process's, as cp's would.
func keepOwner(to *os.Root, name string, fi fs.FileInfo) {
	if uid, gid, ok := ownerOf(fi); ok && (uid != os.Geteuid() || gid != os.Getegid()) {
		if to.Lchown(name, uid, gid) != nil {
			to.Lchown(name, -1, gid)
		}
		if fi.Mode()&(fs.ModeSetuid|fs.ModeSetgid) != 0 && fi.Mode()&fs.ModeSymlink == 0 {
			// chown clears the setuid and setgid bits: set them again.
			to.Chmod(name, keptMode(fi.Mode()))
		}
	}
}

// keptMode is the part of a mode a copy keeps: permissions and the
// setuid, setgid and sticky bits.
func keptMode(m fs.FileMode) fs.FileMode {
	return m & (fs.ModePerm | fs.ModeSetuid | fs.ModeSetgid | fs.ModeSticky)
}

func copyFile(from *os.Root, name string, fi fs.FileInfo, to *os.Root, newName string) error {
	in, err := from.OpenFile(name, readFlags, 0)
	if err != nil {
		return err
	}
	defer in.Close()
	// The file opened must be the one described: a symlink swapped in
	// meanwhile would be followed by the open.
	if st, err := in.Stat(); err != nil || !os.SameFile(st, fi) {
		return fmt.Errorf("%s changed while it was copied; nothing was moved", name)
	}
	out, err := to.OpenFile(newName, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return err
	}
	_, err = io.Copy(out, in)
	if err == nil {
		err = out.Chmod(keptMode(fi.Mode()))
	}
	if err == nil {
		err = out.Sync()
	}
	if cerr := out.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = to.Chtimes(newName, fi.ModTime(), fi.ModTime())
	}
	return err
}

func copyDir(from *os.Root, name string, fi fs.FileInfo, to *os.Root, newName string, onCopied func() error) error {
	if err := to.Mkdir(newName, 0o700); err != nil {
		return err
	}
	src, err := from.OpenRoot(name)
	if err != nil {
		return err
	}
	defer src.Close()
	// As for a file: the directory opened must be the one described.
	dir, err := src.Open(".")
	if err != nil {
		return err
	}
	defer dir.Close()
	if st, err := dir.Stat(); err != nil || !os.SameFile(st, fi) {
		return fmt.Errorf("%s changed while it was copied; nothing was moved", name)
	}
	dst, err := to.OpenRoot(newName)
	if err != nil {
		return err
	}
	defer dst.Close()
	for {
		entries, err := dir.ReadDir(256)
		for _, e := range entries {
			if err := copyEntry(src, e.Name(), dst, e.Name(), onCopied); err != nil {
				return err
			}
		}
		if errors.Is(err, io.EOF) || (err == nil && len(entries) == 0) {
			break
		}
		if err != nil {
			return err
		}
	}
	if d, err := dst.Open("."); err == nil {
		d.Sync()
		d.Close()
	}
	if err := to.Chmod(newName, keptMode(fi.Mode())); err != nil {
		return err
	}
	return to.Chtimes(newName, fi.ModTime(), fi.ModTime())
}

// removeTree removes a leftover of toolhost's own (a removed entry's
// backup, a copy) with everything under it. A directory without write
// or read permission keeps its entries from os.Root.RemoveAll, as from
// rm -r; the tree is toolhost's to remove, so its directories are given
// the owner's permissions and the removal is tried again. Like
// RemoveAll it follows no symbolic link.
func removeTree(d *os.Root, name string) error {
	err := d.RemoveAll(name)
	if err == nil || !errors.Is(err, fs.ErrPermission) {
		return err
	}
	fs.WalkDir(d.FS(), name, func(p string, e fs.DirEntry, err error) error {
		if err == nil && e.IsDir() {
			d.Chmod(p, 0o700) // before WalkDir reads it
		}
		return nil
	})
	return d.RemoveAll(name)
}
