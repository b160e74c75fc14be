// Package sandbox decides which paths a tool may touch and performs that I/O
// safely. Resolve implements the SRD's path validation (3.5.2, normative):
// no absolute paths unless allowed, no ".." components, canonicalization of
// the deepest existing ancestor, containment in an allowed root, and denied
// patterns matched on the canonical forward-slash path. The I/O helpers on
// Path then go through the root's *os.Root, so a symlink swapped in after
// validation still cannot lead outside the root (FR-VAL-06, NFR-SEC-02).
//
// sandbox never performs I/O outside an os.Root, except the Lstat and
// Readlink calls that canonicalize a path before it is used.
package sandbox

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/bmatcuk/doublestar/v4"
)

// DefaultDeniedPatterns are the SRD's default denies (FR-VAL-05).
func DefaultDeniedPatterns() []string {
	return []string{"**/.ssh/**", "**/.gnupg/**", "**/id_rsa*", "**/*.pem", "**/*.key"}
}

// Config describes a sandbox.
type Config struct {
	// Roots are the directories tools may touch. Roots[0] is the working
	// directory relative paths resolve against.
	Roots []string
	// DeniedPatterns are doublestar globs matched on the canonical absolute
	// path (forward slashes) and on the path relative to its root.
	DeniedPatterns       []string
	IncludeDefaultDenies bool
	AllowAbsolute        bool
	// ProtectedDirs are always denied, with everything under them, even
	// when inside a root and even before they exist (toolhost's own state).
	ProtectedDirs []string
}

type root struct {
	dir   string // canonical
	fs    *os.Root
	dirfd int // for File; -1 where unavailable
}

// Sandbox validates paths and performs symlink-safe I/O. It is safe for
// concurrent use.
type Sandbox struct {
	roots     []root
	patterns  []string
	protected []string
	absolute  bool
}

// New canonicalizes the roots, opens an os.Root for each, and checks the
// patterns. Errors name the offending root or pattern.
func New(cfg Config) (*Sandbox, error) {
	if len(cfg.Roots) == 0 {
		return nil, errors.New("sandbox: no allowed roots configured")
	}
	s := &Sandbox{absolute: cfg.AllowAbsolute}
	for _, dir := range cfg.Roots {
		r, err := openRoot(dir)
		if err != nil {
			s.Close()
			return nil, err
		}
		s.roots = append(s.roots, r)
	}
	patterns := cfg.DeniedPatterns
	if cfg.IncludeDefaultDenies {
		patterns = append(DefaultDeniedPatterns(), patterns...)
	}
	for _, p := range patterns {
		if !doublestar.ValidatePattern(filepath.ToSlash(p)) {
			s.Close()
			return nil, fmt.Errorf("sandbox: denied pattern %q is not a valid glob", p)
		}
		s.patterns = append(s.patterns, filepath.ToSlash(p))
	}
	for _, dir := range cfg.ProtectedDirs {
		abs, err := filepath.Abs(dir)
		if err != nil {
			s.Close()
			return nil, fmt.Errorf("sandbox: protected directory %q: %w", dir, err)
		}
		canon, _, err := canonicalize(abs)
		if err != nil {
			canon = abs
		}
		s.protected = append(s.protected, canon)
	}
	return s, nil
}

func openRoot(dir string) (root, error) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return root{}, fmt.Errorf("sandbox: root %q: %w", dir, err)
	}
	canon, err := filepath.EvalSymlinks(abs)
	if err != nil {
		return root{}, fmt.Errorf("sandbox: root %q: %w", dir, err)
	}
	st, err := os.Stat(canon)
	if err != nil {
		return root{}, fmt.Errorf("sandbox: root %q: %w", dir, err)
	}
	if !st.IsDir() {
		return root{}, fmt.Errorf("sandbox: root %q is not a directory", dir)
	}
	r, err := os.OpenRoot(canon)
	if err != nil {
		return root{}, fmt.Errorf("sandbox: root %q: %w", dir, err)
	}
	return root{dir: canon, fs: r, dirfd: dirFD(canon)}, nil
}

// Close releases the roots.
func (s *Sandbox) Close() error {
	var errs []error
	for _, r := range s.roots {
		closeDirFD(r.dirfd)
		errs = append(errs, r.fs.Close())
	}
	return errors.Join(errs...)
}

// Roots returns the canonical root directories; the first is the working
// directory.
func (s *Sandbox) Roots() []string {
	dirs := make([]string, len(s.roots))
	for i, r := range s.roots {
		dirs[i] = r.dir
	}
	return dirs
}

// Path is a validated path. Use its methods for I/O; they go through Root.
type Path struct {
	Attempted string   // as the caller gave it
	Abs       string   // canonical absolute path (FR-VAL-04a)
	Root      *os.Root // the root containing it
	RootDir   string   // canonical root directory
	Rel       string   // relative to RootDir, forward slashes, "." for the root

	// id identifies the file Resolve found at Abs (zero if none existed),
	// so Open can check the descriptor without another system call.
	id    fileID
	dirfd int
}

