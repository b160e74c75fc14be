//go:build !linux

package sandbox

import (
	"errors"
	"os"
	"syscall"
)

// openDirHandle gives no handle outside Linux, so the lookups go through
// the os.Root and isSymlinkAt and readlinkAt are never called.
func openDirHandle(string) (*os.File, syscall.RawConn) { return nil, nil }

func isSymlinkAt(int, string) (bool, error) { return false, errors.ErrUnsupported }

func readlinkAt(int, string) (string, error) { return "", errors.ErrUnsupported }

// openedPath is unknown here; callers compare file identities instead.
func openedPath(*os.File) (string, bool) { return "", false }

// renameNoReplace is unavailable here; the caller falls back to a hard link.
func renameNoReplace(*os.File, string, string) error { return errors.ErrUnsupported }

// renameAt is unavailable here: a rename between two directories goes
// through the root (renameIn), and across roots it is a copy.
func renameAt(*os.File, string, *os.File, string, bool) error { return errors.ErrUnsupported }

// rmdirAt is unavailable here; the caller checks the name is a directory
// and removes it through the root.
func rmdirAt(*os.File, string) error { return errors.ErrUnsupported }
