//go:build unix

package proc

import (
	"errors"
	"log/slog"
	"os"
	"syscall"
)

// sysProcAttr puts the shell in a new session, and so a new process group
// whose id is its pid: everything it starts can be killed at once.
func sysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setsid: true}
}

// killGroup sends SIGKILL to the process group led by p (SRD FR-EXE-05).
// A group that is already gone is not an error; any other failure is
// logged and ignored, because completing the call matters more than
// reporting a process we could not kill.
func killGroup(p *os.Process, log *slog.Logger) {
	err := syscall.Kill(-p.Pid, syscall.SIGKILL)
	if err != nil && !errors.Is(err, syscall.ESRCH) {
		log.Warn("proc: cannot kill process group", "pgid", p.Pid, "err", err)
	}
}
