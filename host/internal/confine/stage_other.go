//go:build !linux

package confine

import (
	"errors"
	"io/fs"
)

// Stages exist only where commands are confined (Linux).
func isWhiteout(fs.FileInfo) bool { return false }
func isOpaque(string) bool        { return false }

func stageBase(string) (string, error) {
	return "", errors.New("git directories are staged only on Linux")
}
