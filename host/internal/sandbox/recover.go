package sandbox

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
)

// An intent record is one file in the recovery directory, "<id>.txn",
// holding JSON lines:
//
//	{"file": {...}}       one per staged file, written before its temporary file
//	                      (for a removal, before its commit renames it away)
//	{"dropped": "<tmp>"}  a file whose staging failed after it was recorded
//	{"commit": true}      written before the first rename (synced, for several files)
//	{"rolledback": true}  the Txn undid a failed commit itself
//
// The Txn holds an exclusive lock on the record while it lives and removes
// it when it closes, so a record Recover can lock belongs to a process that
// died mid-transaction. Lines are appended, and a crash while appending
// leaves at most a cut last line, which Recover ignores: the file it
// would have named was not created yet.
const intentExt = ".txn"

// creatingExt marks a record before it is locked and named, so Recover never
// mistakes a record being created for one that was abandoned.
const creatingExt = ".creating"

var errLocked = errors.New("locked by a live transaction")

type intentFile struct {
	Dir     string `json:"dir"`    // canonical directory of the target
	Target  string `json:"target"` // base name
	Tmp     string `json:"tmp"`
	Backup  string `json:"backup"`
	Created bool   `json:"created,omitempty"` // the target did not exist when staged
	// Remove: the target is removed, not replaced (Txn.StageDelete).
	// Its commit renames it to Backup; Tmp is never created.
	Remove bool   `json:"remove,omitempty"`
	SHA256 string `json:"sha256"` // of the new content; "" for a removal
}

type intentLine struct {
	File       *intentFile `json:"file,omitempty"`
	Dropped    string      `json:"dropped,omitempty"`
	Commit     bool        `json:"commit,omitempty"`
	RolledBack bool        `json:"rolledback,omitempty"`
}

// intent is a Txn's open, locked record.
type intent struct {
	f    *os.File
	dir  string
	path string
}

func createIntent(dir string) (*intent, error) {
	id := newStageID()
	creating := filepath.Join(dir, "."+id+creatingExt)
	f, err := os.OpenFile(creating, os.O_WRONLY|os.O_CREATE|os.O_EXCL|os.O_APPEND, 0o600)
	if err != nil {
		return nil, fmt.Errorf("create the transaction's recovery record: %w", err)
	}
	in := &intent{f: f, dir: dir, path: filepath.Join(dir, id+intentExt)}
	if err = lockFile(f, true); err == nil {
		err = os.Rename(creating, in.path)
	}
	if err != nil {
		os.Remove(creating)
		f.Close()
		return nil, fmt.Errorf("create the transaction's recovery record: %w", err)
	}
	return in, nil
}

func (in *intent) append(line intentLine) error {
	b, err := json.Marshal(line)
	if err != nil {
		return err
	}
	if _, err := in.f.Write(append(b, '\n')); err != nil {
		return fmt.Errorf("write the transaction's recovery record %s: %w", in.path, err)
	}
	return nil
}

func (in *intent) add(f intentFile) error { return in.append(intentLine{File: &f}) }

func (in *intent) drop(tmp string) { in.append(intentLine{Dropped: tmp}) }

// markCommit records that renames begin. With sync it makes the record
// durable first, so that after a power failure no rename is on disk that
// the record does not explain.
func (in *intent) markCommit(sync bool) error {
	if err := in.append(intentLine{Commit: true}); err != nil {
		return err
	}
	if !sync {
		return nil
	}
	if err := in.f.Sync(); err != nil {
		return fmt.Errorf("sync the transaction's recovery record %s: %w", in.path, err)
	}
	return syncDir(in.dir)
}

// markRolledBack records that the Txn undid its commit itself. With sync
// (some file could not be restored, and its backup is the only copy of
// the old content) the mark is made durable, so Recover never removes
// that backup as the leftover of a finished commit.
func (in *intent) markRolledBack(sync bool) {
	if in.append(intentLine{RolledBack: true}) == nil && sync {
		in.f.Sync()
	}
}

// remove deletes the record, then releases its lock.
func (in *intent) remove() {
	os.Remove(in.path)
	in.f.Close()
}

