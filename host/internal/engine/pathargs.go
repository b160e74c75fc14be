package engine

import (
	"github.com/toolhost/toolhost/abi"
	"github.com/toolhost/toolhost/host/internal/argpath"
)

// maxPathArgs bounds the paths one call may name. Each is resolved
// through the sandbox before the plugin runs (a walk of its components
// with a system call for each), held for the call's read scope and write
// grants, and shown with its canonical path to a person approving it: a
// call of max_tool_args_bytes (256 KiB) could name some 30,000 short
// paths and make planning, not the plugin, the slow part, with an
// approval view no person reads. A thousand resolve in about 3 ms
// (BenchmarkPreflightPathArgs: 2.7 µs a path). It matches the most files
// one apply_patch may change (DefaultMaxCommitFiles), and is more than
// any tool needs at once.
const maxPathArgs = 1000

// pathArgs is every place the selectors reach in a call's decoded
// arguments. Preflight refuses a call whose arguments have a value of the
// wrong type at such a place, or name more than maxPathArgs paths, so a
// call planned or run past preflight has neither; what a later caller
// gets for one that had is nothing.
func pathArgs(selectors []string, decoded any) []argpath.Found {
	found, _ := argpath.Find(selectors, decoded, maxPathArgs)
	return found
}

// writeArgs are the selectors naming the paths a call of m may write:
// its create_args, or, for a tool without them, its path_args.
func writeArgs(m abi.Manifest) []string {
	if len(m.CreateArgs) > 0 {
		return m.CreateArgs
	}
	return m.PathArgs
}

// argText is the text preflight resolved for a path argument: an empty
// top-level "path" is the working directory.
func argText(f argpath.Found) string {
	if f.Text == "" && f.Selector == "path" {
		return "."
	}
	return f.Text
}
