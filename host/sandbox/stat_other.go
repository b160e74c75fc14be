//go:build !linux

package sandbox

import (
	"io/fs"
	"os"
)

func lstatAt(_ int, _, path string) (fs.FileInfo, error) { return os.Lstat(path) }

func readlinkAt(_ int, _, path string) (string, error) { return os.Readlink(path) }

func idOfPlatform(fs.FileInfo) fileID { return fileID{} }
