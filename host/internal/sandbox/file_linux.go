//go:build linux

package sandbox

import (
	"errors"
	"io"
	"io/fs"
	"os"
	"slices"
	"strings"
	"time"

	"golang.org/x/sys/unix"
)

// File is a file opened read-only for a host function. On Linux it is a
// bare descriptor opened with openat2 beneath the root's directory: one
// system call where os.Root.Open makes four (open, fcntl, epoll_ctl,
// fstat), which is a third of a warm read_file here.
type File struct {
	fd   int
	os   *os.File // fallback when openat2 is unavailable
	name string
}

// OpenFile opens p read-only for a host function. Because p.Rel is
// canonical it has no symlinks, so RESOLVE_NO_SYMLINKS turns any symlink
// met now (swapped in after validation, final component or parent) into a
// refusal, and RESOLVE_BENEATH keeps the lookup inside the root. O_NONBLOCK
// keeps a FIFO from blocking the call. Where openat2 is unavailable it
// falls back to Open.
func (p Path) OpenFile() (*File, error) {
	if p.root == nil || p.root.fd == nil {
		return p.openFallback()
	}
	if err := p.checkDenied(); err != nil {
		return nil, err
	}
	var fd int
	var err error
	cerr := p.root.fd.Control(func(dirfd uintptr) {
		err = ignoringEINTR(func() (err error) {
			fd, err = unix.Openat2(int(dirfd), p.Rel, &unix.OpenHow{
				Flags:   unix.O_RDONLY | unix.O_CLOEXEC | unix.O_NOCTTY | unix.O_NONBLOCK,
				Resolve: unix.RESOLVE_BENEATH | unix.RESOLVE_NO_SYMLINKS | unix.RESOLVE_NO_MAGICLINKS,
			})
			return err
		})
	})
	switch {
	case cerr != nil:
		return nil, &fs.PathError{Op: "open", Path: p.Attempted, Err: cerr}
	case err == nil:
		return &File{fd: fd, name: p.Attempted}, nil
	case errors.Is(err, unix.ELOOP) || errors.Is(err, unix.EXDEV):
		return nil, swappedError(p, "")
	case errors.Is(err, unix.ENOSYS) || errors.Is(err, unix.EPERM):
		// No openat2 (old kernel, or a seccomp filter that refuses it).
		return p.openFallback()
	}
	return nil, &fs.PathError{Op: "open", Path: p.Attempted, Err: err}
}

func (p Path) openFallback() (*File, error) {
	f, err := p.Open()
	if err != nil {
		return nil, err
	}
	return &File{fd: -1, os: f, name: p.Attempted}, nil
}

// Stat describes the open file.
func (f *File) Stat() (FileStat, error) {
	if f.os != nil {
		fi, err := f.os.Stat()
		if err != nil {
			return FileStat{}, err
		}
		return FileStat{Size: fi.Size(), ModTime: fi.ModTime(), Mode: fi.Mode()}, nil
	}
	var st unix.Stat_t
	if err := unix.Fstat(f.fd, &st); err != nil {
		return FileStat{}, &fs.PathError{Op: "stat", Path: f.name, Err: err}
	}
	mode := fs.FileMode(st.Mode & 0o777)
	switch st.Mode & unix.S_IFMT {
	case unix.S_IFDIR:
		mode |= fs.ModeDir
	case unix.S_IFREG:
	case unix.S_IFLNK:
		mode |= fs.ModeSymlink
	default:
		mode |= fs.ModeIrregular
	}
	return FileStat{Size: st.Size, ModTime: time.Unix(st.Mtim.Sec, st.Mtim.Nsec), Mode: mode}, nil
}

// ReadAt reads like io.ReaderAt.
func (f *File) ReadAt(b []byte, off int64) (int, error) {
	if f.os != nil {
		return f.os.ReadAt(b, off)
	}
	n := 0
	for n < len(b) {
		m, err := unix.Pread(f.fd, b[n:], off+int64(n))
		if errors.Is(err, unix.EINTR) {
			continue
		}
		if err != nil {
			return n, &fs.PathError{Op: "read", Path: f.name, Err: err}
		}
		if m == 0 {
			return n, io.EOF
		}
		n += m
	}
	return n, nil
}

// Read reads like io.Reader.
func (f *File) Read(b []byte) (int, error) {
	if f.os != nil {
		return f.os.Read(b)
	}
	for {
		n, err := unix.Read(f.fd, b)
		switch {
		case errors.Is(err, unix.EINTR):
			continue
		case err != nil:
			return 0, &fs.PathError{Op: "read", Path: f.name, Err: err}
		case n == 0 && len(b) > 0:
			return 0, io.EOF
		}
		return n, nil
	}
}

