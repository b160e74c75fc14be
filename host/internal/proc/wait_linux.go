package proc

import (
	"errors"

	"golang.org/x/sys/unix"
)

// waitUnreaped blocks until process pid has exited, leaving it a zombie
// (WNOWAIT) so that its pid stays reserved until exec.Cmd.Wait reaps it.
func waitUnreaped(pid int) error {
	for {
		var info unix.Siginfo
		err := unix.Waitid(unix.P_PID, pid, &info, unix.WEXITED|unix.WNOWAIT, nil)
		if !errors.Is(err, unix.EINTR) {
			return err
		}
	}
}
