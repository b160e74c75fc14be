package sandbox

import (
	"crypto/sha256"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
)

// Txn replaces several files so that either every one changes or none does
// (apply_patch's all-or-nothing rule, FR-TOOL-PATCH-01a). Stage writes each
// new content to a synced temporary file beside its target; Commit renames
// them all into place. A file replaced before a later failure is restored
// from a hard link to its old content taken just before the rename, and a
// file created is removed again, so readers only ever see old or new
// content and a failure leaves every file as it was.
//
// A file that did not exist when it was staged is created with a rename
// that never replaces (renameat2 RENAME_NOREPLACE on Linux, a hard link
// elsewhere), so one that appeared since, from whatever process, is kept
// and the commit fails.
//
// The same Txn removes entries (StageRemove: a file, a link itself, a
// tree), moves them (StageMove) and makes directories (StageMkdir), mixed
// with the writes and committed with them in staging order, all or
// nothing. A removal and a move are renames at commit, to a backup name
// or to the destination, which a rollback renames back; see each
// method. Directories are made when staged, so that what is staged
// after can go into them, and removed again, while empty, by a Txn that
// does not commit; so are the parents Stage and StageMove make for
// createDirs.
//
// With a recovery directory (Config.RecoveryDir) a Txn also keeps an
// intent record there naming every step before it is taken (temporary
// and backup names, directories to make, moves), so that a process
// killed at any point leaves nothing Recover cannot finish or undo.
//
// A Txn holds a bounded number of descriptors however many files it
// stages: each temporary file is closed once written and
// synced, and a parent directory is kept open only while it is among the
// few used last (parentDirs). Commit opens a parent again through the root
// by its validated path and refuses, as a swap, anything but the very
// directory the file was staged in, so closing it redirects nothing.
//
// A Txn is not safe for concurrent use. Always Close it. Callers that check
// a file before replacing it hold its Lock across Stage and Commit.
type Txn struct {
	s      *Sandbox
	files  []*txnFile
	dirs   parentDirs
	intent *intent // nil without a recovery directory
	closed bool
	// committed: every step succeeded, so the directories staging made
	// stay.
	committed bool
}

// opKind is what a staged entry of a Txn does at commit.
type opKind uint8

const (
	opWrite  opKind = iota // new content renamed into place (Stage)
	opRemove               // the entry renamed to its backup name (StageRemove)
	opMkdir                // a directory, created when staged (StageMkdir, createDirs)
	opMove                 // an entry renamed, or copied and renamed, elsewhere (StageMove)
)

type txnFile struct {
	kind    opKind
	p       Path        // the target: a write's file, a removal's entry, a move's destination
	dir     fs.FileInfo // the parent directory as staged, to know it again
	base    string
	id      string // ties the temporary and backup names to this file
	tmp     string // "" once renamed into place (or for a removal or directory)
	backup  string // the old content (a hard link, or the renamed entry) while committing
	created bool
	// done: the commit did this entry's step (for a directory, staging
	// did), so a rollback undoes it.
	done bool
	// tree: the entry is a directory, whose backup or copy is removed as
	// a tree.
	tree bool

	// A move's source, its parent as staged, and the name the source has
	// once a copy replaced it (removed at the end of the commit).
	src       Path
	srcDir    fs.FileInfo
	srcBase   string
	srcBackup string
	overwrite bool
	copied    bool // tmp holds a complete copy of the source (another file system)
	placed    bool // the destination holds the moved entry
}

// RollbackError reports a failed commit whose restore failed too: the
// files listed keep their new content, and each backup (if any) holds the
// old one. It should never happen; it is loud so nobody loses data.
type RollbackError struct {
	Err        error             // why the commit failed
	Unrestored map[string]string // target path -> backup path ("" for a created file)
}

