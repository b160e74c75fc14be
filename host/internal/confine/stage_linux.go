package confine

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// stageFilesystems are the filesystems an overlay's upper layer may lie
// on here: local, with user extended attributes (checked too). Not an
// overlay (a container's root: an overlay cannot be another's upper
// layer), nor a network or FUSE filesystem.
var stageFilesystems = map[int64]string{
	unix.EXT4_SUPER_MAGIC: "ext4", unix.XFS_SUPER_MAGIC: "xfs", unix.BTRFS_SUPER_MAGIC: "btrfs",
	unix.TMPFS_MAGIC: "tmpfs", unix.F2FS_SUPER_MAGIC: "f2fs", 0xca451a4e: "bcachefs",
}

// stageBase returns the directory the call's stages are made in: the
// state directory's sandbox/stage, or, when its filesystem cannot hold
// an overlay's upper layer, a private directory in /dev/shm (a tmpfs,
// with user extended attributes since Linux 6.6).
func stageBase(stateDir string) (string, error) {
	var errs []error
	for _, d := range []string{filepath.Join(stateDir, "sandbox", "stage"), fmt.Sprintf("/dev/shm/toolhost-stage-%d", os.Getuid())} {
		err := stageUsable(d)
		if err == nil {
			return d, nil
		}
		errs = append(errs, err)
	}
	return "", errors.Join(errs...)
}

// stageUsable makes d (0700) and reports why it cannot hold stages: not
// a directory of this user's alone, a filesystem an overlay cannot use
// as its upper layer, or no user extended attributes.
func stageUsable(d string) error {
	if err := os.MkdirAll(d, 0o700); err != nil {
		return err
	}
	var st unix.Stat_t
	if err := unix.Lstat(d, &st); err != nil {
		return err
	}
	if st.Mode&unix.S_IFMT != unix.S_IFDIR || int(st.Uid) != os.Getuid() || st.Mode&0o077 != 0 {
		return fmt.Errorf("%s is not a directory only this user can enter", d)
	}
	var sfs unix.Statfs_t
	if err := unix.Statfs(d, &sfs); err != nil {
		return err
	}
	if _, ok := stageFilesystems[int64(sfs.Type)]; !ok {
		return fmt.Errorf("%s lies on a filesystem (type %#x) an overlay cannot keep its upper layer on", d, sfs.Type)
	}
	if err := unix.Setxattr(d, "user.toolhost-probe", []byte("1"), 0); err != nil {
		return fmt.Errorf("%s: no user extended attributes: %w", d, err)
	}
	unix.Removexattr(d, "user.toolhost-probe")
	return nil
}

// isWhiteout reports whether fi is an overlay's whiteout: a character
// device 0/0, which records that the command removed the name.
func isWhiteout(fi fs.FileInfo) bool {
	if fi.Mode()&fs.ModeCharDevice == 0 {
		return false
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	return ok && st.Rdev == 0
}

// isOpaque reports whether the overlay marked the upper directory p
// opaque: what the lower layer held there is gone.
func isOpaque(p string) bool {
	buf := make([]byte, 8)
	n, err := syscall.Getxattr(p, "user.overlay.opaque", buf)
	return err == nil && n > 0 && buf[0] == 'y'
}

// sweptAttr marks a stage whose directories bound through were swept
// (sweepThrough); the filesystem of stages has user extended attributes
// (stageUsable).
const sweptAttr = "user.toolhost-swept"

func stageSwept(d string) bool {
	_, err := unix.Getxattr(d, sweptAttr, nil)
	return err == nil
}

func markSwept(d string) { unix.Setxattr(d, sweptAttr, []byte("1"), 0) }

// changeTime is the time fi's inode last changed (ctime): set by the
// kernel when the entry is made, renamed or written, never by a command.
func changeTime(fi fs.FileInfo) time.Time {
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return time.Time{}
	}
	return time.Unix(st.Ctim.Sec, st.Ctim.Nsec)
}

