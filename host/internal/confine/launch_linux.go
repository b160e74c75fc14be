package confine

import (
	"context"
	"errors"
	"os/exec"
)

// LauncherArg is the hidden first argument that makes the toolhost binary
// the launcher (Main) instead of its CLI.
const LauncherArg = "__toolhost-confine"

// Launch follows one confined command: it implements proc.Launcher. Owned
// by the launcher builder; this is its placeholder.
type Launch struct{}

// NewLaunch prepares to run p through launcher, the path of a toolhost
// binary; cg, if non-nil, receives the launcher before the shell starts.
func NewLaunch(p *Policy, launcher string, cg *Cgroup) *Launch { return &Launch{} }

// Prepare rewrites cmd, before it starts, into the launcher's.
func (l *Launch) Prepare(cmd *exec.Cmd) error { return errors.New("confine: the launcher is not built yet") }

// Started finishes the setup once the launcher runs and waits until the
// command runs confined.
func (l *Launch) Started(ctx context.Context, pid int) error { return nil }

// Exit maps the launcher's exit status to the shell's.
func (l *Launch) Exit(code int, signal string) (int, string) { return code, signal }

// Close releases what the launch holds, once its processes are gone.
func (l *Launch) Close() {}

// Applied is the confinement the command ran under, known after Started.
func (l *Launch) Applied() Applied { return Applied{} }

// Main is the launcher: it runs when the toolhost binary is started with
// LauncherArg, and returns the exit status.
func Main(args []string) int { return 125 }
