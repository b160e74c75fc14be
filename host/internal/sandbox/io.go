package sandbox

import (
	"container/heap"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"unicode/utf8"
)

// ErrNotRegular is returned (wrapped in an *fs.PathError) when a write
// target exists and is a directory, symlink, device or other non-regular
// file; such a target is never replaced.
var ErrNotRegular = errors.New("exists and is not a regular file; refusing to replace it")

// Open opens the path read-only through its os.Root, so the lookup cannot
// leave the root. os.Root still follows symlinks that stay inside the
// root, and Rel is canonical (it had no symlinks at Resolve), so Open then
// checks that the descriptor is the validated file: a final symlink or a
// parent directory swapped in since Resolve makes it refuse, before a byte
// is read. A FIFO is opened non-blocking so it cannot hang the caller. A
// path that ends in a slash (Path.Dir) opens only a directory.
func (p Path) Open() (*os.File, error) {
	if p.Root == nil {
		return nil, errUnresolved(p)
	}
	if err := p.checkDenied(); err != nil {
		return nil, err
	}
	f, err := p.Root.OpenFile(p.Rel, readFlags, 0)
	if err != nil {
		return nil, err
	}
	ok, now, err := isValidated(f, p.Abs, func() (fs.FileInfo, error) { return p.Root.Lstat(p.Rel) })
	if err == nil && ok && p.Dir {
		// The descriptor's own type: checkDenied looked at the name,
		// which may have changed since.
		var fi fs.FileInfo
		if fi, err = f.Stat(); err == nil {
			err = p.wantDir(fi.Mode())
		}
	}
	if err != nil || !ok {
		f.Close()
		if err == nil {
			err = swappedError(p, now)
		}
		return nil, err
	}
	return f, nil
}

// checkDenied makes the checks a read does before it opens p: that a
// Child is not denied, and that a path ending in a slash names a
// directory (the open that follows may not say: Linux's openat2 is given
// the canonical Rel, which has no slash).
func (p Path) checkDenied() error {
	if err := p.checkChildDenied(); err != nil {
		return err
	}
	if !p.Dir {
		return nil
	}
	fi, err := p.Root.Lstat(p.Rel)
	if err != nil {
		return nil // the open reports it
	}
	return p.wantDir(fi.Mode())
}

// wantDir refuses a file that is not a directory where p names one.
func (p Path) wantDir(mode fs.FileMode) error {
	if !p.Dir || mode.IsDir() {
		return nil
	}
	return &notDirError{attempted: p.Attempted, regular: mode.IsRegular()}
}

// checkChildDenied applies the denied patterns and protected directories
// to a path made by Child; paths from Resolve passed them already.
func (p Path) checkChildDenied() error {
	if !p.unchecked || p.root == nil {
		return nil
	}
	if pattern, denied := p.root.sb.Denied(p.Abs); denied {
		return &DenialError{Reason: DeniedPatternMatched, Attempted: p.Attempted, Resolved: p.Abs, Pattern: pattern}
	}
	return nil
}

// isValidated reports whether the open file f is the one at want, the
// canonical path validated earlier. Where the kernel can say which path a
// descriptor has (Linux /proc), that path must be want exactly; otherwise
// the name must still not be a symlink and must be the same file as f.
func isValidated(f *os.File, want string, lstat func() (fs.FileInfo, error)) (ok bool, now string, err error) {
	if real, known := openedPath(f); known {
		return real == want, real, nil
	}
	ok, err = sameAsName(f, lstat)
	return ok, "", err
}

// sameAsName reports whether f is the file the name (described by lstat)
// has now, and the name is not a symlink. It is the check where the
// kernel cannot name a descriptor's path; it cannot tell a hard link from
// the original, which the path check can.
func sameAsName(f *os.File, lstat func() (fs.FileInfo, error)) (bool, error) {
	fi, err := f.Stat()
	if err != nil {
		return false, err
	}
	li, err := lstat()
	if err != nil {
		return false, err
	}
	return li.Mode()&fs.ModeSymlink == 0 && os.SameFile(fi, li), nil
}

