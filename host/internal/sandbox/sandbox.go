// Package sandbox owns the decision which paths a tool may touch and the
// I/O on those paths. Resolve implements the SRD's path validation (3.5.2,
// normative): no absolute paths unless allowed, no ".." components,
// canonicalization of the deepest existing ancestor, containment in an
// allowed root, and denied patterns and protected directories matched on
// the canonical forward-slash path. The I/O helpers then go through the
// root's *os.Root with the root-relative path and check what they opened,
// so a symlink swapped in after validation cannot lead outside the root or
// into a denied file (FR-VAL-06, NFR-SEC-02).
//
// sandbox never performs I/O on tools' files outside an os.Root: every
// open, read, write, rename and directory listing goes through one. The
// only system calls on other paths are the metadata lookups (lstat,
// readlink) that canonicalize a path before it is validated, which never
// read file content, and the sandbox's own intent records in
// Config.RecoveryDir (toolhost's state directory, which no tool reaches).
package sandbox

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"

	"github.com/bmatcuk/doublestar/v4"
)

// DefaultDeniedPatterns returns the SRD's default denies (FR-VAL-05). It is
// a function so that no caller can change the defaults for everyone.
func DefaultDeniedPatterns() []string {
	return []string{"**/.ssh/**", "**/.gnupg/**", "**/id_rsa*", "**/*.pem", "**/*.key"}
}

// systemCredentialPatterns are the Unix credential files FR-VAL-05 says
// SHOULD be denied when a root happens to contain them. They are anchored
// absolute paths, so they cost nothing when no root is "/" or "/etc".
func systemCredentialPatterns() []string {
	if runtime.GOOS == "windows" {
		return nil
	}
	return []string{"/etc/shadow*", "/etc/gshadow*", "/etc/master.passwd", "/etc/spwd.db", "/etc/sudoers", "/etc/sudoers.d/**"}
}

// Config describes a sandbox (SRD 6.3, CFG-SBX-01).
type Config struct {
	// Roots are the directories tools may touch; each must exist and be a
	// directory. Roots[0] is the working directory that relative paths
	// resolve against.
	Roots []string
	// DeniedPatterns are doublestar globs. A path is denied when a pattern
	// matches its canonical absolute path (forward slashes) or its path
	// relative to the containing root, so both "**/secrets/**" and
	// "secrets/**" work.
	DeniedPatterns []string
	// IncludeDefaultDenies adds DefaultDeniedPatterns and, on Unix, the
	// system credential files.
	IncludeDefaultDenies bool
	// AllowAbsolute permits absolute paths; they must still lie inside a
	// root.
	AllowAbsolute bool
	// ProtectedDirs are always denied, with everything under them, even
	// when inside a root and even before they exist (toolhost's own state).
	ProtectedDirs []string
	// ReadOnlyPatterns are doublestar globs of paths that may be read but
	// never written (".git/**"), matched like DeniedPatterns.
	ReadOnlyPatterns []string
	// RecoveryDir, when set, is where transactions keep their intent
	// records (created 0700 if missing, and protected like ProtectedDirs),
	// so that Recover can undo a commit a crash interrupted. It belongs
	// in toolhost's state directory. Empty: no records, and a crash may
	// leave temporary and backup files beside their targets.
	RecoveryDir string
	// LockDir, when set, is where Lock keeps the lock files that
	// serialize the writers of one file across the processes sharing it
	// (created 0700 if missing, and protected like ProtectedDirs). It
	// belongs in toolhost's state directory, beside RecoveryDir, since
	// the processes sharing that share the read caches too. Empty: Lock
	// serializes the writers of this process only.
	LockDir string
	// MaxPathBytes, MaxComponentBytes and MaxDepth bound a path a tool
	// names: its canonical absolute length, the length of each name in
	// it, and how many directories below its root it lies. Zero means
	// the defaults (4096, 255, 64).
	MaxPathBytes      int
	MaxComponentBytes int
	MaxDepth          int
}

// root is one allowed root: its canonical directory, the os.Root all I/O
// goes through, and a second handle on the same directory for the
// Linux-only fast paths (nil elsewhere).
type root struct {
	dir string
	fs  *os.Root
	fd  syscall.RawConn
	own *os.File // closes fd
	sb  *Sandbox // for the denial check on paths made by Child
}

