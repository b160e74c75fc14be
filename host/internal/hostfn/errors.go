package hostfn

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"path"

	"github.com/toolhost/toolhost/abi"
	"github.com/toolhost/toolhost/host/internal/sandbox"
)

// Error is a host function failure; it travels to the guest as a staged
// abi.HostError and comes back as the tool's error if the plugin returns it.
type Error struct {
	Status  abi.Status
	Kind    abi.ErrorKind
	Message string
	Details map[string]any
}

func (e *Error) Error() string { return e.Message }

func fail(status abi.Status, kind abi.ErrorKind, format string, args ...any) *Error {
	return &Error{Status: status, Kind: kind, Message: fmt.Sprintf(format, args...)}
}

// classify turns any error from the sandbox or the filesystem into an *Error
// that names the path as the plugin gave it.
func classify(name string, err error) *Error {
	var he *Error
	if errors.As(err, &he) {
		return he
	}
	var de *sandbox.DenialError
	if errors.As(err, &de) {
		return &Error{
			Status: abi.StatusDenied, Kind: abi.KindSandboxViolation, Message: de.Error(),
			Details: denialDetails(de),
		}
	}
	switch {
	case escaped(err):
		return fail(abi.StatusDenied, abi.KindSandboxViolation,
			"%s: a directory on its way was replaced by a symbolic link leading out of its root after toolhost checked the path (another program is changing it); nothing was changed. Look at it again with list_directory, then retry", name)
	case errors.Is(err, fs.ErrNotExist):
		// The parent is where to look: "check with list_directory" is
		// no help to a list_directory that was given the missing path.
		return fail(abi.StatusNotFound, abi.KindExecutionFailed, "%s: no such file or directory; list_directory of %q shows what is there", name, path.Dir(path.Clean(name)))
	case errors.Is(err, fs.ErrPermission):
		return fail(abi.StatusIO, abi.KindExecutionFailed, "%s: permission denied by the operating system", name)
	}
	return fail(abi.StatusIO, abi.KindExecutionFailed, "%s: %v", name, err)
}

// escaped reports an error of os.Root refusing a path that leads out of
// its root: a directory on the way became a link after the path was
// resolved and checked.
func escaped(err error) bool {
	var pe *fs.PathError
	return errors.As(err, &pe) && pe.Err != nil && pe.Err.Error() == "path escapes from parent"
}

func denialDetails(de *sandbox.DenialError) map[string]any {
	d := map[string]any{"reason": de.Reason.String(), "attempted": de.Attempted}
	if de.Resolved != "" {
		d["resolved"] = de.Resolved
	}
	if de.Pattern != "" {
		d["pattern"] = de.Pattern
	}
	return d
}

func (e *Error) encode() []byte {
	he := abi.HostError{Kind: e.Kind, Message: e.Message}
	if len(e.Details) > 0 {
		he.Details, _ = json.Marshal(e.Details)
	}
	b, _ := json.Marshal(he)
	return b
}

// interrupted maps a host function stopped by the call's context: its
// deadline is the tool's Timeout (what happened says what was left
// undone), a cancellation is the SRD's "Cancelled by user". It returns
// nil for any other error.
func interrupted(err error, what string) error {
	switch {
	case errors.Is(err, context.DeadlineExceeded):
		return fail(abi.StatusCancelled, abi.KindTimeout, "%s", what)
	case errors.Is(err, context.Canceled):
		return fail(abi.StatusCancelled, abi.KindCancelled, "Cancelled by user")
	}
	return nil
}