func (e *RollbackError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%v; restoring the files already replaced failed too:", e.Err)
	for target, backup := range e.Unrestored {
		if backup == "" {
			fmt.Fprintf(&b, " %s was created and could not be removed;", target)
		} else {
			fmt.Fprintf(&b, " %s keeps its new content, the old content is in %s;", target, backup)
		}
	}
	return b.String()
}

func (e *RollbackError) Unwrap() error { return e.Err }

// Begin starts a transaction on the sandbox's roots.
func (s *Sandbox) Begin() *Txn { return &Txn{s: s} }

// Stage writes data to a temporary file next to p, with the permissions of
// the file it will replace, or for a new one those any program of the
// user's would give it (0666 less the umask, : the kernel applies the umask, or a directory's default ACL, as it creates the file). Nothing is visible until Commit. It refuses non-regular targets
// (ErrNotRegular) and a second stage of the same file. created reports
// that p does not exist now; Commit then creates it only if it still does
// not exist.
func (t *Txn) Stage(p Path, data []byte, createDirs bool) (created bool, err error) {
	return t.stage(p, data, createDirs, false)
}

// StageNew is Stage for a file that must not exist: if p exists now it
// fails with an error matching fs.ErrExist and writes nothing, and Commit
// never replaces a file that appears meanwhile.
func (t *Txn) StageNew(p Path, data []byte, createDirs bool) error {
	_, err := t.stage(p, data, createDirs, true)
	return err
}

// StageMode is Stage giving the file exactly mode's permission bits,
// whether it replaces a file or creates one: undo puts back a file's
// previous mode as well as its content.
func (t *Txn) StageMode(p Path, data []byte, mode fs.FileMode, createDirs bool) (created bool, err error) {
	perm := mode.Perm()
	return t.stageWith(p, data, createDirs, false, &perm)
}

// checkStage refuses what no transaction may stage: a closed Txn, a
// path of another sandbox or one the sandbox does not let a tool write
// (CheckWrite), a root, an entry staged already.
func (t *Txn) checkStage(p Path) error {
	if t.closed {
		return errors.New("sandbox: Stage on a closed transaction")
	}
	if err := t.s.owns(p); err != nil {
		return err
	}
	if p.Rel == "." {
		return &fs.PathError{Op: "write", Path: p.Attempted, Err: ErrNotRegular}
	}
	for _, f := range t.files {
		// A directory staged (made) already is no conflict: creating
		// it again is a no-op, and files go into it.
		if (f.kind != opMkdir && f.p.Abs == p.Abs) || (f.kind == opMove && f.src.Abs == p.Abs) {
			return &fs.PathError{Op: "stage", Path: p.Attempted, Err: errors.New("the same file is staged twice in one transaction")}
		}
	}
	return nil
}

func (t *Txn) stage(p Path, data []byte, createDirs, mustCreate bool) (created bool, err error) {
	return t.stageWith(p, data, createDirs, mustCreate, nil)
}

// stageWith stages data for p; a non-nil perm is the mode to give it,
// else it keeps the mode of the file it replaces.
func (t *Txn) stageWith(p Path, data []byte, createDirs, mustCreate bool, perm *fs.FileMode) (created bool, err error) {
	if err := t.checkStage(p); err != nil {
		return false, err
	}
	if createDirs {
		if err := t.mkdirParents(p); err != nil {
			return false, err
		}
	}
	d, err := t.dirs.open(p, nil)
	if err != nil {
		return false, err
	}
	f := &txnFile{kind: opWrite, p: p, dir: d.id, base: path.Base(p.Rel), id: newStageID()}
	f.tmp = leftoverName(tmpKind, f.id, f.base)
	mode, created, err := stagedMode(d.root, f.base, p.Attempted)
	if err == nil && mustCreate && !created {
		err = &fs.PathError{Op: "create", Path: p.Attempted, Err: fs.ErrExist}
	}
	recorded := false
	if err == nil && t.s.recoveryDir != "" {
		// Recorded before the temporary file exists, so a crash from
		// here on leaves nothing the record does not name.
		err = t.record(f, created, data)
		recorded = err == nil
	}
	keepMode := !created
	if err == nil && perm != nil {
		mode, keepMode = *perm, true
	}
	if err == nil {
		err = writeStaged(d.root, f.tmp, f.base, data, mode, keepMode)
	}
	if err != nil {
		if recorded {
			t.intent.drop(f.tmp)
		}
		return false, err
	}
	f.created = created
	t.files = append(t.files, f)
	if hook := t.s.testHookAfterStage; hook != nil {
		hook(len(t.files) - 1)
	}
	return created, nil
}

