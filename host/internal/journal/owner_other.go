//go:build !unix

package journal

import (
	"io/fs"
	"os"
)

// fileOwner is the current user where files carry no uid.
func fileOwner(fs.FileInfo) int { return os.Getuid() }
