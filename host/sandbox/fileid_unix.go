//go:build unix

package sandbox

import (
	"io/fs"
	"syscall"
)

// fileID identifies a file independently of its name.
type fileID struct{ dev, ino uint64 }

func idOf(fi fs.FileInfo) fileID {
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		return fileID{dev: uint64(st.Dev), ino: uint64(st.Ino)}
	}
	return idOfPlatform(fi)
}
