// Package inside holds what toolhost's own programs (the command line, the
// server, the conformance harness, the benchmarks and the tests) use of a
// host beyond the host package's public API: a Host's engine and journal,
// and the journal opened without a Host. Being internal, it keeps these
// out of an embedder's reach, so the host package's API stays what an
// embedder needs; it must never assemble a host itself (that is the host
// package's job).
package inside

import (
	"github.com/toolhost/toolhost/host/internal/engine"
	"github.com/toolhost/toolhost/host/internal/jobs"
	"github.com/toolhost/toolhost/host/internal/journal"
)

// Key is the argument of host.Host.Inside. Only toolhost's own packages
// can write a Key, so only they can call that method.
type Key struct{}

// Parts are what a Host assembled that toolhost's own programs reach
// into: the engine, for the planning and observation hooks a Host does not
// offer, and the journal (nil when the Host keeps none).
type Parts struct {
	Engine  *engine.Engine
	Journal *journal.Journal
	Jobs    *jobs.Manager // run_command's background jobs, which end with their MCP session
}