func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	if err := d.Sync(); err != nil && !errors.Is(err, errors.ErrUnsupported) {
		return fmt.Errorf("sync %s: %w", dir, err)
	}
	return nil
}

// Recovered describes one interrupted transaction that Recover finished.
type Recovered struct {
	Record string // the intent record it replayed (now removed)
	// Completed says every rename had happened before the crash, so the
	// commit stands and only its backups were removed. Otherwise the
	// commit was undone: Restored files hold their old content again and
	// Removed files, which it had created, are gone.
	Completed bool
	Restored  []string
	Removed   []string
	// Kept lists what Recover left alone because a file changed after the
	// crash, each with what was done and where the old content is.
	Kept []string
}

// Recover finishes every transaction that a crash interrupted, from the
// records in Config.RecoveryDir: all or nothing, as the commit promised. A
// commit that had renamed every file stands (its backups are removed);
// one that had not is undone — every target that has a backup gets its old
// content back, files it created are removed, and its temporary files are
// removed. A transaction still running in this or another process is left
// alone. Call it once at start-up, before tools run; it is harmless later.
//
// A record that cannot be replayed (its root is no longer configured, a
// file cannot be renamed) is kept for the next start, and the error names
// it and what is left to do by hand.
func (s *Sandbox) Recover() ([]Recovered, error) {
	if s.recoveryDir == "" {
		return nil, nil
	}
	entries, err := os.ReadDir(s.recoveryDir)
	if err != nil {
		return nil, fmt.Errorf("sandbox: recovery directory: %w", err)
	}
	var done []Recovered
	var errs []error
	for _, e := range entries {
		name := filepath.Join(s.recoveryDir, e.Name())
		switch {
		case strings.HasSuffix(e.Name(), creatingExt):
			removeIfUnlocked(name)
		case strings.HasSuffix(e.Name(), intentExt):
			rec, err := s.replay(name)
			switch {
			case errors.Is(err, errLocked):
			case err != nil:
				errs = append(errs, err)
			default:
				done = append(done, rec)
			}
		}
	}
	return done, errors.Join(errs...)
}

// removeIfUnlocked removes a record that a process died creating.
func removeIfUnlocked(name string) {
	f, err := os.OpenFile(name, os.O_RDWR, 0)
	if err != nil {
		return
	}
	defer f.Close()
	if lockFile(f, false) == nil {
		os.Remove(name)
	}
}

// replay finishes the transaction of one record and removes the record.
func (s *Sandbox) replay(name string) (Recovered, error) {
	f, err := os.OpenFile(name, os.O_RDWR, 0)
	if err != nil {
		return Recovered{}, fmt.Errorf("sandbox: recovery record %s: %w", name, err)
	}
	defer f.Close()
	if err := lockFile(f, false); err != nil {
		return Recovered{}, err
	}
	rec := Recovered{Record: name}
	files, commit, rolledBack, err := readIntent(f)
	if err != nil {
		return rec, fmt.Errorf("sandbox: recovery record %s is unreadable (%w); check the files it names by hand, then delete it", name, err)
	}
	dirs := map[string]*os.Root{}
	defer func() {
		for _, d := range dirs {
			if d != nil { // a directory gone since the crash
				d.Close()
			}
		}
	}()
	for _, fl := range files {
		if _, ok := dirs[fl.Dir]; ok {
			continue
		}
		d, err := s.openRecordedDir(fl.Dir)
		if err != nil {
			return rec, fmt.Errorf("sandbox: recovery record %s: %w; it is kept for the next start", name, err)
		}
		dirs[fl.Dir] = d // nil: the directory is gone, and with it every leftover
	}
	if commit && !rolledBack {
		// A directory gone since the crash hides whether its file was
		// renamed: taking the commit as complete could drop the only copy
		// of old content elsewhere, so a person decides.
		for _, fl := range files {
			if dirs[fl.Dir] == nil {
				return rec, fmt.Errorf("sandbox: recovery record %s: directory %s, where %s was being replaced, no longer exists, so toolhost cannot tell whether that commit finished; it is kept for the next start. Check the files it names and restore any .toolhost-bak-* file beside them by hand, then delete the record", name, fl.Dir, fl.Target)
			}
		}
	}
	var errs []error
	switch {
	case !commit || rolledBack:
		// Nothing was renamed, or the Txn undid its renames itself.
	case !slices.ContainsFunc(files, func(fl intentFile) bool { return pending(dirs[fl.Dir], fl) }):
		rec.Completed = true
		for _, fl := range files {
			errs = append(errs, removeLeftover(dirs[fl.Dir], fl.Backup))
		}
	default:
		for _, fl := range slices.Backward(files) {
			errs = append(errs, undo(dirs[fl.Dir], fl, &rec))
		}
	}
	for _, fl := range files {
		errs = append(errs, removeLeftover(dirs[fl.Dir], fl.Tmp))
	}
	for _, d := range dirs {
		if d != nil {
			if df, err := d.Open("."); err == nil {
				df.Sync()
				df.Close()
			}
		}
	}
	if err := errors.Join(errs...); err != nil {
		return rec, fmt.Errorf("sandbox: recovery record %s could not be replayed fully (%w); it is kept for the next start", name, err)
	}
	if err := os.Remove(name); err != nil {
		return rec, fmt.Errorf("sandbox: recovery record %s: %w", name, err)
	}
	return rec, nil
}

