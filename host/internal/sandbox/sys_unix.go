//go:build unix

package sandbox

import (
	"errors"
	"os"
	"syscall"
)

// readFlags opens read-only and non-blocking, so opening a FIFO cannot
// hang waiting for a writer; regular files and directories ignore it.
const readFlags = os.O_RDONLY | syscall.O_NONBLOCK

// isNotDir reports ENOTDIR: a path component that exists but is a file, so
// everything below it does not exist.
func isNotDir(err error) bool { return errors.Is(err, syscall.ENOTDIR) }

// linkUnsupported reports a filesystem that has no hard links (Linux says
// EPERM on FAT, others ENOTSUP).
func linkUnsupported(err error) bool {
	return errors.Is(err, syscall.EPERM) || errors.Is(err, syscall.ENOTSUP) ||
		errors.Is(err, syscall.EOPNOTSUPP) || errors.Is(err, errors.ErrUnsupported)
}

// lockFile takes an exclusive advisory lock on f, held until f is closed
// or the process dies. With wait false it fails at once (errLocked) when
// another open file holds the lock.
func lockFile(f *os.File, wait bool) error {
	how := syscall.LOCK_EX
	if !wait {
		how |= syscall.LOCK_NB
	}
	for {
		err := syscall.Flock(int(f.Fd()), how)
		switch {
		case errors.Is(err, syscall.EINTR):
			continue
		case errors.Is(err, syscall.EWOULDBLOCK):
			return errLocked
		}
		return err
	}
}

// sameDevice reports whether two files are on the same file system, so a
// rename between them can work; unknown counts as the same (the rename
// then says EXDEV, and the move copies).
func sameDevice(a, b os.FileInfo) bool {
	sa, ok1 := a.Sys().(*syscall.Stat_t)
	sb, ok2 := b.Sys().(*syscall.Stat_t)
	return !ok1 || !ok2 || sa.Dev == sb.Dev
}

// isCrossDevice reports a rename refused because its two names are on
// different file systems (or mounts).
func isCrossDevice(err error) bool { return errors.Is(err, syscall.EXDEV) }

// ownerOf returns the owner and group of a file, where the system says.
func ownerOf(fi os.FileInfo) (uid, gid int, ok bool) {
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return 0, 0, false
	}
	return int(st.Uid), int(st.Gid), true
}

// fileLocks says Lock reaches other processes through lock files (flock).
const fileLocks = true
