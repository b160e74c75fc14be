//go:build !linux

package confine

import (
	"context"
	"errors"
	"os"
)

// openRegular opens p for reading when it is a regular file.
func openRegular(p string, _ bool) (*os.File, error) {
	f, err := os.Open(p)
	if err != nil {
		return nil, err
	}
	if fi, err := f.Stat(); err != nil || !fi.Mode().IsRegular() {
		f.Close()
		return nil, &os.PathError{Op: "open", Path: p, Err: errors.New("not a regular file")}
	}
	return f, nil
}

// neutralizeGitDir sets nothing aside here, where commands are not
// confined (newrepos_linux.go).
func (st *settle) neutralizeGitDir(_ context.Context, gd string) Neutralized {
	return Neutralized{GitDir: gd}
}

func (st *settle) isDir(p string) bool {
	fi, err := os.Lstat(p)
	return err == nil && fi.IsDir()
}

// breakLinks does nothing here, where commands are not confined.
func (b *builder) breakLinks(string, []string) {}
