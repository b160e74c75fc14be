package confine

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"

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
