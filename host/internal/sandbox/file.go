package sandbox

import (
	"io/fs"
	"time"
)

// FileStat is what a tool needs to know about an open file.
type FileStat struct {
	Size    int64
	ModTime time.Time
	Mode    fs.FileMode // type bits and permissions
}

// Regular reports whether the file is a regular file.
func (s FileStat) Regular() bool { return s.Mode.IsRegular() }
