package sandbox

import (
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
// A Txn is not safe for concurrent use. Always Close it.
type Txn struct {
	s      *Sandbox
	files  []*txnFile
	closed bool
}

type txnFile struct {
	p       Path
	dir     *os.Root
	dirFile *os.File
	base    string
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
// of the same file. created reports that p does not exist now.
func (t *Txn) Stage(p Path, data []byte, createDirs bool) (created bool, err error) {
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
	f := &txnFile{p: p, dir: dir, dirFile: dirFile, base: path.Base(p.Rel)}
	mode, created, err := replaceableMode(dir, f.base, p.Attempted)
	if err == nil {
		f.tmp, err = writeTemp(dir, f.base, data, mode)
	}
	if err != nil {
		dirFile.Close()
		dir.Close()
		return false, err
	}
	f.created = created
	t.files = append(t.files, f)
	return created, nil
}

// Commit renames every staged file into place, in staging order. On
// failure it undoes what it did and returns the error (a *RollbackError if
// undoing failed). Commit runs once; Close the Txn afterwards either way.
func (t *Txn) Commit() error {
	if t.closed {
		return errors.New("sandbox: Commit on a closed transaction")
	}
	defer t.Close()
	for i, f := range t.files {
		// The last file needs no backup: nothing after it can fail.
		if err := t.replace(i, f, i < len(t.files)-1); err != nil {
			return t.rollback(i, fmt.Errorf("commit %s: %w", f.p.Attempted, err))
		}
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
		if _, err := f.dir.Lstat(f.base); !errors.Is(err, fs.ErrNotExist) {
			return &fs.PathError{Op: "create", Path: f.p.Attempted, Err: fs.ErrExist}
		}
	} else if backup {
		name := strings.TrimSuffix(tempName(f.base), ".tmp") + ".bak"
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
	if len(unrestored) > 0 {
		return &RollbackError{Err: cause, Unrestored: unrestored}
	}
	return cause
}

// Close removes temporary files that were not committed and releases the
// directories. It is safe to call more than once.
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
	return nil
}
