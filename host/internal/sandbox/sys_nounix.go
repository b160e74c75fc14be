//go:build !unix

package sandbox

import (
	"errors"
	"io/fs"
	"os"
)

const readFlags = os.O_RDONLY

func isNotDir(error) bool { return false }

func linkUnsupported(err error) bool {
	return errors.Is(err, errors.ErrUnsupported) || errors.Is(err, fs.ErrPermission)
}

// lockFile does nothing here: Recover cannot tell a live transaction of
// another process from a dead one, so run one toolhost per state
// directory on such systems.
func lockFile(*os.File, bool) error { return nil }

func sameDevice(os.FileInfo, os.FileInfo) bool { return true }

func isCrossDevice(error) bool { return false }

func ownerOf(os.FileInfo) (int, int, bool) { return 0, 0, false }

// fileLocks is false: without flock, Lock serializes the writers of one
// process only, so run one toolhost per state directory on such systems.
const fileLocks = false
