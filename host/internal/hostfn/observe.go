package hostfn

import (
	"context"
	"encoding/json"

	"github.com/tetratelabs/wazero/api"

	"github.com/toolhost/toolhost/abi"
)

// Access is one host function a plugin called, as the host saw it: what
// `toolhost test` judges a plugin by, rather than by what the plugin says
// it does.
type Access struct {
	CallID   string
	Function string // the host function, e.g. abi.FnFSRead
	// Path is the path as the plugin passed it: the file of an fs_*
	// function (one Access per file of an fs_commit), the working
	// directory of proc_run ("" for the root); "" for event_emit. A path
	// longer than any path may be is cut to that length.
	Path string
	// Err is the host's refusal or failure, nil when the function did
	// what was asked.
	Err error
	// Denial is the sandbox's reason when it refused Path
	// (abi.DenialReason: "PathOutsideSandbox", "Traversal", ...).
	Denial string
	// Summary marks an attempt while an approval summary was computed;
	// the host refused it before it ran.
	Summary bool
}

// Observer receives every Access of the calls it is given to. It is
// called on the call's goroutine while the plugin waits, so it must be
// quick and must not call back into the plugin.
type Observer func(Access)

// report passes what the host function name did with params to the
// call's observer, if any. mem is read before the guest runs again, so
// the paths are those the plugin passed.
func (c *Call) report(name string, mem api.Memory, params []uint64, err error) {
	if c.Observe == nil {
		return
	}
	a := Access{CallID: c.CallID, Function: name, Err: err}
	if he, ok := err.(*Error); ok && he.Kind == abi.KindSandboxViolation {
		a.Denial, _ = he.Details["reason"].(string)
	}
	for _, path := range accessPaths(name, mem, params) {
		a.Path = path
		c.Observe(a)
	}
}

// accessPaths are the paths a call of the host function name with params
// names: one for most functions, one per file of a commit, one empty
// string for a function that names none.
func accessPaths(name string, mem api.Memory, params []uint64) []string {
	switch name {
	case abi.FnEventEmit, abi.FnProcJob:
		// A job is the conversation's, not a file's.
		return []string{""}
	case abi.FnProcRun:
		return []string{observedString(mem, params[2], params[3])}
	case abi.FnFSCommit:
		req, ok := mem.Read(uint32(params[0]), uint32(params[1]))
		if !ok {
			return []string{""}
		}
		files, err := abi.DecodeCommitRequest(req)
		if err != nil || len(files) == 0 {
			return []string{""}
		}
		paths := make([]string, len(files))
		for i, f := range files {
			paths[i] = cut(f.Path)
		}
		return paths
	case abi.FnFSSearch, abi.FnProcExec:
		// The directory searched, or a command's working directory, is
		// inside the request.
		req, ok := mem.Read(uint32(params[0]), uint32(params[1]))
		if !ok {
			return []string{""}
		}
		var r struct {
			Path string `json:"path"`
			Cwd  string `json:"cwd"`
		}
		if json.Unmarshal(req, &r) != nil {
			return []string{cut(string(req))}
		}
		if name == abi.FnProcExec {
			return []string{cut(r.Cwd)}
		}
		return []string{cut(r.Path)}
	}
	return []string{observedString(mem, params[0], params[1])}
}

// observedString is the guest's string at ptr, n, cut to maxPathBytes;
// "" when out of bounds.
func observedString(mem api.Memory, ptr, n uint64) string {
	b, ok := mem.Read(uint32(ptr), min(uint32(n), maxPathBytes))
	if !ok {
		return ""
	}
	return string(b)
}

func cut(path string) string { return path[:min(len(path), maxPathBytes)] }

type observerKey struct{}

// WithObserver returns ctx carrying obs for the host functions the
// runtime refuses without a call's state: those a plugin calls while its
// approval summary is computed (Refused).
func WithObserver(ctx context.Context, obs Observer) context.Context {
	return context.WithValue(ctx, observerKey{}, obs)
}

// refused reports a host function the runtime refused because no call was
// running (runtime.HostFunction.Refused) to the observer in ctx, if any.
func refused(name string) func(ctx context.Context, summary bool, why string, mem api.Memory, params []uint64) {
	return func(ctx context.Context, summary bool, why string, mem api.Memory, params []uint64) {
		obs, _ := ctx.Value(observerKey{}).(Observer)
		if obs == nil {
			return
		}
		err := fail(abi.StatusNotGranted, abi.KindExecutionFailed, "host function %s is not available %s", name, why)
		for _, path := range accessPaths(name, mem, params) {
			obs(Access{Function: name, Path: path, Err: err, Summary: summary})
		}
	}
}
