// Package confine is the host's half of run_command's confinement: the
// second wall behind the approval policy.
//
// For each call it builds a Policy (Build), makes the call's cgroup
// (NewCgroup) and egress proxy, and prepares an exec.Cmd that re-executes
// the toolhost binary as the launcher (Launch), then follows it until the
// command ends. The launcher itself, which enters the namespaces, builds
// the command's root and runs sh -c under Landlock and seccomp, is
// package launcher; the two share only package spec, and this package
// never imports the launcher's code.
//
// Confinement fails closed: when what the policy asks cannot be had,
// the command does not run, and the error says what is missing and how to
// get it (Probe, Doctor). Nothing a tool call passes can turn it off.
package confine

import (
	"time"

	"github.com/toolhost/toolhost/host/internal/confine/spec"
)

// The contract's types under this package's names. Mode, Network, Limits
// and Applied (with their values) are what the host's other packages
// configure and record, so they keep naming them confine.Mode and so on.
type (
	Mode    = spec.Mode
	Network = spec.Network
	Limits  = spec.Limits
	Applied = spec.Applied
)

// The values of Mode and Network.
const (
	ModeWorkspaceWrite = spec.ModeWorkspaceWrite
	ModeReadOnly       = spec.ModeReadOnly
	ModeOff            = spec.ModeOff

	NetworkOff       = spec.NetworkOff
	NetworkAllowlist = spec.NetworkAllowlist
	NetworkOn        = spec.NetworkOn
)

// Policy and Mount under this package's names, for Build, Hint and the
// search of the writable trees (policy.go, hint.go, walk*.go), which
// build and read policies in this package's terms.
type (
	Policy    = spec.Policy
	Mount     = spec.Mount
	MountKind = spec.MountKind
)

// The values of MountKind.
const (
	MountRead  = spec.MountRead
	MountWrite = spec.MountWrite
	MountTmpfs = spec.MountTmpfs
	MountHide  = spec.MountHide
	MountStage = spec.MountStage
)

// startTimeout bounds how long the host waits for the launcher to report
// that the command's confinement is in place.
const startTimeout = 10 * time.Second

// perMountTimeout is the time startTimeoutFor adds for each mount of a
// policy: the launcher makes every mount itself, a few syscalls each,
// and a loaded machine took over 10s for the 100,000 of a policy at the
// kernel's fs.mount-max, more than the 5s it took idle.
const perMountTimeout = 100 * time.Microsecond

// startTimeoutFor bounds how long the host waits for the launcher to
// confine a command under a policy of mounts mounts.
func startTimeoutFor(mounts int) time.Duration {
	return startTimeout + time.Duration(mounts)*perMountTimeout
}