// record adds f to the intent record, creating the record first.
func (t *Txn) record(f *txnFile, created bool, data []byte) error {
	if t.intent == nil {
		in, err := createIntent(t.s.recoveryDir)
		if err != nil {
			return err
		}
		t.intent = in
	}
	// Every entry has the same names, recorded whether or not its kind
	// ever creates them, so that a record keeps one shape.
	in := intentFile{
		Dir: filepath.Dir(f.p.Abs), Target: f.base,
		Tmp: leftoverName(tmpKind, f.id, f.base), Backup: leftoverName(bakKind, f.id, f.base),
		Created: created,
	}
	switch f.kind {
	case opWrite:
		in.Tmp, in.SHA256 = f.tmp, fmt.Sprintf("%x", sha256.Sum256(data))
	case opRemove:
		in.Remove = true
	case opMkdir:
		in.Mkdir = true
	case opMove:
		in.Move, in.SrcDir, in.Src, in.SrcBackup = true, filepath.Dir(f.src.Abs), f.srcBase, leftoverName(bakKind, f.id, f.srcBase)
	}
	return t.intent.add(in)
}

// Commit does every staged step in staging order: renames new content
// into place, removes, moves (directories were made when staged). On
// failure it undoes what it did, in reverse, and returns the error (a
// *RollbackError if undoing failed). Commit runs once; Close the Txn
// afterwards either way.
func (t *Txn) Commit() error {
	if t.closed {
		return errors.New("sandbox: Commit on a closed transaction")
	}
	defer t.Close()
	if t.intent != nil {
		// Past this line a crash is undone (or completed) by Recover;
		// before it, Recover only removes temporary files and the
		// directories staging made. Only a commit of one file's write
		// needs no sync: its rename is atomic by itself.
		sync := len(t.files) > 1 || (len(t.files) == 1 && t.files[0].kind != opWrite)
		if err := t.intent.markCommit(sync); err != nil {
			return fmt.Errorf("commit: %w (no file was changed)", err)
		}
	}
	for i, f := range t.files {
		var err error
		switch f.kind {
		case opMkdir:
			err = t.step(i, "")
		case opRemove:
			err = t.commitRemove(i, f)
		case opMove:
			err = t.commitMove(i, f)
		default:
			// The last file needs no backup: nothing after it can fail.
			err = t.replace(i, f, i < len(t.files)-1)
		}
		if err != nil {
			return t.rollback(fmt.Errorf("commit %s: %w", f.p.Attempted, err))
		}
	}
	t.committed = true
	if hook := t.s.testHookAfterRenames; hook != nil {
		hook()
	}
	synced := make(map[string]bool)
	for _, f := range t.files {
		d, err := t.dirs.open(f.p, f.dir)
		if err != nil {
			// Moved away since its rename: the commit is done all the
			// same, and a backup left there is a named leftover.
			continue
		}
		if f.backup != "" {
			removeTree(d.root, f.backup)
			f.backup = ""
		}
		// Durability of the renames, where the platform can sync a
		// directory: once per directory, however many files it got.
		if !synced[d.abs] {
			_ = d.file.Sync()
			synced[d.abs] = true
		}
		if f.kind != opMove {
			continue
		}
		if sd, err := t.dirs.open(f.src, f.srcDir); err == nil {
			if f.srcBackup != "" {
				removeTree(sd.root, f.srcBackup)
				f.srcBackup = ""
			}
			if !synced[sd.abs] {
				_ = sd.file.Sync()
				synced[sd.abs] = true
			}
		}
	}
	return nil
}

