//go:build linux

package sandbox

import (
	"errors"
	"os"
	"strconv"
	"syscall"

	"golang.org/x/sys/unix"
)

// openDirHandle opens dir as an O_PATH descriptor for the fast paths
// (fstatat during Resolve, openat2 in OpenFile). The *os.File owns it, so
// that after Close any Path still held fails instead of using a
// descriptor number the process has since reused. It returns nils where
// the handle cannot be had; callers then use the os.Root.
func openDirHandle(dir string) (*os.File, syscall.RawConn) {
	fd, err := unix.Open(dir, unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, nil
	}
	f := os.NewFile(uintptr(fd), dir)
	rc, err := f.SyscallConn()
	if err != nil {
		f.Close()
		return nil, nil
	}
	return f, rc
}

// isSymlinkAt is lstat of rel relative to the directory dirfd.
func isSymlinkAt(dirfd int, rel string) (bool, error) {
	var st unix.Stat_t
	err := ignoringEINTR(func() error { return unix.Fstatat(dirfd, rel, &st, unix.AT_SYMLINK_NOFOLLOW) })
	if err != nil {
		return false, &os.PathError{Op: "lstat", Path: rel, Err: err}
	}
	return st.Mode&unix.S_IFMT == unix.S_IFLNK, nil
}

// readlinkAt is readlink of rel relative to the directory dirfd.
func readlinkAt(dirfd int, rel string) (string, error) {
	for size := 256; ; size *= 2 {
		buf := make([]byte, size)
		var n int
		err := ignoringEINTR(func() (err error) {
			n, err = unix.Readlinkat(dirfd, rel, buf)
			return err
		})
		if err != nil {
			return "", &os.PathError{Op: "readlink", Path: rel, Err: err}
		}
		if n < size {
			return string(buf[:n]), nil
		}
	}
}

// openedPath returns the path the kernel has for an open file. ok is false
// where /proc is not mounted; callers then compare file identities.
func openedPath(f *os.File) (path string, ok bool) {
	rc, err := f.SyscallConn()
	if err != nil {
		return "", false
	}
	var rerr error
	cerr := rc.Control(func(fd uintptr) {
		path, rerr = os.Readlink("/proc/self/fd/" + strconv.Itoa(int(fd)))
	})
	if cerr != nil || rerr != nil {
		return "", false
	}
	return path, true
}

func ignoringEINTR(fn func() error) error {
	for {
		if err := fn(); err != unix.EINTR {
			return err
		}
	}
}

// renameNoReplace renames from to to inside the directory dir, failing
// with EEXIST (fs.ErrExist) when to exists, atomically. It returns
// errors.ErrUnsupported where the kernel or filesystem lacks
// RENAME_NOREPLACE.
func renameNoReplace(dir *os.File, from, to string) error {
	rc, err := dir.SyscallConn()
	if err != nil {
		return err
	}
	var rerr error
	cerr := rc.Control(func(fd uintptr) {
		rerr = ignoringEINTR(func() error {
			return unix.Renameat2(int(fd), from, int(fd), to, unix.RENAME_NOREPLACE)
		})
	})
	switch {
	case cerr != nil:
		return cerr
	case errors.Is(rerr, unix.EINVAL) || errors.Is(rerr, unix.ENOSYS):
		return errors.ErrUnsupported
	case rerr != nil:
		return &os.LinkError{Op: "rename", Old: from, New: to, Err: rerr}
	}
	return nil
}

// renameAt renames from in the directory fromDir to to in the directory
// toDir, both open directories, so that no path string is looked up
// again: a parent swapped for a symlink since it was opened cannot
// redirect it. With noReplace it fails with fs.ErrExist when to exists,
// atomically, and returns errors.ErrUnsupported where the kernel or
// filesystem lacks RENAME_NOREPLACE. Across file systems it fails with
// an error matching syscall.EXDEV.
func renameAt(fromDir *os.File, from string, toDir *os.File, to string, noReplace bool) error {
	var flags uint
	if noReplace {
		flags = unix.RENAME_NOREPLACE
	}
	var rerr error
	err := withFds(fromDir, toDir, func(ffd, tfd int) {
		rerr = ignoringEINTR(func() error { return unix.Renameat2(ffd, from, tfd, to, flags) })
	})
	switch {
	case err != nil:
		return err
	case noReplace && (errors.Is(rerr, unix.EINVAL) || errors.Is(rerr, unix.ENOSYS)):
		return errors.ErrUnsupported
	case rerr != nil:
		return &os.LinkError{Op: "rename", Old: from, New: to, Err: rerr}
	}
	return nil
}

// rmdirAt removes name in dir if it is an empty directory, and nothing
// else: a file that took its name is never removed.
func rmdirAt(dir *os.File, name string) error {
	var rerr error
	err := withFds(dir, dir, func(fd, _ int) {
		rerr = ignoringEINTR(func() error { return unix.Unlinkat(fd, name, unix.AT_REMOVEDIR) })
	})
	if err != nil {
		return err
	}
	if rerr != nil {
		return &os.PathError{Op: "rmdir", Path: name, Err: rerr}
	}
	return nil
}

// withFds runs fn with the descriptors of two open files.
func withFds(a, b *os.File, fn func(afd, bfd int)) error {
	ra, err := a.SyscallConn()
	if err != nil {
		return err
	}
	rb, err := b.SyscallConn()
	if err != nil {
		return err
	}
	var cerr error
	err = ra.Control(func(afd uintptr) {
		cerr = rb.Control(func(bfd uintptr) { fn(int(afd), int(bfd)) })
	})
	if err != nil {
		return err
	}
	return cerr
}
