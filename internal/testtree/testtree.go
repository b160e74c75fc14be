// Package testtree records a directory tree as tests compare it before
// and after a change: every entry below a directory, a file by its mode
// and bytes, a directory by its mode, a symbolic link by its target.
package testtree

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"testing"
)

// Snapshot is every entry below dir (dir itself left out; none when dir
// does not exist), by its path relative to dir: "file MODE BYTES",
// "dir MODE" or "link TARGET".
func Snapshot(t testing.TB, dir string) map[string]string {
	t.Helper()
	out := map[string]string{}
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		switch {
		case p == dir && errors.Is(err, fs.ErrNotExist):
			return fs.SkipAll // no directory, no entries
		case err != nil || p == dir:
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		fi, err := os.Lstat(p)
		if err != nil {
			return err
		}
		switch {
		case fi.Mode()&fs.ModeSymlink != 0:
			target, err := os.Readlink(p)
			if err != nil {
				return err
			}
			out[rel] = "link " + target
		case fi.IsDir():
			out[rel] = "dir " + fi.Mode().Perm().String()
		default:
			b, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			out[rel] = "file " + fi.Mode().Perm().String() + " " + string(b)
		}
		return nil
	})
	if err != nil {
		t.Fatalf("snapshot of %s: %v", dir, err)
	}
	return out
}

// Same reports, as errors of t, each entry that differs between got and
// want, the first ten of them: a tree gone wrong usually differs in
// thousands of entries, and ten say what happened.
func Same(t testing.TB, what string, got, want map[string]string) {
	t.Helper()
	n := 0
	for k, v := range want {
		if got[k] != v && n < 10 {
			t.Errorf("%s: %s = %q, want %q", what, k, got[k], v)
			n++
		}
	}
	for k, v := range got {
		if _, ok := want[k]; !ok && n < 10 {
			t.Errorf("%s: %s (%q) is there, and should not be", what, k, v)
			n++
		}
	}
}
