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
func (p Path) ReadDirTypes() ([]fs.DirEntry, error) {
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
	return entries, nil
}
