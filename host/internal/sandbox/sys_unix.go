//go:build unix

package sandbox

import (
	"errors"
	"os"
	"syscall"
)

// readFlags opens read-only and non-blocking, so opening a FIFO cannot
// hang waiting for a writer; regular files and directories ignore it.
const readFlags = os.O_RDONLY | syscall.O_NONBLOCK

// isNotDir reports ENOTDIR: a path component that exists but is a file, so
// everything below it does not exist.
func isNotDir(err error) bool { return errors.Is(err, syscall.ENOTDIR) }