// Sandbox validates paths and performs symlink-safe I/O. Its configuration
// is immutable after New; the only state that changes is the table of
// per-file write locks (Lock). It is safe for concurrent use; Close it when
// done.
type Sandbox struct {
	roots     []*root
	patterns  []glob
	readOnly  []glob
	protected []string
	absolute  bool
	// fold matches patterns and protected directories case-insensitively
	// where the usual filesystems are case-insensitive, so ".SSH/ID_RSA"
	// cannot slip past "**/.ssh/**" on macOS or Windows.
	fold bool
	// locks serializes writers of the same file (Lock).
	locks lockTable
	// stripes are this process's holds of the lock directory's stripes
	// (Lock).
	stripes stripeTable
	// recoveryDir is Config.RecoveryDir made absolute; "" for none.
	recoveryDir string
	// lockDir is Config.LockDir made absolute; "" for none (or where
	// flock does not exist).
	lockDir string
	// The path limits, defaults applied (Config.MaxPathBytes etc.).
	maxPathBytes, maxComponentBytes, maxDepth int
	// Test hooks, set only by tests in this package and always nil
	// otherwise: testHookBeforeRename runs before a transaction renames
	// its i-th staged file into place (to cause a late failure, or to
	// pause a process that a test then kills), testHookAfterStage after
	// the i-th file is staged, testHookAfterRenames after the last
	// rename and before the backups are removed, testHookAfterRollback
	// when a failed commit has been undone, testHookStep before entry
	// i's commit (step "") and between the steps of a move ("backup",
	// "copy", "placed"), of a copy across file systems ("copied" after
	// each entry copied), and before a rollback undoes entry i ("undo",
	// whose error is ignored).
	testHookBeforeRename  func(i int) error
	testHookStep          func(i int, step string) error
	testHookAfterStage    func(i int)
	testHookAfterRenames  func()
	testHookAfterRollback func()
}

// New canonicalizes the roots, opens an os.Root for each, and checks the
// patterns and protected directories. Errors name the offending entry.
func New(cfg Config) (*Sandbox, error) {
	if len(cfg.Roots) == 0 {
		return nil, errors.New("sandbox: no allowed roots configured; configure at least the workspace directory")
	}
	s := &Sandbox{absolute: cfg.AllowAbsolute, fold: runtime.GOOS == "darwin" || runtime.GOOS == "windows"}
	if err := s.init(cfg); err != nil {
		s.Close()
		return nil, err
	}
	return s, nil
}

// Path limits when the configuration sets none: Linux's PATH_MAX and
// NAME_MAX, and a depth no real project reaches.
const (
	defaultMaxPathBytes      = 4096
	defaultMaxComponentBytes = 255
	defaultMaxDepth          = 64
)

// The configuration keys of the path limits, named in refusals so that a
// person knows what to change.
const (
	keyMaxPathBytes      = "tools.sandbox.max_path_bytes"
	keyMaxComponentBytes = "tools.sandbox.max_path_component_bytes"
	keyMaxDepth          = "tools.sandbox.max_path_depth"
)

