package sandbox

import (
	"errors"
	"strconv"
	"strings"
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
	}
	return "InvalidPath"
}

// DenialError is a path the sandbox refused. Its message names the path
// as given, the rule, and what to do instead; it never contains content
// of any file.
type DenialError struct {
	Reason    Reason
	Attempted string // as the caller gave it
	Resolved  string // canonical path, when known
	Pattern   string // the matching pattern or protected directory

	// swapped marks a path that was valid at Resolve (or listed by
	// ReadDir) but led elsewhere when opened: a symlink or directory was
	// swapped in, or a listed entry is a symlink.
	swapped bool
}

func (e *DenialError) Error() string {
	q := "path " + strconv.Quote(e.Attempted) + " is not allowed: "
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
	case e.Attempted == "":
		return "empty path is not allowed; give a path relative to the workspace root, or \".\" for the root itself"
	case strings.IndexByte(e.Attempted, 0) >= 0:
		return q + "it contains a NUL byte; remove it"
	}
	return q + "it names a drive without a root; use a path relative to the workspace root"
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
