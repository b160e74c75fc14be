package sandbox

import (
	"errors"
	"fmt"
)

// ErrDenied matches every *DenialError with errors.Is.
var ErrDenied = errors.New("path denied by the sandbox")

// Reason says which rule denied a path; the names mirror the SRD's
// DenialReason (NFR-ERR-02).
type Reason int

// Denial reasons.
const (
	InvalidPath Reason = iota
	AbsolutePath
	Traversal
	PathOutsideSandbox
	DeniedPatternMatched
)

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
	}
	return "InvalidPath"
}

// DenialError is a path the sandbox refused.
type DenialError struct {
	Reason    Reason
	Attempted string
	Resolved  string // canonical path, when known
	Pattern   string // the matching pattern or protected directory
}

func (e *DenialError) Error() string {
	q := fmt.Sprintf("%q", e.Attempted)
	switch e.Reason {
	case AbsolutePath:
		return "path " + q + " is absolute, and absolute paths are not allowed; use a path relative to the workspace root"
	case Traversal:
		return "path " + q + " contains a \"..\" component, which is not allowed; use a path inside the workspace root"
	case PathOutsideSandbox:
		return "path " + q + " resolves to " + e.Resolved + ", outside every allowed root; only files inside the workspace are accessible"
	case DeniedPatternMatched:
		return "path " + q + " is denied by the sandbox (matches " + e.Pattern + "); it holds credentials or toolhost state and is never accessible to tools"
	}
	if e.Attempted == "" {
		return "empty path; give a path relative to the workspace root"
	}
	return "path " + q + " is not a valid path (it contains a NUL byte)"
}

// Is makes errors.Is(err, ErrDenied) true.
func (e *DenialError) Is(target error) bool { return target == ErrDenied }
