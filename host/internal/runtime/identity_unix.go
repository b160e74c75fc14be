//go:build unix

package runtime

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io/fs"
	"syscall"
)

// fileIdentity names a module file's current content without reading it:
// any write changes its size, modification or change time (which no user
// can set back), or its inode.
func fileIdentity(path string, fi fs.FileInfo) string {
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return ""
	}
	key := fmt.Sprintf("%s|%d|%d|%d.%d|%d|%d", path, fi.Size(), fi.ModTime().UnixNano(), st.Ctim.Sec, st.Ctim.Nsec, st.Ino, st.Dev)
	sum := sha256.Sum256([]byte(key))
	return hex.EncodeToString(sum[:16])
}
