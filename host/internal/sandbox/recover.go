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
//	{"file": {...}}       one per staged entry, written before its temporary file
//	                      (for a removal or a move, before its commit renames
//	                      anything; for a directory, before it is made)
//	{"dropped": "<tmp>"}  an entry whose staging failed after it was recorded
//	{"copied": "<tmp>"}   a move's copy to another file system is complete
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
	// Remove: the target is removed, not replaced (Txn.StageRemove).
	// Its commit renames it to Backup; Tmp is never created.
	Remove bool `json:"remove,omitempty"`
	// Mkdir: the target is a directory the Txn created when staging.
	Mkdir bool `json:"mkdir,omitempty"`
	// Move: the entry Src in SrcDir is moved to the target. Its commit
	// renames an existing target to Backup (overwrite), then renames Src
	// to the target or, across file systems, renames the complete copy
	// Tmp to the target and then Src to SrcBackup.
	Move      bool   `json:"move,omitempty"`
	SrcDir    string `json:"srcdir,omitempty"`
	Src       string `json:"src,omitempty"`
	SrcBackup string `json:"srcbackup,omitempty"`
	SHA256    string `json:"sha256"` // of the new content; "" for all but writes

	copied bool // a "copied" line names Tmp
}

type intentLine struct {
	File       *intentFile `json:"file,omitempty"`
	Dropped    string      `json:"dropped,omitempty"`
	Copied     string      `json:"copied,omitempty"`
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

// copied records that a move's copy is complete (and synced): Recover
// then knows a destination without its temporary name is that copy.
func (in *intent) copied(tmp string) error {
	if err := in.append(intentLine{Copied: tmp}); err != nil {
		return err
	}
	if err := in.f.Sync(); err != nil {
		return fmt.Errorf("sync the transaction's recovery record %s: %w", in.path, err)
	}
	return nil
}

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
	// commit was undone: Restored files hold their old content again,
	// Removed files and directories, which it had created, are gone, and
	// Moved entries are back at their source.
	Completed bool
	Restored  []string
	Removed   []string
	// Moved lists the entries moved back to their source, as
	// "destination -> source".
	Moved []string
	// Kept lists what Recover left alone because a file changed after the
	// crash, each with what was done and where the old content is.
	Kept []string
}