func (s *Sandbox) init(cfg Config) error {
	for _, l := range []struct {
		dst      *int
		val, def int
		key      string
	}{
		{&s.maxPathBytes, cfg.MaxPathBytes, defaultMaxPathBytes, keyMaxPathBytes},
		{&s.maxComponentBytes, cfg.MaxComponentBytes, defaultMaxComponentBytes, keyMaxComponentBytes},
		{&s.maxDepth, cfg.MaxDepth, defaultMaxDepth, keyMaxDepth},
	} {
		switch {
		case l.val < 0:
			return fmt.Errorf("sandbox: %s is %d; give a positive limit, or leave it out for the default %d", l.key, l.val, l.def)
		case l.val == 0:
			*l.dst = l.def
		default:
			*l.dst = l.val
		}
	}
	for _, dir := range cfg.Roots {
		r, err := openRoot(dir)
		if err != nil {
			return err
		}
		r.sb = s
		s.roots = append(s.roots, r)
	}
	patterns := cfg.DeniedPatterns
	if cfg.IncludeDefaultDenies {
		patterns = append(append(DefaultDeniedPatterns(), systemCredentialPatterns()...), patterns...)
	}
	for _, p := range patterns {
		norm := s.normalize(filepath.ToSlash(p))
		if p == "" || !doublestar.ValidatePattern(norm) {
			return fmt.Errorf("sandbox: denied pattern %q is not a valid doublestar glob", p)
		}
		s.patterns = append(s.patterns, newGlob(norm))
	}
	for _, p := range cfg.ReadOnlyPatterns {
		norm := s.normalize(filepath.ToSlash(p))
		if p == "" || !doublestar.ValidatePattern(norm) {
			return fmt.Errorf("sandbox: read-only pattern %q is not a valid doublestar glob", p)
		}
		s.readOnly = append(s.readOnly, newGlob(norm))
	}
	for _, dir := range cfg.ProtectedDirs {
		canon, err := s.canonicalProtected(dir)
		if err != nil {
			return fmt.Errorf("sandbox: protected directory %q: %w", dir, err)
		}
		s.protected = append(s.protected, canon)
	}
	if cfg.RecoveryDir != "" {
		if err := os.MkdirAll(cfg.RecoveryDir, 0o700); err != nil {
			return fmt.Errorf("sandbox: recovery directory: %w", err)
		}
		canon, err := s.canonicalProtected(cfg.RecoveryDir)
		if err != nil {
			return fmt.Errorf("sandbox: recovery directory %q: %w", cfg.RecoveryDir, err)
		}
		// Protected, so that no tool can forge a record Recover would act on.
		s.protected = append(s.protected, canon)
		if s.recoveryDir, err = filepath.Abs(cfg.RecoveryDir); err != nil {
			return fmt.Errorf("sandbox: recovery directory %q: %w", cfg.RecoveryDir, err)
		}
	}
	if cfg.LockDir != "" && fileLocks {
		if err := os.MkdirAll(cfg.LockDir, 0o700); err != nil {
			return fmt.Errorf("sandbox: lock directory: %w", err)
		}
		canon, err := s.canonicalProtected(cfg.LockDir)
		if err != nil {
			return fmt.Errorf("sandbox: lock directory %q: %w", cfg.LockDir, err)
		}
		// Protected, so that no tool can hold or remove another's lock.
		s.protected = append(s.protected, canon)
		if s.lockDir, err = filepath.Abs(cfg.LockDir); err != nil {
			return fmt.Errorf("sandbox: lock directory %q: %w", cfg.LockDir, err)
		}
	}
	return nil
}

// canonicalProtected canonicalizes a protected directory that may not
// exist yet, the same way Resolve canonicalizes a target, so the two
// compare equal.
func (s *Sandbox) canonicalProtected(dir string) (string, error) {
	if dir == "" {
		return "", errors.New("empty path")
	}
	abs, err := filepath.Abs(dir)
	if err != nil {
		return "", err
	}
	canon, err := s.canonicalize(abs)
	if err != nil {
		return "", err
	}
	return s.normalize(canon), nil
}

func openRoot(dir string) (*root, error) {
	if dir == "" {
		return nil, errors.New("sandbox: root \"\" is empty; give a directory path")
	}
	abs, err := filepath.Abs(dir)
	if err != nil {
		return nil, rootError(dir, err)
	}
	canon, err := filepath.EvalSymlinks(abs)
	if err != nil {
		return nil, rootError(dir, err)
	}
	st, err := os.Stat(canon)
	if err != nil {
		return nil, rootError(dir, err)
	}
	if !st.IsDir() {
		return nil, fmt.Errorf("sandbox: root %q is not a directory; give a directory (tools.sandbox.allowed_roots, or --root)", dir)
	}
	r, err := os.OpenRoot(canon)
	if err != nil {
		return nil, rootError(dir, err)
	}
	own, fd := openDirHandle(canon)
	return &root{dir: canon, fs: r, fd: fd, own: own}, nil
}

