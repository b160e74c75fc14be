//go:build unix

package sandbox

import (
	"errors"
	"syscall"
)

// isNotDir reports ENOTDIR: a path component that exists but is a file, so
// everything below it does not exist.
func isNotDir(err error) bool { return errors.Is(err, syscall.ENOTDIR) }
