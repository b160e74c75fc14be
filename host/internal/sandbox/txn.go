package sandbox

import (
	"crypto/sha256"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
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
// With a recovery directory (Config.RecoveryDir) a Txn also keeps an
// intent record there naming every temporary and backup file, so that a
// process killed mid-commit leaves nothing Recover cannot undo.
//
// A Txn is not safe for concurrent use. Always Close it. Callers that check
// a file before replacing it hold its Lock across Stage and Commit.
type Txn struct {
	s      *Sandbox
	files  []*txnFile
	intent *intent // nil without a recovery directory
	closed bool
}

type txnFile struct {
	p       Path
	dir     *os.Root
	dirFile *os.File
	base    string
	id      string // ties the temporary and backup names to this file
	tmp     string // "" once renamed into place
	backup  string // hard link to the old content while committing
	created bool
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
// the file it will replace (0644 for a new one). Nothing is visible until
// Commit. It refuses non-regular targets (ErrNotRegular) and a second stage
// of the same file. created reports that p does not exist now; Commit then
// creates it only if it still does not exist.
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

func (t *Txn) stage(p Path, data []byte, createDirs, mustCreate bool) (created bool, err error) {
	if t.closed {
		return false, errors.New("sandbox: Stage on a closed transaction")
	}
	if err := t.s.owns(p); err != nil {
		return false, err
	}
	if p.Rel == "." {
		return false, &fs.PathError{Op: "write", Path: p.Attempted, Err: ErrNotRegular}
	}
	if pattern, ro := t.s.ReadOnly(p); ro {
		return false, &DenialError{Reason: ReadOnly, Attempted: p.Attempted, Resolved: p.Abs, Pattern: pattern}
	}
	for _, f := range t.files {
		if f.p.Abs == p.Abs {
			return false, &fs.PathError{Op: "stage", Path: p.Attempted, Err: errors.New("the same file is staged twice in one transaction")}
		}
	}
	dir, dirFile, err := pinParent(p, createDirs)
	if err != nil {
		return false, err
	}
	f := &txnFile{p: p, dir: dir, dirFile: dirFile, base: path.Base(p.Rel), id: newStageID()}
	f.tmp = leftoverName(tmpKind, f.id, f.base)
	mode, created, err := replaceableMode(dir, f.base, p.Attempted)
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
	if err == nil {
		err = writeTemp(dir, f.tmp, f.base, data, mode)
	}
	if err != nil {
		if recorded {
			t.intent.drop(f.tmp)
		}
		dirFile.Close()
		dir.Close()
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
	return t.intent.add(intentFile{
		Dir: filepath.Dir(f.p.Abs), Target: f.base, Tmp: f.tmp, Backup: leftoverName(bakKind, f.id, f.base),
		Created: created, SHA256: fmt.Sprintf("%x", sha256.Sum256(data)),
	})
}

// Commit renames every staged file into place, in staging order. On
// failure it undoes what it did and returns the error (a *RollbackError if
// undoing failed). Commit runs once; Close the Txn afterwards either way.
func (t *Txn) Commit() error {
	if t.closed {
		return errors.New("sandbox: Commit on a closed transaction")
	}
	defer t.Close()
	if t.intent != nil {
		// Past this line a crash is undone (or completed) by Recover;
		// before it, Recover only removes temporary files. Only a
		// commit of several files has backups worth a sync: one file's
		// rename is atomic by itself.
		if err := t.intent.markCommit(len(t.files) > 1); err != nil {
			return fmt.Errorf("commit: %w (no file was changed)", err)
		}
	}
	for i, f := range t.files {
		// The last file needs no backup: nothing after it can fail.
		if err := t.replace(i, f, i < len(t.files)-1); err != nil {
			return t.rollback(i, fmt.Errorf("commit %s: %w", f.p.Attempted, err))
		}
	}
	if hook := t.s.testHookAfterRenames; hook != nil {
		hook()
	}
	for _, f := range t.files {
		if f.backup != "" {
			f.dir.Remove(f.backup)
			f.backup = ""
		}
		// Durability of the renames, where the platform can sync a
		// directory.
		_ = f.dirFile.Sync()
	}
	return nil
}

// replace renames file i into place, first linking a backup of the old
// content when a later failure may have to restore it.
func (t *Txn) replace(i int, f *txnFile, backup bool) error {
	if hook := t.s.testHookBeforeRename; hook != nil {
		if err := hook(i); err != nil {
			return err
		}
	}
	if f.created {
		return t.create(f)
	}
	if backup {
		name := leftoverName(bakKind, f.id, f.base)
		if err := f.dir.Link(f.base, name); err != nil {
			return fmt.Errorf("keep the old content for rollback: %w", err)
		}
		f.backup = name
	}
	if err := f.dir.Rename(f.tmp, f.base); err != nil {
		return err
	}
	f.tmp = ""
	return nil
}

// create moves f's temporary file to its target without ever replacing a
// file there: atomically where the system can (renameat2 with
// RENAME_NOREPLACE, or a hard link, which fails on an existing name). On a
// filesystem with neither (FAT, some network mounts) it checks and then
// renames, which leaves a window in which a file created by another
// process can be replaced; toolhost's own writers are kept out by Lock.
func (t *Txn) create(f *txnFile) error {
	exists := &fs.PathError{Op: "create", Path: f.p.Attempted, Err: fs.ErrExist}
	err := renameNoReplace(f.dirFile, f.tmp, f.base)
	switch {
	case err == nil:
		f.tmp = ""
		return nil
	case errors.Is(err, fs.ErrExist):
		return exists
	case !errors.Is(err, errors.ErrUnsupported):
		return err
	}
	err = f.dir.Link(f.tmp, f.base)
	switch {
	case err == nil:
		if f.dir.Remove(f.tmp) == nil {
			f.tmp = ""
		}
		return nil
	case errors.Is(err, fs.ErrExist):
		return exists
	case !linkUnsupported(err):
		return err
	}
	if _, err := f.dir.Lstat(f.base); !errors.Is(err, fs.ErrNotExist) {
		return exists
	}
	if err := f.dir.Rename(f.tmp, f.base); err != nil {
		return err
	}
	f.tmp = ""
	return nil
}

// rollback restores files 0..failed-1 (already replaced) in reverse order.
func (t *Txn) rollback(failed int, cause error) error {
	unrestored := map[string]string{}
	for i := failed - 1; i >= 0; i-- {
		f := t.files[i]
		var err error
		if f.created {
			err = f.dir.Remove(f.base)
		} else {
			err = f.dir.Rename(f.backup, f.base)
		}
		if err != nil {
			backup := ""
			if !f.created {
				backup = filepath.Join(filepath.Dir(f.p.Abs), f.backup)
			}
			unrestored[f.p.Abs] = backup
			f.backup = "" // keep it: it is the only copy of the old content
			continue
		}
		f.backup = ""
		_ = f.dirFile.Sync()
	}
	if failed < len(t.files) && t.files[failed].backup != "" {
		t.files[failed].dir.Remove(t.files[failed].backup)
		t.files[failed].backup = ""
	}
	if t.intent != nil {
		// Recover must not mistake the rolled-back files for a finished
		// commit and remove backups that the error below names.
		t.intent.markRolledBack(len(unrestored) > 0)
	}
	if hook := t.s.testHookAfterRollback; hook != nil {
		hook()
	}
	if len(unrestored) > 0 {
		return &RollbackError{Err: cause, Unrestored: unrestored}
	}
	return cause
}

// Close removes temporary files that were not committed, releases the
// directories, and drops the intent record. It is safe to call more than
// once.
func (t *Txn) Close() error {
	if t.closed {
		return nil
	}
	t.closed = true
	for _, f := range t.files {
		if f.tmp != "" {
			f.dir.Remove(f.tmp)
		}
		f.dirFile.Close()
		f.dir.Close()
	}
	if t.intent != nil {
		t.intent.remove()
	}
	return nil
}