// Close releases the roots. Paths resolved earlier fail afterwards rather
// than touch whatever reuses the descriptors.
func (s *Sandbox) Close() error {
	var errs []error
	for _, r := range s.roots {
		if r.own != nil {
			errs = append(errs, r.own.Close())
		}
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

// Path is a validated path. Do I/O through its methods (or
// Sandbox.WriteFileAtomic), which use Root and Rel; never open Abs
// directly, or the symlink checks are lost.
type Path struct {
	Attempted string   // as the caller gave it
	Abs       string   // canonical absolute path, OS separators (FR-VAL-04a)
	Root      *os.Root // the root containing it
	RootDir   string   // canonical root directory
	Rel       string   // relative to RootDir, forward slashes, "." for the root
	// Dir is set when Attempted ends in a slash (or "/."): it names a
	// directory, so opening it refuses anything else and it is never
	// written as a file.
	Dir bool

	root *root
	// written is the path as the caller wrote it, absolute and clean,
	// before any link was followed ("" when not known): a write must
	// not reach a protected name through a link either way round.
	written string
	// unchecked marks a path made by Child, which Resolve did not check
	// against the denied patterns; the I/O helpers check it themselves.
	unchecked bool
}

// Resolve validates p following SRD 3.5.2, in the normative order. A
// denial is a *DenialError (errors.Is(err, ErrDenied)); any other error is
// a filesystem failure while canonicalizing (too many links, permission).
func (s *Sandbox) Resolve(p string) (Path, error) {
	if err := s.lexical(p); err != nil {
		return Path{}, err
	}
	target := p
	if !filepath.IsAbs(p) {
		target = filepath.Join(s.roots[0].dir, p)
	}
	target = filepath.Clean(target)
	// The limits first on the path as given, so that a path of 20,000
	// levels is refused before a lookup walks it; then again on the
	// canonical path, which symlinks may have made longer.
	if err := s.checkLimits(p, target, "", s.containing(target)); err != nil {
		return Path{}, err
	}
	// The path as written is judged before any link in it is followed:
	// a denied directory's entries are never looked at, so a link inside
	// one cannot lead a tool to what it points at, nor tell where that
	// is. The same goes for every place a link leads on through, and
	// for the end. Each is denied when it or a directory above it, up to
	// its root, is; a denial names no resolved path but the one written.
	if pattern, denied := s.deniedBelow(target); denied {
		return Path{}, &DenialError{Reason: DeniedPatternMatched, Attempted: p, Resolved: target, Pattern: pattern}
	}
	canon, err := s.canonicalizeVisit(target, func(via string) error {
		if pattern, denied := s.deniedBelow(via); denied {
			return &DenialError{Reason: DeniedPatternMatched, Attempted: p, Pattern: pattern}
		}
		return nil
	})
	if err != nil {
		if de, ok := errors.AsType[*DenialError](err); ok {
			return Path{}, de
		}
		return Path{}, fmt.Errorf("resolve %q: %w", p, err)
	}
	r := s.containing(canon)
	if r == nil {
		return Path{}, &DenialError{Reason: PathOutsideSandbox, Attempted: p, Resolved: canon}
	}
	if err := s.checkLimits(p, canon, canon, r); err != nil {
		return Path{}, err
	}
	if pattern, denied := s.deniedBelow(canon); denied {
		return Path{}, &DenialError{Reason: DeniedPatternMatched, Attempted: p, Pattern: pattern}
	}
	return Path{Attempted: p, Abs: canon, Root: r.fs, RootDir: r.dir, Rel: relTo(canon, r.dir), Dir: namesDir(p), root: r, written: target}, nil
}

// deniedBelow reports whether an absolute, clean path in a root is
// denied, or lies below a directory that is, down from its root (the
// root itself is the operator's choice). A path in no root is not
// judged here: it is outside, or its canonical form says.
func (s *Sandbox) deniedBelow(abs string) (pattern string, denied bool) {
	r := s.containing(abs)
	if r == nil {
		return "", false
	}
	if pattern, denied := s.denied(abs, relTo(abs, r.dir)); denied {
		return pattern, true
	}
	start := len(r.dir) + 1
	if strings.HasSuffix(r.dir, string(filepath.Separator)) {
		start = len(r.dir)
	}
	for i := start; i < len(abs); i++ {
		if abs[i] != filepath.Separator {
			continue
		}
		dir := abs[:i]
		if pattern, denied := s.denied(dir, relTo(dir, r.dir)); denied {
			return pattern, true
		}
	}
	return "", false
}

// namesDir reports whether a path as given ends in a slash or "/.", and so
// names a directory, as it does for the system's own lookups.
func namesDir(p string) bool {
	p = filepath.ToSlash(p)
	return strings.HasSuffix(p, "/") || strings.HasSuffix(p, "/.")
}

// checkLimits refuses an absolute, clean path longer than the path limit
// or, when it lies in r, with a name below r longer than the component
// limit or more names below r than the depth limit.
// resolved is the canonical path for the refusal, "" before it is known.
func (s *Sandbox) checkLimits(attempted, abs, resolved string, r *root) error {
	deny := func(key string, limit, measured int) *DenialError {
		return &DenialError{Reason: PathTooLong, Attempted: attempted, Resolved: resolved, Limit: key, Max: limit, Measured: measured}
	}
	if len(abs) > s.maxPathBytes {
		return deny(keyMaxPathBytes, s.maxPathBytes, len(abs))
	}
	if r == nil {
		return nil // refused as outside, or measured once canonical
	}
	// The root's own names are the operator's; only what lies below it
	// is measured.
	depth, longest := measure(abs[len(r.dir):])
	if len(longest) > s.maxComponentBytes {
		de := deny(keyMaxComponentBytes, s.maxComponentBytes, len(longest))
		de.component = longest
		return de
	}
	if depth > s.maxDepth {
		return deny(keyMaxDepth, s.maxDepth, depth)
	}
	return nil
}

// measure returns the number of components of a clean path and its
// longest one.
func measure(path string) (n int, longest string) {
	for c := range strings.SplitSeq(path, string(filepath.Separator)) {
		if c == "" {
			continue
		}
		n++
		if len(c) > len(longest) {
			longest = c
		}
	}
	return n, longest
}

// lexical applies the checks that need no filesystem access (SRD 3.5.2
// steps 1–2, plus malformed input).
func (s *Sandbox) lexical(p string) error {
	switch {
	case p == "" || strings.IndexByte(p, 0) >= 0:
		return &DenialError{Reason: InvalidPath, Attempted: p}
	case filepath.IsAbs(p):
		if !s.absolute {
			return &DenialError{Reason: AbsolutePath, Attempted: p}
		}
	case filepath.VolumeName(p) != "":
		// "C:x" on Windows is relative to another drive's working directory.
		return &DenialError{Reason: InvalidPath, Attempted: p}
	}
	// Before any cleaning, so "a/../b" is refused rather than quietly
	// becoming "b". ToSlash makes "\" a separator only where it is one.
	for _, c := range strings.Split(filepath.ToSlash(p), "/") {
		if c == ".." {
			return &DenialError{Reason: Traversal, Attempted: p}
		}
	}
	return nil
}

// containing returns the root that contains the canonical path, or nil.
func (s *Sandbox) containing(canon string) *root {
	for _, r := range s.roots {
		if within(canon, r.dir) {
			return r
		}
	}
	return nil
}

// within reports whether path is dir or inside it, as whole components:
// "/a/bc" is not inside "/a/b".
func within(path, dir string) bool {
	if path == dir {
		return true
	}
	if strings.HasSuffix(dir, string(filepath.Separator)) { // "/" or `C:\`
		return strings.HasPrefix(path, dir)
	}
	return strings.HasPrefix(path, dir) && path[len(dir)] == filepath.Separator
}

// relTo returns path relative to dir, which must contain it, with forward
// slashes; "." for dir itself.
func relTo(path, dir string) string {
	if path == dir {
		return "."
	}
	rel := strings.TrimPrefix(path[len(dir):], string(filepath.Separator))
	return filepath.ToSlash(rel)
}

// Denied reports whether a canonical absolute path is denied, and by which
// pattern or protected directory. Use it for entries found while listing a
// directory that was itself resolved.
func (s *Sandbox) Denied(abs string) (pattern string, denied bool) {
	rel := ""
	if r := s.containing(abs); r != nil {
		rel = relTo(abs, r.dir)
	}
	return s.denied(abs, rel)
}

func (s *Sandbox) denied(abs, rel string) (string, bool) {
	abs = s.normalize(abs)
	for _, dir := range s.protected {
		if within(abs, dir) {
			return dir, true
		}
	}
	// The root itself ("." relative) is only matched by its absolute path.
	return matchAny(s.patterns, filepath.ToSlash(abs), s.normalize(rel))
}

// ReadOnly reports whether p may be read but not written, and which
// pattern says so: a built-in protected name (Protected) or a configured
// read-only pattern. Writers should call CheckWrite, which says why.
func (s *Sandbox) ReadOnly(p Path) (pattern string, readOnly bool) {
	if pattern, ok := s.protectedName(p.Abs); ok {
		return pattern, true
	}
	if pattern, ok := matchAny(s.readOnly, s.normalize(filepath.ToSlash(p.Abs)), s.normalize(p.Rel)); ok {
		return pattern, true
	}
	return s.readOnlyWritten(p)
}

// readOnlyWritten judges p as written, when a link made it differ from
// its canonical path: ".git/config" where .git is a link to a directory
// named otherwise is still git's config to git, which follows the link.
func (s *Sandbox) readOnlyWritten(p Path) (pattern string, readOnly bool) {
	if p.written == "" || p.written == p.Abs {
		return "", false
	}
	if pattern, ok := s.protectedName(p.written); ok {
		return pattern, true
	}
	if r := s.containing(p.written); r != nil {
		return matchAny(s.readOnly, s.normalize(filepath.ToSlash(p.written)), s.normalize(relTo(p.written, r.dir)))
	}
	return "", false
}

// CheckWrite decides whether p, a path this sandbox resolved (or a Child
// of one), may be written, created or replaced. It is the one check every
// write makes; a refusal is a *DenialError:
//
//   - Protected: toolhost's configuration files, its lock file and git's
//     internals, at any depth and whatever the configuration says;
//   - ReadOnly: a configured read-only pattern;
//   - NamesDirectory: a path that ends in a slash;
//   - DeniedPatternMatched: a Child that is denied.
func (s *Sandbox) CheckWrite(p Path) error {
	if err := p.checkChildDenied(); err != nil {
		return err
	}
	if pattern, ok := s.protectedName(p.Abs); ok {
		return &DenialError{Reason: Protected, Attempted: p.Attempted, Resolved: p.Abs, Pattern: pattern}
	}
	if pattern, ok := matchAny(s.readOnly, s.normalize(filepath.ToSlash(p.Abs)), s.normalize(p.Rel)); ok {
		return &DenialError{Reason: ReadOnly, Attempted: p.Attempted, Resolved: p.Abs, Pattern: pattern}
	}
	if pattern, ok := s.readOnlyWritten(p); ok {
		reason := ReadOnly
		if _, protected := s.protectedName(p.written); protected {
			reason = Protected
		}
		return &DenialError{Reason: reason, Attempted: p.Attempted, Resolved: p.Abs, Pattern: pattern}
	}
	if p.Dir {
		return &DenialError{Reason: NamesDirectory, Attempted: p.Attempted, Resolved: p.Abs}
	}
	return nil
}

// protectedName reports whether a canonical absolute path is, or lies
// under, a name no tool may write: toolhost's configuration files and
// lock file (a tool that rewrites them changes its own policy), and git's
// directory or gitfile (a nested repository's config or hooks run code on
// the next git command there). Every component counts, so a root inside
// a .git directory is protected too, and "toolhost.toml/x" cannot turn
// the configuration file's name into a directory. The pattern returned
// is the doublestar glob that describes the match.
//
// Names are compared in every spelling some filesystem or git would take
// for them, whatever this system is: case-folded (a case-insensitive disk
// under Linux: a mounted share, vfat, ext4 casefold), without trailing
// dots and spaces (which Win32 drops), and as 8.3 short names (GIT~1,
// TOOLHO~1.TOM). Refusing ".GIT" on a case-sensitive disk costs nobody
// anything; missing it where it is git's directory runs code.
func (s *Sandbox) protectedName(abs string) (pattern string, ok bool) {
	rest := strings.ToLower(filepath.ToSlash(abs))
	for rest != "" {
		var name string
		name, rest, _ = strings.Cut(rest, "/")
		if !protectedSpelling(name) {
			continue
		}
		name = strings.TrimRight(name, ". ")
		if strings.Contains(name, "~") {
			name = strings.ToUpper(name) // the short name is what matched
		}
		if rest == "" {
			return "**/" + name, true
		}
		return "**/" + name + "/**", true
	}
	return "", false
}

// protectedSpelling reports whether a lower-cased name is one of the
// protected names in any spelling protectedName describes.
func protectedSpelling(name string) bool {
	switch strings.TrimRight(name, ". ") {
	case ".git", "toolhost.toml", "toolhost.yaml", "toolhost.yml", "toolhost.lock":
		return name != "." && name != ".."
	}
	return strings.HasPrefix(name, "git~") || strings.HasPrefix(name, "toolho~")
}

// normalize case-folds where the sandbox matches case-insensitively.
func (s *Sandbox) normalize(name string) string {
	if s.fold {
		return strings.ToLower(name)
	}
	return name
}
