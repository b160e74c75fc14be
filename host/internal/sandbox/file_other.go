//go:build !linux

package sandbox

import (
	"io/fs"
	"os"
)

// File is a file opened read-only for a host function.
type File struct{ *os.File }

// OpenFile opens p read-only through its os.Root, with Open's checks.
func (p Path) OpenFile() (*File, error) {
	f, err := p.Open()
	if err != nil {
		return nil, err
	}
	return &File{f}, nil
}

// Stat describes the open file.
func (f *File) Stat() (FileStat, error) {
	fi, err := f.File.Stat()
	if err != nil {
		return FileStat{}, err
	}
	return FileStat{Size: fi.Size(), ModTime: fi.ModTime(), Mode: fi.Mode()}, nil
}

// ReadDirTypes is ReadDir where no faster listing is known. An entry's
// Info is not confined to the root: describe an entry with
// Child(name).Lstat instead.
func (p Path) ReadDirTypes() ([]fs.DirEntry, error) { return p.ReadDir() }

// ReadDirLstat is ReadDir where no faster listing is known; as with
// ReadDirTypes, describe an entry with Child(name).Lstat.
func (p Path) ReadDirLstat() ([]fs.DirEntry, error) { return p.ReadDir() }
