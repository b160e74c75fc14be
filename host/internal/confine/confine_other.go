//go:build !linux

package confine

import (
	"context"
	"fmt"
	"os/exec"
	"runtime"
)

// errNoConfinement is why no command can be confined here: the launcher
// needs Linux namespaces, Landlock and seccomp. Confinement fails closed.
var errNoConfinement = fmt.Errorf("confine: commands cannot be confined on %s (it needs Linux namespaces, Landlock and seccomp); run toolhost on Linux, or set [tools.run_command] sandbox = \"off\" in the operator's configuration", runtime.GOOS)

// Launch follows one confined command; on this system it refuses to.
type Launch struct{ warm *warmLauncher }

// NewLaunch returns a Launch whose Prepare fails: nothing is confined
// here.
func NewLaunch(p *Policy, launcher string, cg *Cgroup) *Launch { return &Launch{} }

// Prepare fails: the command does not run.
func (l *Launch) Prepare(cmd *exec.Cmd) error { return errNoConfinement }

// Started fails: the command does not run.
func (l *Launch) Started(ctx context.Context, pid int) error { return errNoConfinement }

// Exit returns the status unchanged.
func (l *Launch) Exit(code int, signal string) (int, string) { return code, signal }

// Close does nothing.
func (l *Launch) Close() {}

// Applied is empty: nothing applied.
func (l *Launch) Applied() Applied { return Applied{} }

// Exiting is nil: no launcher runs here.
func (l *Launch) Exiting() <-chan struct{} { return nil }

// Released is nil: no launcher runs here.
func (l *Launch) Released() <-chan struct{} { return nil }

// abort does nothing: no launcher runs here.
func (l *Launch) abort() {}