// Resolve validates p following SRD 3.5.2, in order.
func (s *Sandbox) Resolve(p string) (Path, error) {
	deny := func(r Reason, resolved, pattern string) (Path, error) {
		return Path{}, &DenialError{Reason: r, Attempted: p, Resolved: resolved, Pattern: pattern}
	}
	switch {
	case p == "":
		return deny(InvalidPath, "", "")
	case strings.IndexByte(p, 0) >= 0:
		return deny(InvalidPath, "", "")
	case filepath.IsAbs(p) && !s.absolute:
		return deny(AbsolutePath, "", "")
	}
	for _, c := range strings.Split(filepath.ToSlash(p), "/") {
		if c == ".." {
			return deny(Traversal, "", "")
		}
	}
	target := p
	if !filepath.IsAbs(p) {
		target = filepath.Join(s.roots[0].dir, p)
	}
	canon, id, err := canonicalize(filepath.Clean(target), s.roots...)
	if err != nil {
		return Path{}, fmt.Errorf("resolve %q: %w", p, err)
	}
	r, ok := s.containing(canon)
	if !ok {
		return deny(PathOutsideSandbox, canon, "")
	}
	rel := "."
	if canon != r.dir {
		rel = filepath.ToSlash(canon[len(r.dir)+1:])
	}
	if pattern, denied := s.denied(canon, rel); denied {
		return deny(DeniedPatternMatched, canon, pattern)
	}
	return Path{Attempted: p, Abs: canon, Root: r.fs, RootDir: r.dir, Rel: rel, id: id, dirfd: r.dirfd}, nil
}

func (s *Sandbox) containing(canon string) (root, bool) {
	for _, r := range s.roots {
		if within(canon, r.dir) {
			return r, true
		}
	}
	return root{}, false
}

// within reports whether path is dir or inside it ("/a/bc" is not in "/a/b").
func within(path, dir string) bool {
	if path == dir {
		return true
	}
	if dir == string(filepath.Separator) {
		return strings.HasPrefix(path, dir)
	}
	return strings.HasPrefix(path, dir+string(filepath.Separator))
}

// Denied reports whether a canonical absolute path is denied, and by which
// pattern (or protected directory).
func (s *Sandbox) Denied(abs string) (pattern string, denied bool) {
	rel := ""
	if r, ok := s.containing(abs); ok && abs != r.dir {
		rel = filepath.ToSlash(abs[len(r.dir)+1:])
	}
	return s.denied(abs, rel)
}

func (s *Sandbox) denied(abs, rel string) (string, bool) {
	for _, dir := range s.protected {
		if within(abs, dir) {
			return dir, true
		}
	}
	slash := filepath.ToSlash(abs)
	for _, pat := range s.patterns {
		if match(pat, slash) || (rel != "" && match(pat, rel)) {
			return pat, true
		}
	}
	return "", false
}

func match(pattern, name string) bool {
	ok, _ := doublestar.Match(pattern, name)
	return ok
}

// maxLinks bounds symlink chains, like the kernel's ELOOP limit.
const maxLinks = 40

// canonicalize resolves every symlink in the existing part of an absolute,
// clean path and appends the part that does not exist (SRD 3.5.2 steps
// 4–5). Below a root it starts from the root's canonical directory, so it
// costs one Lstat per component under the root instead of one per
// component from "/" (filepath.EvalSymlinks). A dangling symlink is
// followed to its target, so "link/new" where link points outside
// resolves outside.
func canonicalize(path string, roots ...root) (string, fileID, error) {
	for range maxLinks {
		base, comps, dirfd := string(filepath.Separator), split(path), -1
		for _, r := range roots {
			if within(path, r.dir) {
				base, comps, dirfd = r.dir, split(path[len(r.dir):]), r.dirfd
				break
			}
		}
		resolved, id, next, err := walk(base, comps, dirfd)
		if err != nil || next == "" {
			return resolved, id, err
		}
		path = next
	}
	return "", fileID{}, errors.New("too many levels of symbolic links")
}

// walk follows comps from the canonical directory base. It returns the
// canonical path and the identity of the file there (zero if it does not
// exist), or, on meeting a symlink, the path to restart from. With a
// directory descriptor for base, each step is looked up relative to it, so
// the kernel does not walk from "/" again for every component.
func walk(base string, comps []string, dirfd int) (resolved string, id fileID, restart string, err error) {
	cur := base
	for i, c := range comps {
		next := filepath.Join(cur, c)
		fi, err := lstatAt(dirfd, base, next)
		switch {
		case errors.Is(err, fs.ErrNotExist) || isNotDir(err):
			return filepath.Join(append([]string{cur}, comps[i:]...)...), fileID{}, "", nil
		case err != nil:
			return "", fileID{}, "", err
		case fi.Mode()&fs.ModeSymlink != 0:
			link, err := readlinkAt(dirfd, base, next)
			if err != nil {
				return "", fileID{}, "", err
			}
			if !filepath.IsAbs(link) {
				link = filepath.Join(cur, link)
			}
			return "", fileID{}, filepath.Join(append([]string{link}, comps[i+1:]...)...), nil
		}
		cur = next
		id = idOf(fi)
	}
	return cur, id, "", nil
}

func split(path string) []string {
	var comps []string
	for _, c := range strings.Split(path, string(filepath.Separator)) {
		if c != "" && c != "." {
			comps = append(comps, c)
		}
	}
	return comps
}