// Bounds of sweepLinks: a command can make more entries and deeper
// directories than a call's end should read; what lies past them is not
// checked, and said so.
const (
	sweepMaxEntries = 1 << 20
	sweepMaxDepth   = 64
)

// sweepLinks removes from the directory tree dir every entry that is
// neither a regular file nor a directory (a symbolic link, a fifo, a
// socket, a device) and that changed at or after start, without
// following any link, and returns what it removed. In the git
// directories of worktrees and submodules the command made there
// (written through, not staged), the state files of a rebase it left
// stopped that changed since start go through stateFilter, as a staged
// one does, and are rewritten in place. A directory is read
// only when it changed since start (an entry was made, removed or
// renamed in it) or when it holds directories (its link count, 2 with
// none, on ext4, xfs and tmpfs; btrfs reads them all): a call that wrote
// a few objects reads a few of the 256 fan-out directories. The error
// says where the walk stopped short.
func sweepLinks(dir string, start time.Time) ([]sweptEntry, error) {
	fd, err := unix.Open(dir, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		if errors.Is(err, unix.ENOENT) || errors.Is(err, unix.ENOTDIR) || errors.Is(err, unix.ELOOP) {
			return nil, nil // not a directory bound through
		}
		return nil, fmt.Errorf("open %s: %w", dir, err)
	}
	s := linkSweep{start: start.UnixNano(), budget: sweepMaxEntries, top: filepath.Base(dir)}
	s.dir(fd, "", 0)
	return s.removed, s.err
}

// linkSweep is one sweepLinks.
type linkSweep struct {
	start   int64  // ns since the epoch
	top     string // the name of the directory swept, in the git directory
	budget  int    // entries left to read
	removed []sweptEntry
	err     error // the first place the walk stopped short
}

func (s *linkSweep) stop(err error) {
	if s.err == nil {
		s.err = err
	}
}

// dir sweeps the directory open as fd (which it closes), at rel.
func (s *linkSweep) dir(fd int, rel string, depth int) {
	f := os.NewFile(uintptr(fd), rel)
	defer f.Close()
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		s.stop(fmt.Errorf("%s: %w", rel, err))
		return
	}
	changed := st.Ctim.Nano() >= s.start
	// A rebase's state is read whole: a file of it written in place
	// does not change the directory.
	state := slices.Contains(stateDirs, filepath.Base(rel))
	if !changed && st.Nlink == 2 && !state {
		return
	}
	if depth >= sweepMaxDepth {
		s.stop(fmt.Errorf("%s is more than %d directories deep", rel, sweepMaxDepth))
		return
	}
	for {
		entries, err := f.ReadDir(256)
		for _, e := range entries {
			if s.budget--; s.budget < 0 {
				s.stop(fmt.Errorf("more than %d entries", sweepMaxEntries))
				return
			}
			s.entry(fd, filepath.Join(rel, e.Name()), e, changed, state, depth)
		}
		if err != nil {
			if err != io.EOF {
				s.stop(fmt.Errorf("read %s: %w", rel, err))
			}
			return
		}
	}
}

