package confine

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"syscall"
	"unsafe"

	"golang.org/x/sys/unix"
)

// treeDevice is the device tree lies on: the search stays on it.
func treeDevice(tree string) (uint64, bool, error) {
	var st syscall.Stat_t
	if err := syscall.Stat(tree, &st); err != nil {
		return 0, false, &os.PathError{Op: "stat", Path: tree, Err: err}
	}
	return st.Dev, true, nil
}

// readDir reads at most limit entries of dir, returning the names of its
// directories (subdirs: not links) and of the other entries the search
// looks for (names: see wanted), and how many it read. It fails with
// errOtherFS when dir lies on another device than dev, and with
// errTooMany (and what it read) at the limit. dir is opened without
// following a link at its last element: a command can swap a directory
// for a link while the search runs, and what a link leads to is not
// searched (bindInside checks every path it binds anyway).
//
// It reads the directory with getdents64 itself: the search runs for
// every call, and os.File costs twice the system calls per directory
// (the poller, flag checks, a small buffer).
func readDir(dir string, dev uint64, hasDev bool, limit int) (names, subdirs []string, n int, err error) {
	fd, err := syscall.Open(dir, syscall.O_RDONLY|syscall.O_DIRECTORY|syscall.O_NOFOLLOW|syscall.O_CLOEXEC, 0)
	if err != nil {
		return nil, nil, 0, &os.PathError{Op: "open", Path: dir, Err: err}
	}
	defer syscall.Close(fd)
	if hasDev {
		var st syscall.Stat_t
		if err := syscall.Fstat(fd, &st); err != nil {
			return nil, nil, 0, &os.PathError{Op: "fstat", Path: dir, Err: err}
		}
		if st.Dev != dev {
			return nil, nil, 0, errOtherFS
		}
	}
	buf := make([]byte, 32<<10)
	for {
		got, err := syscall.Getdents(fd, buf)
		if errors.Is(err, syscall.EINTR) {
			continue
		}
		if err != nil {
			return names, subdirs, n, &os.PathError{Op: "getdents", Path: dir, Err: err}
		}
		if got <= 0 {
			return names, subdirs, n, nil
		}
		for off := 0; off < got; {
			name, typ, reclen, err := dirent(buf[off:got])
			if err != nil {
				return names, subdirs, n, fmt.Errorf("%s: %w", dir, err)
			}
			off += reclen
			if string(name) == "." || string(name) == ".." {
				continue
			}
			if n == limit {
				return names, subdirs, n, errTooMany
			}
			n++
			if typ == syscall.DT_UNKNOWN {
				typ = lstatType(dir + "/" + string(name))
			}
			// Names are made strings only when kept: most are not.
			switch {
			case typ == syscall.DT_DIR:
				subdirs = append(subdirs, string(name))
			case wanted(string(name)):
				names = append(names, string(name))
			}
		}
	}
}

// dirent decodes the linux_dirent64 at the start of b: its name, type and
// length.
func dirent(b []byte) (name []byte, typ uint8, reclen int, err error) {
	const nameOff = int(unsafe.Offsetof(syscall.Dirent{}.Name))
	if len(b) < nameOff {
		return nil, 0, 0, errors.New("a short directory entry")
	}
	reclen = int(*(*uint16)(unsafe.Pointer(&b[unsafe.Offsetof(syscall.Dirent{}.Reclen)])))
	if reclen < nameOff || reclen > len(b) {
		return nil, 0, 0, errors.New("a malformed directory entry")
	}
	typ = b[unsafe.Offsetof(syscall.Dirent{}.Type)]
	name = b[nameOff:reclen]
	if i := bytes.IndexByte(name, 0); i >= 0 {
		name = name[:i]
	}
	return name, typ, reclen, nil
}

// lstatType is the type of p for a filesystem that gives none in its
// directory entries.
func lstatType(p string) uint8 {
	var st syscall.Stat_t
	if syscall.Lstat(p, &st) != nil {
		return syscall.DT_UNKNOWN
	}
	if st.Mode&syscall.S_IFMT == syscall.S_IFDIR {
		return syscall.DT_DIR
	}
	return syscall.DT_REG
}

// birthTime is when p was made, in nanoseconds since the epoch, where the
// filesystem records it (statx's btime): unlike the other times, no
// system call can set it.
func birthTime(p string) (int64, bool) {
	var stx unix.Statx_t
	if unix.Statx(unix.AT_FDCWD, p, unix.AT_SYMLINK_NOFOLLOW, unix.STATX_BTIME, &stx) != nil || stx.Mask&unix.STATX_BTIME == 0 {
		return 0, false
	}
	return stx.Btime.Sec*1e9 + int64(stx.Btime.Nsec), true
}