// step runs the test hook before entry i's commit (step "") or between
// the steps of a move; it is nil outside tests.
func (t *Txn) step(i int, name string) error {
	if name == "" {
		if hook := t.s.testHookBeforeRename; hook != nil {
			if err := hook(i); err != nil {
				return err
			}
		}
	}
	if hook := t.s.testHookStep; hook != nil {
		return hook(i, name)
	}
	return nil
}

// replace renames file i into place, first linking a backup of the old
// content when a later failure may have to restore it.
func (t *Txn) replace(i int, f *txnFile, backup bool) error {
	if err := t.step(i, ""); err != nil {
		return err
	}
	d, err := t.dirs.open(f.p, f.dir)
	if err != nil {
		return err
	}
	if f.created {
		if err := create(d, f); err != nil {
			return err
		}
		f.done = true
		return nil
	}
	if backup {
		name := leftoverName(bakKind, f.id, f.base)
		if err := d.root.Link(f.base, name); err != nil {
			return fmt.Errorf("keep the old content for rollback: %w", err)
		}
		f.backup = name
	}
	if err := d.root.Rename(f.tmp, f.base); err != nil {
		return err
	}
	f.tmp, f.done = "", true
	return nil
}

// create moves f's temporary file to its target in d without ever
// replacing a file there: atomically where the system can (renameat2 with
// RENAME_NOREPLACE, or a hard link, which fails on an existing name). On a
// filesystem with neither (FAT, some network mounts) it checks and then
// renames, which leaves a window in which a file created by another
// process can be replaced; toolhost's own writers are kept out by Lock.
func create(d *parentDir, f *txnFile) error {
	exists := &fs.PathError{Op: "create", Path: f.p.Attempted, Err: fs.ErrExist}
	err := renameNoReplace(d.file, f.tmp, f.base)
	switch {
	case err == nil:
		f.tmp = ""
		return nil
	case errors.Is(err, fs.ErrExist):
		return exists
	case !errors.Is(err, errors.ErrUnsupported):
		return err
	}
	err = d.root.Link(f.tmp, f.base)
	switch {
	case err == nil:
		if d.root.Remove(f.tmp) == nil {
			f.tmp = ""
		}
		return nil
	case errors.Is(err, fs.ErrExist):
		return exists
	case !linkUnsupported(err):
		return err
	}
	if _, err := d.root.Lstat(f.base); !errors.Is(err, fs.ErrNotExist) {
		return exists
	}
	if err := d.root.Rename(f.tmp, f.base); err != nil {
		return err
	}
	f.tmp = ""
	return nil
}

// rollback undoes, in reverse order, every step the commit did, then
// removes what staging made: temporary files and copies, and the
// directories it created, if they are still empty.
func (t *Txn) rollback(cause error) error {
	unrestored := map[string]string{}
	for i, f := range slices.Backward(t.files) {
		if hook := t.s.testHookStep; hook != nil {
			hook(i, "undo")
		}
		if target, where, err := t.undo(f); err != nil {
			unrestored[target] = where
		}
	}
	if t.intent != nil {
		// Recover must not mistake the rolled-back files for a finished
		// commit and remove backups that the error below names. Marked
		// before the directories the Txn made go: a record of a commit
		// whose directories are gone would look like one Recover cannot
		// judge.
		t.intent.markRolledBack(len(unrestored) > 0)
	}
	if hook := t.s.testHookStep; hook != nil {
		hook(len(t.files), "cleanup")
	}
	t.removeStaged()
	if hook := t.s.testHookAfterRollback; hook != nil {
		hook()
	}
	if len(unrestored) > 0 {
		return &RollbackError{Err: cause, Unrestored: unrestored}
	}
	return cause
}

