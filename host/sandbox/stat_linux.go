//go:build linux

package sandbox

import (
	"io/fs"
	"os"
	"time"

	"golang.org/x/sys/unix"
)

// lstatAt is os.Lstat(path), looked up relative to dirfd (which is base)
// when there is one.
func lstatAt(dirfd int, base, path string) (fs.FileInfo, error) {
	if dirfd < 0 || len(path) <= len(base) {
		return os.Lstat(path)
	}
	rel := path[len(base)+1:]
	var st unix.Stat_t
	if err := unix.Fstatat(dirfd, rel, &st, unix.AT_SYMLINK_NOFOLLOW); err != nil {
		return nil, &fs.PathError{Op: "lstat", Path: path, Err: err}
	}
	return statInfo{name: rel, st: st}, nil
}

func readlinkAt(dirfd int, base, path string) (string, error) {
	if dirfd < 0 || len(path) <= len(base) {
		return os.Readlink(path)
	}
	buf := make([]byte, 4096)
	n, err := unix.Readlinkat(dirfd, path[len(base)+1:], buf)
	if err != nil {
		return "", &fs.PathError{Op: "readlink", Path: path, Err: err}
	}
	return string(buf[:n]), nil
}

// statInfo adapts a unix.Stat_t to fs.FileInfo.
type statInfo struct {
	name string
	st   unix.Stat_t
}

func (s statInfo) Name() string       { return s.name }
func (s statInfo) Size() int64        { return s.st.Size }
func (s statInfo) ModTime() time.Time { return time.Unix(s.st.Mtim.Sec, s.st.Mtim.Nsec) }
func (s statInfo) IsDir() bool        { return s.Mode().IsDir() }
func (s statInfo) Sys() any           { return &s.st }

func (s statInfo) Mode() fs.FileMode {
	m := fs.FileMode(s.st.Mode & 0o777)
	switch s.st.Mode & unix.S_IFMT {
	case unix.S_IFDIR:
		m |= fs.ModeDir
	case unix.S_IFLNK:
		m |= fs.ModeSymlink
	case unix.S_IFREG:
	default:
		m |= fs.ModeIrregular
	}
	return m
}

// idOfPlatform reads the identity from lstatAt's FileInfo.
func idOfPlatform(fi fs.FileInfo) fileID {
	if st, ok := fi.Sys().(*unix.Stat_t); ok {
		return fileID{dev: st.Dev, ino: st.Ino}
	}
	return fileID{}
}
