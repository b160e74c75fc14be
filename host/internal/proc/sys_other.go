//go:build !unix

package proc

import (
	"errors"
	"log/slog"
	"os"
	"syscall"
)

// sysProcAttr has no session to create outside Unix.
func sysProcAttr() *syscall.SysProcAttr { return nil }

// killGroup can only kill the shell itself outside Unix; its children
// survive it.
func killGroup(p *os.Process, log *slog.Logger) {
	if err := p.Kill(); err != nil && !errors.Is(err, os.ErrProcessDone) {
		log.Warn("proc: cannot kill process", "pid", p.Pid, "err", err)
	}
}