// readIntent parses a record. Files named in a "dropped" line are left
// out: their staging failed, so they have nothing to undo.
func readIntent(r io.Reader) (files []intentFile, commit, rolledBack bool, err error) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 4096), 1<<20)
	var lines [][]byte
	for sc.Scan() {
		lines = append(lines, bytes.Clone(sc.Bytes()))
	}
	if err := sc.Err(); err != nil {
		return nil, false, false, err
	}
	dropped := map[string]bool{}
	for i, b := range lines {
		var l intentLine
		if err := json.Unmarshal(b, &l); err != nil {
			if i == len(lines)-1 {
				break // cut by the crash while it was written
			}
			return nil, false, false, fmt.Errorf("line %d: %w", i+1, err)
		}
		switch {
		case l.File != nil:
			if !validIntentFile(*l.File) {
				return nil, false, false, fmt.Errorf("line %d names files outside its directory", i+1)
			}
			files = append(files, *l.File)
		case l.Dropped != "":
			dropped[l.Dropped] = true
		}
		commit = commit || l.Commit
		rolledBack = rolledBack || l.RolledBack
	}
	files = slices.DeleteFunc(files, func(f intentFile) bool { return dropped[f.Tmp] })
	return files, commit, rolledBack, nil
}

// validIntentFile checks that a record names single entries of a
// canonical directory, and leftovers by toolhost's names only.
func validIntentFile(f intentFile) bool {
	single := func(n string) bool {
		return n != "" && n != "." && n != ".." && !strings.ContainsAny(n, `/`+string(filepath.Separator))
	}
	return filepath.IsAbs(f.Dir) && filepath.Clean(f.Dir) == f.Dir && single(f.Target) &&
		single(f.Tmp) && single(f.Backup) &&
		strings.HasPrefix(f.Tmp, LeftoverPrefix+tmpKind+"-") && strings.HasPrefix(f.Backup, LeftoverPrefix+bakKind+"-")
}

// openRecordedDir opens a directory a record names, through the root that
// contains it, checked like a write's parent directory. It returns nil,
// nil when the directory no longer exists.
func (s *Sandbox) openRecordedDir(dir string) (*os.Root, error) {
	r := s.containing(dir)
	if r == nil {
		return nil, fmt.Errorf("%s is in no configured root; add the root back and restart, or remove the .toolhost-* files there by hand (a .toolhost-bak-* file holds the old content of the file its name ends with)", dir)
	}
	// A placeholder entry: openParent opens its parent.
	p := Path{Attempted: dir, Abs: filepath.Join(dir, "x"), Root: r.fs, RootDir: r.dir, root: r}
	p.Rel = relTo(p.Abs, r.dir)
	d, err := openParent(p, dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("open %s: %w", dir, err)
	}
	d.file.Close()
	return d.root, nil
}

