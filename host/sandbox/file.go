package sandbox

import (
	"io/fs"
	"path/filepath"
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

// Child returns the path of the entry name inside directory p, for walking
// a tree that was validated from its top. The caller must check the child
// with Sandbox.Denied before using it.
func (p Path) Child(name string) Path {
	c := p
	c.Attempted = name
	c.id = fileID{}
	if p.Rel == "." {
		c.Rel = name
	} else {
		c.Rel = p.Rel + "/" + name
	}
	c.Abs = p.Abs + string(filepath.Separator) + name
	if p.Attempted != "" && p.Attempted != "." {
		c.Attempted = p.Attempted + "/" + name
	}
	return c
}
