package sandbox

import (
	"errors"
	"fmt"
	"io/fs"
	"path"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"unicode/utf8"
)

// ErrDenied matches every *DenialError with errors.Is, for callers that
// only need to know the sandbox said no.
var ErrDenied = errors.New("path denied by the sandbox")

// Reason says which rule denied a path. PathOutsideSandbox and
// DeniedPatternMatched are the SRD's DenialReason variants (NFR-ERR-02);
// the others split out the lexical rules so callers can report them.
type Reason int

// Denial reasons.
const (
	InvalidPath          Reason = iota // empty, NUL byte, or drive-relative
	AbsolutePath                       // absolute while AllowAbsolute is false
	Traversal                          // a ".." component
	PathOutsideSandbox                 // canonical path in no allowed root
	DeniedPatternMatched               // denied pattern or protected directory
	ReadOnly                           // a write to a path matching a read-only pattern
	Protected                          // a write to toolhost's configuration or git's internals
	PathTooLong                        // over a path limit: bytes, component bytes or depth
	NamesDirectory                     // a write to a path ending in a slash
)

// String returns the name used in abi.DenialReason.
func (r Reason) String() string {
	switch r {
	case AbsolutePath:
		return "AbsolutePath"
	case Traversal:
		return "Traversal"
	case PathOutsideSandbox:
		return "PathOutsideSandbox"
	case DeniedPatternMatched:
		return "DeniedPatternMatched"
	case ReadOnly:
		return "ReadOnly"
	case Protected:
		return "Protected"
	case PathTooLong:
		// The SRD's variant for a refusal by a configured limit.
		return "LimitsExceeded"
	}
	return "InvalidPath" // NamesDirectory too: the path is not one a file can have
}

// DenialError is a path the sandbox refused. Its message names the path
// as given, the rule, and what to do instead; it never contains content
// of any file.
type DenialError struct {
	Reason    Reason
	Attempted string // as the caller gave it
	Resolved  string // canonical path, when known
	Pattern   string // the matching pattern or protected directory

	// Limit, Max and Measured describe a PathTooLong denial: the
	// configuration key of the limit exceeded, its value, and what the
	// path measured.
	Limit    string
	Max      int
	Measured int
	// component is the name that broke the component limit.
	component string

	// swapped marks a path that was valid at Resolve (or listed by
	// ReadDir) but led elsewhere when opened: a symlink or directory was
	// swapped in, or a listed entry is a symlink.
	swapped bool
}

func (e *DenialError) Error() string {
	q := "path " + quotePath(e.Attempted) + " is not allowed: "
	switch {
	case e.swapped:
		return q + "it no longer leads to the file that was validated (it now leads to " + e.Resolved +
			"): a symlink or directory was swapped in, or the entry is itself a symlink; nothing was read or written, resolve the path again"
	case e.Reason == AbsolutePath:
		return q + "absolute paths are rejected; use a path relative to the workspace root"
	case e.Reason == Traversal:
		return q + "\"..\" components are rejected; use a path inside the workspace root"
	case e.Reason == PathOutsideSandbox:
		return q + "it resolves to " + e.Resolved + ", outside every allowed root (symlinks are followed); only files inside the workspace are accessible"
	case e.Reason == DeniedPatternMatched:
		return q + "it matches the denied pattern or protected directory " + strconv.Quote(e.Pattern) +
			" (credentials or toolhost state); such files are never accessible to tools"
	case e.Reason == ReadOnly:
		return q + "it matches the read-only pattern " + strconv.Quote(e.Pattern) + "; it can be read but not written"
	case e.Reason == Protected:
		return q + protectedWhy(e.Pattern)
	case e.Reason == PathTooLong:
		return q + e.limitMessage()
	case e.Reason == NamesDirectory:
		return q + "it ends in a slash, so it names a directory; to write a file give its name without the trailing slash"
	case e.Attempted == "":
		return "empty path is not allowed; give a path relative to the workspace root, or \".\" for the root itself"
	case strings.IndexByte(e.Attempted, 0) >= 0:
		return q + "it contains a NUL byte; remove it"
	}
	return q + "it names a drive without a root; use a path relative to the workspace root"
}

