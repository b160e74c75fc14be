package confine

import (
	"io/fs"
	"syscall"
)

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
