package sandbox

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
)

// maxLinks bounds symlink chains, like the kernel's ELOOP limit.
const maxLinks = 40

// canonicalize resolves every symlink in the existing part of an absolute,
// clean path and appends the part that does not exist (SRD 3.5.2 steps
// 4–5): the result is what filepath.EvalSymlinks would give for the
// deepest existing ancestor, with the rest of the path joined on. A
// dangling symlink is followed to its target, so "link/new" where link
// points outside resolves outside.
//
// Below a root the walk is relative to the root's directory (one fstatat
// per component on Linux, instead of a lookup from "/" per component);
// elsewhere it uses plain lstat and readlink, which read no content.
func (s *Sandbox) canonicalize(path string) (string, error) {
	return s.canonicalizeVisit(path, nil)
}

// canonicalizeVisit is canonicalize calling visit, when not nil, with
// each path the walk goes on from after a symlink, before it looks at
// anything there; an error from visit ends the walk.
func (s *Sandbox) canonicalizeVisit(path string, visit func(string) error) (string, error) {
	for range maxLinks {
		canon, restart, err := s.walkOnce(path)
		if err != nil || restart == "" {
			return canon, err
		}
		if visit != nil {
			if err := visit(restart); err != nil {
				return "", err
			}
		}
		path = restart
	}
	return "", &fs.PathError{Op: "resolve", Path: path, Err: syscall.ELOOP}
}

// walkOnce walks path until its end, a missing component, or the first
// symlink; in the last case it returns the path to restart from.
func (s *Sandbox) walkOnce(path string) (canon, restart string, err error) {
	r := s.containing(path)
	if r == nil {
		base := filepath.VolumeName(path) + string(filepath.Separator)
		return walk(base, path[len(base):], lookup{fd: -1, base: base})
	}
	rest := path[len(r.dir):]
	if r.fd == nil {
		return walk(r.dir, rest, lookup{fd: -1, root: r.fs})
	}
	cerr := r.fd.Control(func(fd uintptr) {
		canon, restart, err = walk(r.dir, rest, lookup{fd: int(fd)})
	})
	if cerr != nil {
		return "", "", fmt.Errorf("root %s: %w", r.dir, cerr)
	}
	return canon, restart, err
}

// walk follows the components of rest from the canonical directory base.
func walk(base, rest string, lk lookup) (canon, restart string, err error) {
	comps := split(rest)
	cur, rel := base, ""
	for i, c := range comps {
		next := c
		if rel != "" {
			next = rel + string(filepath.Separator) + c
		}
		link, err := lk.isSymlink(next)
		switch {
		case errors.Is(err, fs.ErrNotExist) || isNotDir(err):
			// Nothing exists from here on: the rest is appended as is.
			return filepath.Join(append([]string{cur}, comps[i:]...)...), "", nil
		case err != nil:
			return "", "", err
		case link:
			target, err := lk.readlink(next)
			if err != nil {
				return "", "", err
			}
			if !filepath.IsAbs(target) {
				// cur is canonical, so the lexical ".." in Join is the
				// physical parent.
				target = filepath.Join(cur, target)
			}
			return "", filepath.Join(append([]string{target}, comps[i+1:]...)...), nil
		}
		cur, rel = filepath.Join(cur, c), next
	}
	return cur, "", nil
}

// lookup answers lstat and readlink for a path relative to a directory:
// through a descriptor (Linux), an os.Root, or, outside every root, an
// absolute base.
type lookup struct {
	fd   int
	root *os.Root
	base string
}

func (l lookup) isSymlink(rel string) (bool, error) {
	if l.fd >= 0 {
		return isSymlinkAt(l.fd, rel)
	}
	var fi fs.FileInfo
	var err error
	if l.root != nil {
		fi, err = l.root.Lstat(rel)
	} else {
		fi, err = os.Lstat(l.base + rel)
	}
	if err != nil {
		return false, err
	}
	return fi.Mode()&fs.ModeSymlink != 0, nil
}

func (l lookup) readlink(rel string) (string, error) {
	switch {
	case l.fd >= 0:
		return readlinkAt(l.fd, rel)
	case l.root != nil:
		return l.root.Readlink(rel)
	}
	return os.Readlink(l.base + rel)
}

// split returns the non-empty components of a cleaned path.
func split(path string) []string {
	var comps []string
	for c := range strings.SplitSeq(path, string(filepath.Separator)) {
		if c != "" && c != "." {
			comps = append(comps, c)
		}
	}
	return comps
}