// protectedWhy says why a path matching a built-in protected pattern can
// never be written, and what to do instead.
func protectedWhy(pattern string) string {
	m := "it matches " + strconv.Quote(pattern) + ", "
	switch {
	case strings.Contains(strings.ToLower(pattern), "git"):
		return m + "git's internals: a change there can make the next git command run code (hooks, core.fsmonitor), so no tool may change them at any depth; it can be read, and you can change it yourself with git"
	case strings.Contains(pattern, "toolhost.lock"):
		return m + "toolhost's plugin lock file: no tool may change it, at any depth; it can be read, and you can edit it yourself"
	}
	return m + "toolhost's configuration file: no tool may change it, at any depth, since it sets what tools may do; it can be read, and you can edit it yourself"
}

func (e *DenialError) limitMessage() string {
	raise := fmt.Sprintf("over the limit of %d set by %s; use a shorter path, or ask the operator to raise %s", e.Max, e.Limit, e.Limit)
	switch e.Limit {
	case keyMaxComponentBytes:
		return fmt.Sprintf("its name %s is %d bytes long, %s", quotePath(e.component), e.Measured, raise)
	case keyMaxDepth:
		return fmt.Sprintf("it lies %d names deep below its root, %s", e.Measured, raise)
	}
	return fmt.Sprintf("it is %d bytes long as an absolute path, %s", e.Measured, raise)
}

// quotePath quotes a path for a message, eliding the middle of a very
// long one so that a refusal of a 40,000-byte path stays readable.
func quotePath(s string) string {
	const keep = 120
	if len(s) <= 3*keep {
		return strconv.Quote(s)
	}
	head, tail := keep, len(s)-keep
	for head > 0 && !utf8.RuneStart(s[head]) {
		head--
	}
	for tail < len(s) && !utf8.RuneStart(s[tail]) {
		tail++
	}
	return strconv.Quote(s[:head]) + fmt.Sprintf("…(%d bytes)…", len(s)) + strconv.Quote(s[tail:])
}

// rootError is why dir cannot be a root, and what to do. Like every
// error of New, it starts with "sandbox: ", so a caller adds no prefix of
// its own.
func rootError(dir string, err error) error {
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return fmt.Errorf("sandbox: root %q does not exist; create it, or give a directory that exists (tools.sandbox.allowed_roots, or --root): %w", dir, err)
	case errors.Is(err, fs.ErrPermission):
		return fmt.Errorf("sandbox: root %q cannot be opened (permission denied); give a directory toolhost may read (tools.sandbox.allowed_roots, or --root): %w", dir, err)
	}
	return fmt.Errorf("sandbox: root %q: %w", dir, err)
}

// Is makes errors.Is(err, ErrDenied) true.
func (e *DenialError) Is(target error) bool { return target == ErrDenied }

// swappedError reports that the file opened for p is not the one Resolve
// validated.
func swappedError(p Path, now string) *DenialError {
	if now == "" {
		now = "a different file"
	}
	return &DenialError{Reason: PathOutsideSandbox, Attempted: p.Attempted, Resolved: now, swapped: true}
}

// notDirError is the error for a path written with a trailing slash, which
// names a directory, whose target is not one. It
// matches syscall.ENOTDIR, as the system's own lookup of such a path would.
type notDirError struct {
	attempted string
	regular   bool
}

func (e *notDirError) Error() string {
	name := quotePath(path.Clean(filepath.ToSlash(e.attempted)))
	if e.regular {
		return quotePath(e.attempted) + " ends in a slash, so it names a directory, but " + name + " is a file; drop the slash to read the file"
	}
	return quotePath(e.attempted) + " ends in a slash, so it names a directory, but " + name + " is not a directory; drop the slash to use it"
}

func (e *notDirError) Unwrap() error { return syscall.ENOTDIR }