// pending reports that the commit had not yet done f's step when it was
// interrupted: a replacement's or creation's temporary file is still
// there, or a removal's target is and its backup is not (renaming the
// target to the backup is the removal).
func pending(d *os.Root, f intentFile) bool {
	if f.Remove {
		return exists(d, f.Target) && !exists(d, f.Backup)
	}
	return exists(d, f.Tmp)
}

// undo puts one file of an interrupted commit back as it was.
func undo(d *os.Root, f intentFile, rec *Recovered) error {
	if d == nil {
		return nil
	}
	target := filepath.Join(f.Dir, f.Target)
	switch {
	case f.Remove && !exists(d, f.Backup):
		// Not removed yet.
	case f.Remove && exists(d, f.Target):
		rec.Kept = append(rec.Kept, fmt.Sprintf("%s was removed by the interrupted commit and created again since; it is kept, and the removed content is in %s",
			target, filepath.Join(f.Dir, f.Backup)))
		return nil
	case f.Remove:
		if err := restoreRemoved(d, f.Backup, f.Target); err != nil {
			return err
		}
		rec.Restored = append(rec.Restored, target)
	case f.Created && exists(d, f.Tmp):
		// Not renamed, or linked into place with its temporary name
		// still there (the fallback without renameat2).
		if same(d, f.Tmp, f.Target) {
			if err := d.Remove(f.Target); err != nil {
				return err
			}
			rec.Removed = append(rec.Removed, target)
		}
	case f.Created:
		switch ours, err := holds(d, f.Target, f.SHA256); {
		case errors.Is(err, fs.ErrNotExist):
		case err != nil:
			return err
		case ours:
			if err := d.Remove(f.Target); err != nil {
				return err
			}
			rec.Removed = append(rec.Removed, target)
		default:
			rec.Kept = append(rec.Kept, target+" was created by the interrupted commit and changed since; it is kept")
		}
	case exists(d, f.Backup):
		if same(d, f.Backup, f.Target) {
			// Not renamed yet: the backup is another name of the target.
			break
		}
		ours, err := holds(d, f.Target, f.SHA256)
		if err != nil && !errors.Is(err, fs.ErrNotExist) {
			return err
		}
		if err == nil && !ours {
			rec.Kept = append(rec.Kept, fmt.Sprintf("%s changed after the interrupted commit and is kept; its old content is in %s",
				target, filepath.Join(f.Dir, f.Backup)))
			return nil
		}
		if err := d.Rename(f.Backup, f.Target); err != nil {
			return err
		}
		rec.Restored = append(rec.Restored, target)
	}
	return removeLeftover(d, f.Backup)
}

// restoreRemoved gives a removed file its name back without replacing a
// file created there meanwhile where the system can (a hard link, which
// fails on an existing name); removeLeftover then drops the backup name.
func restoreRemoved(d *os.Root, backup, target string) error {
	err := d.Link(backup, target)
	if err != nil && linkUnsupported(err) {
		return d.Rename(backup, target)
	}
	return err
}

func exists(d *os.Root, name string) bool {
	if d == nil {
		return false
	}
	_, err := d.Lstat(name)
	return err == nil
}

// same reports whether two names are hard links to one file.
func same(d *os.Root, a, b string) bool {
	fa, err := d.Lstat(a)
	if err != nil {
		return false
	}
	fb, err := d.Lstat(b)
	return err == nil && os.SameFile(fa, fb)
}

// holds reports whether the regular file name has the SHA-256 sum (hex).
func holds(d *os.Root, name, sum string) (bool, error) {
	fi, err := d.Lstat(name)
	if err != nil {
		return false, err
	}
	if !fi.Mode().IsRegular() {
		return false, nil
	}
	f, err := d.Open(name)
	if err != nil {
		return false, err
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return false, err
	}
	return fmt.Sprintf("%x", h.Sum(nil)) == sum, nil
}

// removeLeftover removes a temporary or backup file, if it is there.
func removeLeftover(d *os.Root, name string) error {
	if d == nil {
		return nil
	}
	if err := d.Remove(name); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	return nil
}
