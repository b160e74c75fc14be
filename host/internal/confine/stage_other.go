//go:build !linux

package confine

import (
	"errors"
	"io/fs"
	"time"
)

// Stages exist only where commands are confined (Linux).
func isWhiteout(fs.FileInfo) bool { return false }
func isOpaque(string) bool        { return false }

func stageBase(string) (string, error) {
	return "", errors.New("git directories are staged only on Linux")
}

func changeTime(fs.FileInfo) time.Time { return time.Time{} }

func sweepLinks(string, time.Time) ([]sweptEntry, error) { return nil, nil }

func stageSwept(string) bool { return false }
func markSwept(string)       {}

func privateDir(string) bool { return false }