// undo puts back what the commit did to f. On failure it returns the
// path that is not as it was and where its old content is ("" for none),
// and keeps that backup: it is the only copy.
func (t *Txn) undo(f *txnFile) (target, where string, err error) {
	if f.kind == opMove {
		return t.undoMove(f)
	}
	d, err := t.dirs.open(f.p, f.dir)
	backupPath := func() string {
		if f.backup == "" {
			return ""
		}
		return filepath.Join(filepath.Dir(f.p.Abs), f.backup)
	}
	switch {
	case f.kind == opMkdir:
		return "", "", nil // removed with the temporary files, below
	case f.kind == opWrite && !f.done:
		if err == nil && f.backup != "" {
			d.root.Remove(f.backup)
		}
		f.backup = ""
		return "", "", nil
	case !f.done:
		return "", "", nil
	case err != nil:
	case f.kind == opWrite && f.created:
		err = d.root.Remove(f.base)
	case f.kind == opWrite:
		err = d.root.Rename(f.backup, f.base)
	default: // a removal: its entry gets its name back
		err = renameEntry(d, f.backup, d, f.base)
	}
	if err != nil {
		where := backupPath()
		f.backup = "" // keep it: it is the only copy of the old content
		return f.p.Abs, where, err
	}
	f.backup, f.done = "", false
	_ = d.file.Sync()
	return "", "", nil
}

// removeStaged removes what staging made and no commit used: temporary
// files and copies, then, unless the commit succeeded, the directories
// staging created, newest first, each only if it is still empty.
func (t *Txn) removeStaged() {
	for _, f := range t.files {
		if f.tmp == "" || (f.kind != opWrite && f.kind != opMove) || f.placed {
			continue
		}
		// A directory swapped since staging keeps the temporary file:
		// removing a name in whatever is there now could remove
		// someone else's file.
		if d, err := t.dirs.open(f.p, f.dir); err == nil {
			removeTree(d.root, f.tmp)
		}
		f.tmp = ""
	}
	if t.committed {
		return
	}
	for _, f := range slices.Backward(t.files) {
		if f.kind != opMkdir || !f.done {
			continue
		}
		if d, err := t.dirs.open(f.p, f.dir); err == nil {
			rmdirEmpty(d, f.base)
		}
		f.done = false
	}
}

// Close removes temporary files and copies that were not committed and,
// for a Txn that did not commit, the directories its staging created
// that are still empty; it releases the directories and drops the intent
// record. It is safe to call more than once.
func (t *Txn) Close() error {
	if t.closed {
		return nil
	}
	t.closed = true
	t.removeStaged()
	t.dirs.close()
	if t.intent != nil {
		t.intent.remove()
	}
	return nil
}

// maxOpenDirs is how many parent directories a Txn keeps open (two
// descriptors each) between uses: the files of a patch mostly share a few
// directories, and a bound keeps a patch of any size within any
// descriptor limit.
const maxOpenDirs = 4

// parentDir is the parent directory of staged files, open through the
// root: an os.Root of its own for the renames, and a file for syncing it.
type parentDir struct {
	abs  string // canonical path, the key
	root *os.Root
	file *os.File
	id   fs.FileInfo // what it was when opened, to know it again
	// top and rel: the sandbox root and the directory's path in it, for
	// a rename between two directories where the system cannot rename
	// between two open directories.
	top *os.Root
	rel string
}

func (d *parentDir) close() {
	d.file.Close()
	d.root.Close()
}

// parentDirs keeps the maxOpenDirs parent directories used last, the
// most recent at the end.
type parentDirs []*parentDir