// Recover finishes every transaction that a crash interrupted, from the
// records in Config.RecoveryDir: all or nothing, as the commit promised. A
// commit that had renamed every file stands (its backups are removed);
// one that had not is undone — every target that has a backup gets its old
// content back, files it created are removed, an entry it removed gets
// its name back, an entry it moved goes back to its source — and its
// temporary files and copies, and the directories it made if they are
// still empty, are removed. A transaction still running in this or another process is left
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
		for _, dir := range fl.dirs() {
			if _, ok := dirs[dir]; ok {
				continue
			}
			d, err := s.openRecordedDir(dir)
			if err != nil {
				return rec, fmt.Errorf("sandbox: recovery record %s: %w; it is kept for the next start", name, err)
			}
			dirs[dir] = d // nil: the directory is gone, and with it every leftover
		}
	}
	if commit && !rolledBack {
		// A directory gone since the crash hides whether its file was
		// renamed: taking the commit as complete could drop the only copy
		// of old content elsewhere, so a person decides.
		for _, fl := range files {
			for _, dir := range fl.dirs() {
				if dirs[dir] == nil && !fl.Mkdir {
					return rec, fmt.Errorf("sandbox: recovery record %s: directory %s, where %s was being replaced, removed or moved, no longer exists, so toolhost cannot tell whether that commit finished; it is kept for the next start. Check the files it names and restore any .toolhost-bak-* file beside them by hand, then delete the record", name, dir, fl.Target)
				}
			}
		}
	}
	var errs []error
	switch {
	case !commit || rolledBack:
		// Nothing was renamed, or the Txn undid its renames itself.
	case !slices.ContainsFunc(files, func(fl intentFile) bool { return pending(dirs, fl) }):
		rec.Completed = true
		for _, fl := range files {
			errs = append(errs, removeLeftover(dirs[fl.Dir], fl.Backup))
			if fl.Move {
				errs = append(errs, removeLeftover(dirs[fl.SrcDir], fl.SrcBackup))
			}
		}
	default:
		for _, fl := range slices.Backward(files) {
			if fl.Move {
				errs = append(errs, undoMove(dirs, fl, &rec))
			} else if !fl.Mkdir {
				errs = append(errs, undo(dirs[fl.Dir], fl, &rec))
			}
		}
	}
	for _, fl := range files {
		errs = append(errs, removeLeftover(dirs[fl.Dir], fl.Tmp))
	}
	if !rec.Completed {
		// Directories staging made, newest first, once the temporary
		// files in them are gone; one holding anything else is kept.
		for _, fl := range slices.Backward(files) {
			if d := dirs[fl.Dir]; fl.Mkdir && d != nil && rmdirRecorded(d, fl.Target) {
				rec.Removed = append(rec.Removed, filepath.Join(fl.Dir, fl.Target))
			}
		}
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
	dropped, copied := map[string]bool{}, map[string]bool{}
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
		case l.Copied != "":
			copied[l.Copied] = true
		}
		commit = commit || l.Commit
		rolledBack = rolledBack || l.RolledBack
	}
	files = slices.DeleteFunc(files, func(f intentFile) bool { return dropped[f.Tmp] })
	for i := range files {
		files[i].copied = copied[files[i].Tmp]
	}
	return files, commit, rolledBack, nil
}

// validIntentFile checks that a record names single entries of a
// canonical directory, and leftovers by toolhost's names only.
func validIntentFile(f intentFile) bool {
	single := func(n string) bool {
		return n != "" && n != "." && n != ".." && !strings.ContainsAny(n, `/`+string(filepath.Separator))
	}
	dir := func(d string) bool { return filepath.IsAbs(d) && filepath.Clean(d) == d }
	bak := func(n string) bool { return single(n) && strings.HasPrefix(n, LeftoverPrefix+bakKind+"-") }
	if f.Move && !(dir(f.SrcDir) && single(f.Src) && bak(f.SrcBackup)) {
		return false
	}
	return dir(f.Dir) && single(f.Target) && single(f.Tmp) && bak(f.Backup) &&
		strings.HasPrefix(f.Tmp, LeftoverPrefix+tmpKind+"-")
}

