package journal

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"strconv"
	"syscall"
	"time"
)

// ProcessStartTime returns when process pid started, in clock ticks since
// boot (field 22 of /proc/PID/stat): with the pid it names one process for
// as long as the system runs, where a pid alone may be reused.
func ProcessStartTime(pid int) (uint64, error) {
	start, _, err := procStat(pid)
	return start, err
}

// procStat reads a process's start time and process group.
func procStat(pid int) (start uint64, pgrp int, err error) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return 0, 0, err
	}
	// The command name (field 2) is in parentheses and may hold spaces
	// and parentheses: the fields that follow start after the last ')'.
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return 0, 0, fmt.Errorf("/proc/%d/stat: unexpected format", pid)
	}
	f := bytes.Fields(b[i+1:]) // f[0] is field 3 (state)
	if len(f) < 20 {
		return 0, 0, fmt.Errorf("/proc/%d/stat: unexpected format", pid)
	}
	pgrp, err = strconv.Atoi(string(f[2])) // field 5
	if err != nil {
		return 0, 0, fmt.Errorf("/proc/%d/stat: process group: %w", pid, err)
	}
	start, err = strconv.ParseUint(string(f[19]), 10, 64) // field 22
	if err != nil {
		return 0, 0, fmt.Errorf("/proc/%d/stat: start time: %w", pid, err)
	}
	return start, pgrp, nil
}

// ProcessAlive reports whether pid is still the process that started at
// start; a start of 0 (not known when recorded) matches any process with
// that pid. A zombie counts as gone.
func ProcessAlive(pid int, start uint64) bool {
	got, _, err := procStat(pid)
	return err == nil && (got == start || start == 0) && !zombie(pid)
}

func zombie(pid int) bool {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return true
	}
	i := bytes.LastIndexByte(b, ')')
	return i < 0 || i+2 >= len(b) || b[i+2] == 'Z'
}

// GroupAlive reports whether process group pgid is still the group whose
// leader started at start. While the leader lives its start time decides.
// Once the leader is gone, the kernel does not give its pid to a new
// process while any member of its group lives: a group with that id holds
// the same group if one of its members started between start and
// notAfter, a time by which the group was known to exist (when it was
// journaled). A group whose members all started later may be a new one
// that reused the pid after the old emptied, and is not taken for it.
// Times are clock ticks since boot, as ProcessStartTime gives them; a
// start of 0 (not known when recorded) identifies nothing.
func GroupAlive(pgid int, start, notAfter uint64) bool {
	if start == 0 || pgid <= 1 {
		return false
	}
	if got, pgrp, err := procStat(pgid); err == nil {
		return got == start && pgrp == pgid && !zombie(pgid)
	} else if !errors.Is(err, os.ErrNotExist) {
		return false
	}
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return false
	}
	proven := false
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		got, pgrp, err := procStat(pid)
		if err != nil || pgrp != pgid {
			continue
		}
		if got < start {
			return false // older than our leader: not our group
		}
		if got <= notAfter && !zombie(pid) {
			proven = true // alive since before the group was journaled
		}
	}
	return proven
}

// ticksPerSecond is USER_HZ, the unit of /proc start times: 100 on every
// Linux architecture toolhost runs on.
const ticksPerSecond = 100

// BootTicks returns t as clock ticks since boot, the unit of
// ProcessStartTime, or 0 when it cannot be told. The boot time is now less
// the uptime, which /proc/uptime gives to the hundredth of a second
// (/proc/stat's btime only to the second).
func BootTicks(t time.Time) uint64 {
	b, err := os.ReadFile("/proc/uptime")
	now := time.Now()
	if err != nil {
		return 0
	}
	up, _, _ := bytes.Cut(bytes.TrimSpace(b), []byte(" "))
	secs, err := strconv.ParseFloat(string(up), 64)
	if err != nil {
		return 0
	}
	boot := now.Add(-time.Duration(secs * float64(time.Second)))
	if t.Before(boot) {
		return 0
	}
	return uint64(t.Sub(boot)) * ticksPerSecond / uint64(time.Second)
}

// Leaderless reports whether group pgid has members but no process of
// that pid: a group whose leader is gone.
func Leaderless(pgid int) bool {
	if pgid <= 1 || syscall.Kill(-pgid, 0) == syscall.ESRCH {
		return false
	}
	_, _, err := procStat(pgid)
	return errors.Is(err, os.ErrNotExist)
}

// KillGroup sends SIGKILL to every process of group pgid.
func KillGroup(pgid int) error {
	if pgid <= 1 {
		return fmt.Errorf("refusing to signal process group %d", pgid)
	}
	err := syscall.Kill(-pgid, syscall.SIGKILL)
	if errors.Is(err, syscall.ESRCH) {
		return nil
	}
	return err
}
