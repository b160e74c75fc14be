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

// readDir reads at most limit entries of dir: the names of its
// directories (subdirs: not links) and of the other entries the search
// looks for (names: see wanted; projects are the project files' names),
// how many it read, and the directory's
// state before the read (stamp). It fails with errOtherFS when dir lies
// on another device than dev, and with errTooMany (and what it read) at
// the limit. dir is opened without following a link at its last element:
// a command can swap a directory for a link while the search runs, and
// what a link leads to is not searched (bindInside checks every path it
// binds anyway).
//
// It reads the directory with getdents64 itself: the search runs for
// every call, and os.File costs twice the system calls per directory
// (the poller, flag checks, a small buffer).
func readDir(dir string, dev uint64, hasDev bool, limit int, projects []string) (listing, error) {
	var l listing
	fd, err := syscall.Open(dir, syscall.O_RDONLY|syscall.O_DIRECTORY|syscall.O_NOFOLLOW|syscall.O_CLOEXEC, 0)
	if err != nil {
		return l, &os.PathError{Op: "open", Path: dir, Err: err}
	}
	defer syscall.Close(fd)
	// The state is taken before the entries are read: a change after it
	// gives the directory another change time, which the next search sees
	// (SearchCache).
	l.stamp, err = stampAt(fd, "", unix.AT_EMPTY_PATH)
	if err != nil {
		return l, err
	}
	if hasDev && l.stamp.dev != dev {
		return l, errOtherFS
	}
	buf := make([]byte, 32<<10)
	for {
		got, err := syscall.Getdents(fd, buf)
		if errors.Is(err, syscall.EINTR) {
			continue
		}
		if err != nil {
			return l, &os.PathError{Op: "getdents", Path: dir, Err: err}
		}
		if got <= 0 {
			return l, nil
		}
		for off := 0; off < got; {
			name, typ, reclen, err := dirent(buf[off:got])
			if err != nil {
				return l, fmt.Errorf("%s: %w", dir, err)
			}
			off += reclen
			if string(name) == "." || string(name) == ".." {
				continue
			}
			if l.n == limit {
				return l, errTooMany
			}
			l.n++
			if typ == syscall.DT_UNKNOWN {
				typ = lstatType(dir + "/" + string(name))
			}
			// Names are made strings only when kept: most are not.
			switch {
			case typ == syscall.DT_DIR:
				l.subdirs = append(l.subdirs, string(name))
				l.born = append(l.born, birthAt(fd, string(name)))
			case wanted(string(name), projects):
				l.names = append(l.names, string(name))
			}
		}
	}
}

// dirStampOf is the state of the directory at path, not following a link
// at its last element: what SearchCache compares with the state a
// remembered listing was read in.
func dirStampOf(path string) (dirStamp, error) {
	return stampAt(unix.AT_FDCWD, path, unix.AT_SYMLINK_NOFOLLOW)
}

// stampAt is statx's device, inode and change time of path at dirfd.
// The change time is the inode's ctime: the kernel sets it to the current
// time at every change to the directory (an entry made, removed or
// renamed, its own attributes), and no system call sets it to a chosen
// value, unlike the modification time (touch -d).
func stampAt(dirfd int, path string, flags int) (dirStamp, error) {
	var stx unix.Statx_t
	if err := unix.Statx(dirfd, path, flags, unix.STATX_TYPE|unix.STATX_INO|unix.STATX_CTIME, &stx); err != nil {
		return dirStamp{}, &os.PathError{Op: "statx", Path: path, Err: err}
	}
	const need = unix.STATX_TYPE | unix.STATX_INO | unix.STATX_CTIME
	if stx.Mask&need != need {
		return dirStamp{}, &os.PathError{Op: "statx", Path: path, Err: errors.New("the filesystem does not report the inode and change time")}
	}
	return dirStamp{
		dev:   unix.Mkdev(stx.Dev_major, stx.Dev_minor),
		ino:   stx.Ino,
		ctime: stx.Ctime.Sec*1e9 + int64(stx.Ctime.Nsec),
		dir:   stx.Mode&unix.S_IFMT == unix.S_IFDIR,
	}, nil
}

// stableFS reports whether the filesystem tree lies on is one whose
// change times the kernel keeps itself, from its own clock: local disk
// filesystems and tmpfs. Elsewhere (NFS, FUSE, 9p, vfat) a change time
// comes from a server, a user's program, or the modification time, and a
// command could make a change without it: SearchCache does not remember
// those trees.
func stableFS(tree string) bool {
	var st unix.Statfs_t
	if unix.Statfs(tree, &st) != nil {
		return false
	}
	switch uint32(st.Type) {
	case unix.EXT4_SUPER_MAGIC, unix.XFS_SUPER_MAGIC, unix.BTRFS_SUPER_MAGIC, unix.TMPFS_MAGIC,
		unix.F2FS_SUPER_MAGIC, unix.OVERLAYFS_SUPER_MAGIC, unix.BCACHEFS_SUPER_MAGIC, zfsSuperMagic:
		return true
	}
	return false
}

// zfsSuperMagic is ZFS's statfs type, which x/sys/unix does not name.
const zfsSuperMagic = 0x2fc12fc1

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

// birthAt is the birth time of dir fd's entry name, 0 where the
// filesystem records none: the search's order (searchTree).
func birthAt(fd int, name string) int64 {
	var stx unix.Statx_t
	if unix.Statx(fd, name, unix.AT_SYMLINK_NOFOLLOW, unix.STATX_BTIME, &stx) != nil || stx.Mask&unix.STATX_BTIME == 0 {
		return 0
	}
	return stx.Btime.Sec*1e9 + int64(stx.Btime.Nsec)
}

// birthTime is when p was made, in nanoseconds since the epoch, 0 where
// the filesystem records none (statx's btime): unlike the other times, no
// system call can set it.
func birthTime(p string) int64 { return birthAt(unix.AT_FDCWD, p) }
