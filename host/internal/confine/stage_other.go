//go:build !linux

package confine

import "io/fs"

// Stages exist only where commands are confined (Linux).
func isWhiteout(fs.FileInfo) bool { return false }
func isOpaque(string) bool        { return false }