// Close releases the file.
func (f *File) Close() error {
	if f.os != nil {
		return f.os.Close()
	}
	return unix.Close(f.fd)
}

// ReadDirTypes returns the entries of the directory p, sorted by name,
// with their types as the directory itself records them. It opens p like
// OpenFile (beneath the root, no symlink anywhere), then lists the
// descriptor: ReadDir lists through os.Root, which looks up every entry
// once more (a third of a walk's time). An entry's Info is not confined
// to the root: describe an entry with Child(name).Lstat instead. Entries
// are not filtered: check each with Sandbox.Denied (see Child).
func (p Path) ReadDirTypes() ([]fs.DirEntry, error) { return p.readDir(nil) }

// ReadDirLstat is ReadDirTypes with each entry described as Lstat would
// describe it (Info), read by fstatat on the directory it has open, not
// following a symbolic link: one system call an entry, where
// Child(name).Lstat resolves the path from the root again (three, and
// most of a listing's time). An entry's name is one component read from
// the directory, so the lookup cannot leave it. An entry that vanished
// before it was described has an Info error, as its Lstat would.
func (p Path) ReadDirLstat() ([]fs.DirEntry, error) { return p.readDir(p.describe) }

// readDir lists p sorted by name, then, given describe, has it describe
// the entries while the directory is open (fd).
func (p Path) readDir(describe func(fd int, entries []fs.DirEntry) []fs.DirEntry) ([]fs.DirEntry, error) {
	f, err := p.OpenFile()
	if err != nil {
		return nil, err
	}
	if f.os != nil {
		f.os.Close()
		return p.ReadDir()
	}
	d := os.NewFile(uintptr(f.fd), p.Abs)
	defer d.Close()
	entries, err := d.ReadDir(-1)
	if err != nil {
		return nil, err
	}
	slices.SortFunc(entries, func(a, b fs.DirEntry) int { return strings.Compare(a.Name(), b.Name()) })
	if describe != nil {
		entries = describe(f.fd, entries)
	}
	return entries, nil
}

// describe is entries, each with its fstatat beside the directory fd.
func (p Path) describe(fd int, entries []fs.DirEntry) []fs.DirEntry {
	described := make([]statEntry, len(entries))
	out := make([]fs.DirEntry, len(entries))
	for i, de := range entries {
		var st unix.Stat_t
		err := ignoringEINTR(func() error { return unix.Fstatat(fd, de.Name(), &st, unix.AT_SYMLINK_NOFOLLOW) })
		described[i] = statEntry{DirEntry: de}
		if err != nil {
			described[i].err = &fs.PathError{Op: "lstat", Path: p.Child(de.Name()).Attempted, Err: err}
		} else {
			described[i].info = statInfo{name: de.Name(), st: st}
		}
		out[i] = &described[i]
	}
	return out
}

var _ DescribedEntry = (*statEntry)(nil)

// statEntry is a directory entry described when it was read.
type statEntry struct {
	fs.DirEntry
	info statInfo
	err  error
}

func (e *statEntry) Info() (fs.FileInfo, error) { return e.Lstat() }

// Lstat is the entry as described when it was read (DescribedEntry).
func (e *statEntry) Lstat() (fs.FileInfo, error) {
	if e.err != nil {
		return nil, e.err
	}
	return e.info, nil
}

// statInfo is an fs.FileInfo of an fstatat, as os.Lstat makes one.
type statInfo struct {
	name string
	st   unix.Stat_t
}

func (fi statInfo) Name() string       { return fi.name }
func (fi statInfo) Size() int64        { return fi.st.Size }
func (fi statInfo) ModTime() time.Time { return time.Unix(fi.st.Mtim.Unix()) }
func (fi statInfo) IsDir() bool        { return fi.Mode().IsDir() }
func (fi statInfo) Sys() any           { return &fi.st }

func (fi statInfo) Mode() fs.FileMode {
	m := fs.FileMode(fi.st.Mode & 0o777)
	switch fi.st.Mode & unix.S_IFMT {
	case unix.S_IFDIR:
		m |= fs.ModeDir
	case unix.S_IFLNK:
		m |= fs.ModeSymlink
	case unix.S_IFIFO:
		m |= fs.ModeNamedPipe
	case unix.S_IFSOCK:
		m |= fs.ModeSocket
	case unix.S_IFCHR:
		m |= fs.ModeDevice | fs.ModeCharDevice
	case unix.S_IFBLK:
		m |= fs.ModeDevice
	}
	if fi.st.Mode&unix.S_ISUID != 0 {
		m |= fs.ModeSetuid
	}
	if fi.st.Mode&unix.S_ISGID != 0 {
		m |= fs.ModeSetgid
	}
	if fi.st.Mode&unix.S_ISVTX != 0 {
		m |= fs.ModeSticky
	}
	return m
}
