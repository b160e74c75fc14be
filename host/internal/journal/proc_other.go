//go:build !linux

package journal

import (
	"errors"
	"os"
	"syscall"
	"time"
)

var errNoProc = errors.New("process start times are read from /proc, which this system does not have")

// ProcessStartTime is not known on this system.
func ProcessStartTime(pid int) (uint64, error) { return 0, errNoProc }

// ProcessAlive reports whether any process has pid: without start times a
// reused pid looks alive, which only makes recovery leave a batch alone.
func ProcessAlive(pid int, start uint64) bool {
	p, err := os.FindProcess(pid)
	return err == nil && p.Signal(syscall.Signal(0)) == nil
}

// GroupAlive cannot tell a reused process group here, so it says no:
// recovery never signals a process it cannot identify.
func GroupAlive(pgid int, start, notAfter uint64) bool { return false }

// BootTicks cannot be known here.
func BootTicks(time.Time) uint64 { return 0 }

// KillGroup is not done on this system.
func KillGroup(pgid int) error { return errNoProc }

// Leaderless cannot be known here.
func Leaderless(int) bool { return false }