// DescribedEntry is an entry ReadDirLstat described while it had the
// directory open. Only such an entry's Lstat may be trusted: another
// entry's Info looks its name up outside the root, so describe it with
// Child(name).Lstat.
type DescribedEntry interface {
	fs.DirEntry
	Lstat() (fs.FileInfo, error)
}

// Lstat describes the path without following a final symlink. It goes
// through the root; like every os.Root call it may follow a symlink inside
// the root for a parent directory, so it can describe, but never open, a
// file other than the validated one.
func (p Path) Lstat() (fs.FileInfo, error) {
	if p.Root == nil {
		return nil, errUnresolved(p)
	}
	return p.Root.Lstat(p.Rel)
}

// Entry reports a path made by Child (an entry of a listed directory,
// or a symbolic link named as itself), which Resolve did not follow to
// its end.
func (p Path) Entry() bool { return p.unchecked }

// Readlink returns the target of the symbolic link at p, as the link
// stores it. It goes through the root, like Lstat, and reads no file.
func (p Path) Readlink() (string, error) {
	if err := p.checkChildDenied(); err != nil {
		return "", err
	}
	if p.Root == nil {
		return "", errUnresolved(p)
	}
	return p.Root.Readlink(p.Rel)
}

// ReadDir returns the entries of the directory, sorted by name. It opens
// the directory with Open, so it lists the validated directory or nothing.
// Entries are not filtered: check each with Sandbox.Denied (see Child).
func (p Path) ReadDir() ([]fs.DirEntry, error) {
	f, err := p.Open()
	if err != nil {
		return nil, err
	}
	defer f.Close()
	entries, err := f.ReadDir(-1)
	if err != nil {
		return nil, err
	}
	slices.SortFunc(entries, func(a, b fs.DirEntry) int { return strings.Compare(a.Name(), b.Name()) })
	return entries, nil
}

// ReadDirFirst returns, sorted by name, the first n entries of the
// directory that keep accepts, and whether it accepts more. It reads the
// directory in batches and holds at most n entries, so a directory of a
// million names costs the memory of n (host memory bounded by limits). keep sees bare names; nil keeps every entry.
func (p Path) ReadDirFirst(n int, keep func(name string) bool) (entries []fs.DirEntry, more bool, err error) {
	f, err := p.Open()
	if err != nil {
		return nil, false, err
	}
	defer f.Close()
	n = max(n, 0)
	h := make(byName, 0, min(n, 1024))
	for {
		batch, err := f.ReadDir(256)
		for _, de := range batch {
			if keep != nil && !keep(de.Name()) {
				continue
			}
			switch {
			case len(h) < n:
				heap.Push(&h, de)
			case n > 0 && de.Name() < h[0].Name():
				h[0] = de
				heap.Fix(&h, 0)
				more = true
			default:
				more = true
			}
		}
		if errors.Is(err, io.EOF) || (err == nil && len(batch) == 0) {
			break
		}
		if err != nil {
			return nil, false, err
		}
	}
	slices.SortFunc(h, func(a, b fs.DirEntry) int { return strings.Compare(a.Name(), b.Name()) })
	return h, more, nil
}

// byName is a max-heap of directory entries by name: its top is the entry
// to drop when a smaller name comes.
type byName []fs.DirEntry

func (h byName) Len() int           { return len(h) }
func (h byName) Less(i, j int) bool { return h[i].Name() > h[j].Name() }
func (h byName) Swap(i, j int)      { h[i], h[j] = h[j], h[i] }
func (h *byName) Push(x any)        { *h = append(*h, x.(fs.DirEntry)) }
func (h *byName) Pop() any {
	old := *h
	x := old[len(old)-1]
	*h = old[:len(old)-1]
	return x
}

