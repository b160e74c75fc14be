package sandbox

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"slices"
	"strings"
)

// Open opens the file read-only through the root. Because os.Root follows
// a final symlink that stays inside the root, Open then checks where the
// descriptor really points: if that is not the validated path (a symlink
// was swapped in after Resolve), it refuses.
func (p Path) Open() (*os.File, error) {
	f, err := p.Root.Open(p.Rel)
	if err != nil {
		return nil, err
	}
	if err := p.verify(f); err != nil {
		f.Close()
		return nil, err
	}
	return f, nil
}

// verify checks that the open descriptor is the file Resolve validated:
// first by device and inode, which costs nothing when the caller stats the
// file anyway, then, if that differs (the file was replaced, perhaps
// legitimately), by the descriptor's real path.
func (p Path) verify(f *os.File) error {
	if p.id != (fileID{}) {
		if fi, err := f.Stat(); err == nil && idOf(fi) == p.id {
			return nil
		}
	}
	real, err := os.Readlink(fmt.Sprintf("/proc/self/fd/%d", f.Fd()))
	if err != nil {
		return nil // no /proc: os.Root's containment still holds
	}
	if real != p.Abs {
		return &DenialError{Reason: PathOutsideSandbox, Attempted: p.Attempted, Resolved: real}
	}
	return nil
}

// Lstat describes the path without following a final symlink.
func (p Path) Lstat() (fs.FileInfo, error) { return p.Root.Lstat(p.Rel) }

// ReadDir returns the directory's entries sorted by name.
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

// WriteFileAtomic replaces p with data: it writes a temporary file in the
// same directory, syncs it, gives it the existing file's mode (0644 for a
// new file) and renames it over p, so readers see the old or the new
// content, never a mix. On failure the temporary file is removed and p is
// untouched. It refuses to replace anything but a regular file.
func (s *Sandbox) WriteFileAtomic(p Path, data []byte, createDirs bool) (created bool, err error) {
	if p.Rel == "." {
		return false, fmt.Errorf("%s: is a directory", p.Attempted)
	}
	dir, base := path.Dir(p.Rel), path.Base(p.Rel)
	mode := fs.FileMode(0o644)
	fi, err := p.Root.Lstat(p.Rel)
	switch {
	case err == nil && !fi.Mode().IsRegular():
		return false, fmt.Errorf("%s exists and is not a regular file; refusing to replace it", p.Attempted)
	case err == nil:
		mode = fi.Mode().Perm()
	case errors.Is(err, fs.ErrNotExist):
		created = true
		if createDirs && dir != "." {
			if err := p.Root.MkdirAll(dir, 0o755); err != nil {
				return false, err
			}
		}
	default:
		return false, err
	}
	tmp := path.Join(dir, "."+base+".toolhost-"+randomSuffix()+".tmp")
	if err := writeTemp(p.Root, tmp, data, mode); err != nil {
		p.Root.Remove(tmp)
		return false, err
	}
	if err := p.Root.Rename(tmp, p.Rel); err != nil {
		p.Root.Remove(tmp)
		return false, err
	}
	if d, err := p.Root.Open(dir); err == nil {
		d.Sync()
		d.Close()
	}
	return created, nil
}

func writeTemp(r *os.Root, name string, data []byte, mode fs.FileMode) error {
	f, err := r.OpenFile(name, os.O_WRONLY|os.O_CREATE|os.O_EXCL, mode)
	if err != nil {
		return err
	}
	_, err = f.Write(data)
	if err == nil {
		err = f.Chmod(mode) // the umask may have narrowed it
	}
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}

func randomSuffix() string {
	var b [6]byte
	rand.Read(b[:])
	return hex.EncodeToString(b[:])
}