// entry sweeps the entry e of the directory fd, which changed since the
// start when changed and is the state of a rebase, a cherry-pick or a
// revert when state.
func (s *linkSweep) entry(fd int, rel string, e fs.DirEntry, changed, state bool, depth int) {
	name := e.Name()
	switch t := e.Type(); {
	case t.IsRegular():
		if state {
			s.filterState(fd, rel)
		}
	case t.IsDir():
		// Most directories (the fan-out ones of objects/) neither
		// changed nor hold directories: one stat, not an open.
		var st unix.Stat_t
		if err := unix.Fstatat(fd, name, &st, unix.AT_SYMLINK_NOFOLLOW); err == nil && st.Mode&unix.S_IFMT == unix.S_IFDIR && st.Ctim.Nano() < s.start && st.Nlink == 2 && !slices.Contains(stateDirs, name) {
			return
		}
		sub, err := unix.Openat(fd, name, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
		if err != nil {
			s.stop(fmt.Errorf("open %s: %w", rel, err))
			return
		}
		s.dir(sub, rel, depth+1)
	case !changed:
		// Made before the call: an entry made since would have
		// changed the directory.
	default:
		var st unix.Stat_t
		if err := unix.Fstatat(fd, name, &st, unix.AT_SYMLINK_NOFOLLOW); err != nil || st.Ctim.Nano() < s.start {
			return
		}
		what := "a special file"
		switch st.Mode & unix.S_IFMT {
		case unix.S_IFLNK:
			buf := make([]byte, 4096)
			n, _ := unix.Readlinkat(fd, name, buf)
			what = fmt.Sprintf("a symbolic link to %q", buf[:max(n, 0)])
		case unix.S_IFIFO:
			what = "a fifo"
		case unix.S_IFSOCK:
			what = "a socket"
		}
		if err := unix.Unlinkat(fd, name, 0); err != nil {
			s.stop(fmt.Errorf("remove %s (%s): %w", rel, what, err))
			return
		}
		s.removed = append(s.removed, sweptEntry{rel: rel, what: what})
	}
}

// filterState applies stateFilter to the regular file rel of the
// directory fd when it changed since the start: rewritten through a
// temporary file renamed onto it, or removed when refused.
func (s *linkSweep) filterState(fd int, rel string) {
	filter := stateFilter(filepath.Join(s.top, rel))
	if filter == nil {
		return
	}
	name := filepath.Base(rel)
	src, err := unix.Openat(fd, name, unix.O_RDONLY|unix.O_NOFOLLOW|unix.O_NONBLOCK|unix.O_CLOEXEC, 0)
	if err != nil {
		return
	}
	f := os.NewFile(uintptr(src), rel)
	defer f.Close()
	var st unix.Stat_t
	if err := unix.Fstat(src, &st); err != nil || st.Mode&unix.S_IFMT != unix.S_IFREG || st.Ctim.Nano() < s.start {
		return
	}
	data, err := io.ReadAll(io.LimitReader(f, maxStateFile+1))
	if err != nil || len(data) > maxStateFile {
		s.stop(fmt.Errorf("%s was not read to check it (%v, %d bytes at most)", rel, err, maxStateFile))
		return
	}
	out, note, keep := filter(data)
	if note == "" {
		return
	}
	if keep {
		err = replaceAt(fd, name, out)
	} else {
		err = unix.Unlinkat(fd, name, 0)
	}
	if err != nil {
		s.stop(fmt.Errorf("%s: %s, but it could not be changed: %w", rel, note, err))
		return
	}
	s.removed = append(s.removed, sweptEntry{rel: rel, what: note, state: true})
}

// replaceAt replaces the file name of the directory fd with data,
// through name.toolhost-tmp renamed onto it.
func replaceAt(fd int, name string, data []byte) error {
	tmp := name + ".toolhost-tmp"
	unix.Unlinkat(fd, tmp, 0)
	w, err := unix.Openat(fd, tmp, unix.O_WRONLY|unix.O_CREAT|unix.O_EXCL|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0o644)
	if err != nil {
		return err
	}
	f := os.NewFile(uintptr(w), tmp)
	_, err = f.Write(data)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = unix.Renameat(fd, tmp, fd, name)
	}
	if err != nil {
		unix.Unlinkat(fd, tmp, 0)
	}
	return err
}

// privateDir reports whether d is a directory (not a link) of this user's
// alone (mode 0700 or stricter), as stageUsable makes it: a stage base
// another user could write (a /dev/shm directory made by someone else
// under this user's name) is never recovered from.
func privateDir(d string) bool {
	var st unix.Stat_t
	return unix.Lstat(d, &st) == nil && st.Mode&unix.S_IFMT == unix.S_IFDIR && int(st.Uid) == os.Getuid() && st.Mode&0o077 == 0
}