// open returns p's parent directory, kept open if it is among the last
// used and else opened through the root, after checking it is the
// validated directory: the path the kernel has for it is p's parent
// exactly (or, where the kernel cannot say, the name is no symlink and is
// that directory), and with staged set, it is the directory a file was
// staged in. Anything else is a swap, refused before anything is done in
// it. An open directory is checked again at each use, as one opened anew
// would be: moved away since, it is no longer where the file was approved.
func (ds *parentDirs) open(p Path, staged fs.FileInfo) (*parentDir, error) {
	abs := filepath.Dir(p.Abs)
	for i, d := range *ds {
		if d.abs != abs {
			continue
		}
		*ds = append((*ds)[:i:i], (*ds)[i+1:]...)
		if ok, _, err := isValidated(d.file, abs, func() (fs.FileInfo, error) { return p.Root.Lstat(path.Dir(p.Rel)) }); err != nil || !ok {
			d.close() // open it anew below, which says what is there now
			break
		}
		if staged != nil && !os.SameFile(d.id, staged) {
			d.close()
			return nil, swappedError(p, "")
		}
		*ds = append(*ds, d)
		return d, nil
	}
	d, err := openParent(p, abs)
	if err != nil {
		return nil, err
	}
	if staged != nil && !os.SameFile(d.id, staged) {
		d.close()
		return nil, swappedError(p, "")
	}
	if len(*ds) == maxOpenDirs {
		(*ds)[0].close()
		*ds = append((*ds)[:0], (*ds)[1:]...)
	}
	*ds = append(*ds, d)
	return d, nil
}

func (ds *parentDirs) close() {
	for _, d := range *ds {
		d.close()
	}
	*ds = nil
}

// openParent opens the directory abs, p's parent, through p's root and
// checks it is the validated directory.
func openParent(p Path, abs string) (*parentDir, error) {
	dirRel := path.Dir(p.Rel)
	root, err := p.Root.OpenRoot(dirRel)
	if err != nil {
		if fi, lerr := p.Root.Lstat(dirRel); lerr == nil && fi.Mode()&fs.ModeSymlink != 0 {
			// Canonical at Resolve, so a symlink now was swapped in
			// (os.Root refuses one that leaves the root, and its error
			// says nothing of a swap).
			return nil, swappedError(p, "")
		}
		return nil, err
	}
	d := &parentDir{abs: abs, root: root, top: p.Root, rel: dirRel}
	d.file, err = root.Open(".")
	if err != nil {
		root.Close()
		return nil, err
	}
	ok, now, err := isValidated(d.file, abs, func() (fs.FileInfo, error) { return p.Root.Lstat(dirRel) })
	if err == nil && !ok {
		err = swappedError(p, now)
	}
	if err == nil {
		d.id, err = d.file.Stat()
	}
	if err != nil {
		d.close()
		return nil, err
	}
	return d, nil
}

// stagedMode returns the permissions to create the temporary file with:
// those of the existing regular file, or 0666 for a new one, which the
// kernel narrows by the umask as for any program's new file.
func stagedMode(dir *os.Root, base, attempted string) (mode fs.FileMode, created bool, err error) {
	fi, err := dir.Lstat(base)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return 0o666, true, nil
	case err != nil:
		return 0, false, err
	case !fi.Mode().IsRegular():
		return 0, false, &fs.PathError{Op: "write", Path: attempted, Err: ErrNotRegular}
	}
	return fi.Mode().Perm(), false, nil
}

// writeStaged writes data to the new temporary file name next to base,
// syncs and closes it; on failure nothing is left behind. With keepMode
// (the file replaces one) it is given mode exactly, which the umask
// narrowed at creation; a new file keeps what the kernel gave it.
func writeStaged(dir *os.Root, name, base string, data []byte, mode fs.FileMode, keepMode bool) error {
	// O_EXCL: never open an existing file, never follow a symlink.
	f, err := dir.OpenFile(name, os.O_WRONLY|os.O_CREATE|os.O_EXCL, mode)
	if err != nil {
		return err
	}
	_, err = f.Write(data)
	if err == nil && keepMode {
		err = f.Chmod(mode)
	}
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		dir.Remove(name)
		return fmt.Errorf("write temporary file for %s: %w", base, err)
	}
	return nil
}