// Child returns the path of the entry name (as ReadDir returned it) inside
// the directory p, for walking a tree resolved from its top without
// resolving every entry again. Check the child with Sandbox.Denied before
// showing it; the I/O helpers refuse a denied child, and one that is not
// where Abs says. A name that is not a single component
// (empty, ".", "..", or containing a separator) gives a Path whose I/O
// always fails.
func (p Path) Child(name string) Path {
	c := p
	c.unchecked = true
	c.Dir = false // an entry's name has no slash
	c.Attempted = name
	switch {
	case strings.HasSuffix(p.Attempted, "/"):
		c.Attempted = p.Attempted + name
	case p.Attempted != "" && p.Attempted != ".":
		c.Attempted = p.Attempted + "/" + name
	}
	if name == "" || name == "." || name == ".." || strings.ContainsAny(name, `/`+string(filepath.Separator)) {
		c.Root, c.root = nil, nil
		return c
	}
	if p.Rel == "." {
		c.Rel = name
	} else {
		c.Rel = p.Rel + "/" + name
	}
	c.Abs = p.Abs + string(filepath.Separator) + name
	if strings.HasSuffix(p.Abs, string(filepath.Separator)) {
		c.Abs = p.Abs + name // the root is "/" or `C:\`
	}
	if p.written != "" {
		c.written = filepath.Join(p.written, name)
	}
	return c
}

// WriteFileAtomic replaces p with data so that readers see the old or the
// new content, never a mix: it writes a temporary file in the same
// directory, syncs it, gives it the existing file's permissions (0666
// less the umask for a new file), renames it over p and syncs the directory where the
// platform allows. On failure the temporary file is removed and p is
// untouched (directories made for createDirs are removed again while empty). It refuses to replace
// anything but a regular file (ErrNotRegular), so it never writes through
// a symlink, and any path CheckWrite refuses. created reports that p did
// not exist before.
//
// The parent directory is opened through the root and checked to be the
// validated one when staging, and reopened and checked to be that same
// directory at commit, so a directory swapped in after Resolve cannot
// redirect the write, even to elsewhere inside the root.
func (s *Sandbox) WriteFileAtomic(p Path, data []byte, createDirs bool) (created bool, err error) {
	t := s.Begin()
	defer t.Close()
	if created, err = t.Stage(p, data, createDirs); err != nil {
		return false, err
	}
	return created, t.Commit()
}

// owns checks that p came from this sandbox's Resolve (or Child of such a
// path) and that it may be written (CheckWrite). Every write stages
// through it, so it is where the sandbox's write rules hold whatever its
// callers check before.
func (s *Sandbox) owns(p Path) error {
	if p.root == nil || !slices.Contains(s.roots, p.root) {
		return errUnresolved(p)
	}
	return s.CheckWrite(p)
}

// Names of the files a write keeps beside its target until it ends:
// ".toolhost-tmp-<id>-<base>" holds the new content, ".toolhost-bak-<id>-<base>"
// is a hard link to the old content while a commit may still roll back.
// The fixed prefix makes a leftover obviously toolhost's (and easy to
// ignore); the id ties a file's two names together and to its intent
// record; base says which target they belong to.
const (
	LeftoverPrefix = ".toolhost-"
	tmpKind        = "tmp"
	bakKind        = "bak"
)

// maxTempBase keeps a leftover name within the usual 255-byte limit.
const maxTempBase = 200

func leftoverName(kind, id, base string) string {
	if len(base) > maxTempBase {
		cut := maxTempBase
		for cut > 0 && !utf8.RuneStart(base[cut]) {
			cut--
		}
		base = base[:cut]
	}
	return LeftoverPrefix + kind + "-" + id + "-" + base
}

// newStageID is 16 random hex digits, unique enough that a leftover name
// never collides with another write's.
func newStageID() string {
	var b [8]byte
	rand.Read(b[:]) // never fails (crypto/rand panics instead)
	return hex.EncodeToString(b[:])
}

// errUnresolved is the error for a Path that did not come from Resolve on
// an open sandbox.
func errUnresolved(p Path) error {
	return &fs.PathError{Op: "sandbox", Path: p.Attempted, Err: errors.New("path was not resolved by this sandbox")}
}

// RootPath returns the root directory holding p, as a Path: a walk that
// must look at the directories above p (the ignore files above a
// searched directory) starts there and goes down with Child.
func (p Path) RootPath() Path {
	r := p
	r.Attempted, r.Abs, r.Rel, r.Dir, r.unchecked = ".", p.RootDir, ".", false, false
	if p.written != "" {
		r.written = p.RootDir
	}
	return r
}