// dirs returns the directories an entry of a record names.
func (f intentFile) dirs() []string {
	if f.Move && f.SrcDir != f.Dir {
		return []string{f.Dir, f.SrcDir}
	}
	return []string{f.Dir}
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
// there, a removal's target is and its backup is not (renaming the
// target to the backup is the removal), or a move's source is still
// there (its last step, rename or removal, takes the source's name
// away). A directory was made when staged.
func pending(dirs map[string]*os.Root, f intentFile) bool {
	d := dirs[f.Dir]
	switch {
	case f.Mkdir:
		return false
	case f.Move:
		return exists(dirs[f.SrcDir], f.Src)
	case f.Remove:
		return exists(d, f.Target) && !exists(d, f.Backup)
	}
	return exists(d, f.Tmp)
}

// undoMove puts one move of an interrupted commit back: the source gets
// its entry back (from its backup name after a copy, or from the
// destination after a rename), a copy placed at the destination goes,
// and the destination's old entry (overwrite) gets its name back.
//
// After a rename the destination holds the moved entry when the source
// is gone (a rollback puts the source back before anything else). A
// copy at the destination is ours when its temporary name is gone and
// the destination's old entry is still kept under the backup name, or
// there was none (Created; a commit refuses an overwrite whose
// destination vanished): once a rollback had put the old entry back, the
// backup name is gone.
func undoMove(dirs map[string]*os.Root, f intentFile, rec *Recovered) error {
	dd, sd := dirs[f.Dir], dirs[f.SrcDir]
	if dd == nil || sd == nil {
		return nil
	}
	target, source := filepath.Join(f.Dir, f.Target), filepath.Join(f.SrcDir, f.Src)
	ours := !exists(dd, f.Tmp) && exists(dd, f.Target) && (f.Created || exists(dd, f.Backup))
	if f.copied {
		if exists(sd, f.SrcBackup) {
			if err := renameRecorded(sd, f.SrcBackup, sd, f.Src); err != nil {
				return err
			}
		}
		if ours && exists(sd, f.Src) {
			// The copy goes to its temporary name first, so that a crash
			// while it is removed leaves a leftover, not half a tree
			// under the destination's name.
			if err := renameRecorded(dd, f.Target, dd, f.Tmp); err != nil {
				return err
			}
			if err := removeLeftover(dd, f.Tmp); err != nil {
				return err
			}
		}
	} else if !exists(sd, f.Src) && exists(dd, f.Target) {
		if err := renameRecorded(dd, f.Target, sd, f.Src); err != nil {
			return err
		}
		rec.Moved = append(rec.Moved, target+" -> "+source)
	} else if exists(sd, f.Src) && exists(dd, f.Target) && (f.Created || exists(dd, f.Backup)) {
		// Moved, and the source created again since the crash (or the
		// destination by someone else): neither is touched.
		rec.Kept = append(rec.Kept, fmt.Sprintf("%s was moved to %s by the interrupted commit, and %s exists again; both are kept as they are",
			source, target, source))
	}
	if exists(dd, f.Backup) {
		if exists(dd, f.Target) {
			rec.Kept = append(rec.Kept, fmt.Sprintf("%s is not free (it holds what the interrupted commit moved there, or something created since) and is kept; what was there before is in %s",
				target, filepath.Join(f.Dir, f.Backup)))
			return nil
		}
		if err := renameRecorded(dd, f.Backup, dd, f.Target); err != nil {
			return err
		}
		rec.Restored = append(rec.Restored, target)
	}
	return nil
}

// renameRecorded renames from in d1 to to in d2 without replacing
// anything at to (renameRecorded's directories come from a record, each
// opened and checked like a write's parent).
func renameRecorded(d1 *os.Root, from string, d2 *os.Root, to string) error {
	a, err := d1.Open(".")
	if err != nil {
		return err
	}
	defer a.Close()
	b, err := d2.Open(".")
	if err != nil {
		return err
	}
	defer b.Close()
	err = renameAt(a, from, b, to, true)
	if !errors.Is(err, errors.ErrUnsupported) {
		return err
	}
	if exists(d2, to) {
		return &os.LinkError{Op: "rename", Old: from, New: to, Err: fs.ErrExist}
	}
	err = renameAt(a, from, b, to, false)
	if errors.Is(err, errors.ErrUnsupported) && d1 == d2 {
		return d1.Rename(from, to)
	}
	return err
}

// rmdirRecorded removes the directory name in d if it is empty.
func rmdirRecorded(d *os.Root, name string) bool {
	f, err := d.Open(".")
	if err != nil {
		return false
	}
	defer f.Close()
	return rmdirEmpty(&parentDir{root: d, file: f}, name)
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

// restoreRemoved gives a removed entry (a file, a link, a tree) its name
// back without replacing one created there meanwhile.
func restoreRemoved(d *os.Root, backup, target string) error {
	return renameRecorded(d, backup, d, target)
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

// removeLeftover removes a temporary or backup file, or a tree (a
// removed directory, a copy), if it is there. os.Root.RemoveAll follows
// no symbolic link.
func removeLeftover(d *os.Root, name string) error {
	if d == nil {
		return nil
	}
	if err := removeTree(d, name); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	return nil
}
