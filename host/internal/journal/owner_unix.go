//go:build unix

package journal

import (
	"io/fs"
	"syscall"
)

// fileOwner is the uid owning the file fi describes.
func fileOwner(fi fs.FileInfo) int {
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		return int(st.Uid)
	}
	return -1
}
