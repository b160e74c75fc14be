package proc

import (
	"bytes"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"strconv"
	"time"

	"golang.org/x/sys/unix"
)

// Killing the process group is not enough: a child that makes a group of
// its own (timeout, bash's set -m, Python's process_group=0 or
// os.setpgid) leaves it and would outlive the call, its timeout included
// (issue 10 item 6). It keeps the session, though, and the shell leads
// the session (Setsid), so the session id is the shell's pid. Linux has
// no call that signals a session, so killSession lists the processes in
// /proc, asks each for its session with getsid (one system call, no file
// to open and format: about ten times cheaper than reading PID/stat) and
// kills the members one by one.
//
// A process that calls setsid itself starts a session of its own and
// still escapes; confining commands in namespaces closes that.

const (
	// sessionRounds bounds the scans: members may fork while they are
	// being killed, so killSession scans again until a scan finds none.
	sessionRounds = 20
	// The pause before a rescan doubles from sessionPauseMin up to
	// sessionPauseMax, giving killed processes time to exit: about 0.6 s
	// in all when every round finds a survivor.
	sessionPauseMin = 200 * time.Microsecond
	sessionPauseMax = 50 * time.Millisecond
	// statBufSize holds the start of /proc/PID/stat up to the session id:
	// the pid, the command name (at most 64 bytes, kernel threads
	// included) and four short fields. It is read only for members.
	statBufSize = 256
)

// killSession sends SIGKILL to every live process of session sid, scanning
// again until a scan finds none or the rounds run out; what survives is
// logged. Zombies are skipped: they run nothing and cannot fork, and the
// shell itself is one while Run has not reaped it, which also keeps sid
// from naming a new session. A failure is logged and never blocks the call.
func killSession(sid int, log *slog.Logger) {
	procFD, err := unix.Open("/proc", unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		log.Warn("proc: cannot list the command's session; only its process group was killed", "sid", sid, "err", &os.PathError{Op: "open", Path: "/proc", Err: err})
		return
	}
	defer unix.Close(procFD)
	s := sessionScan{sid: sid, procFD: procFD, buf: make([]byte, statBufSize), refused: map[int]error{}}
	pause := sessionPauseMin
	for round := 1; ; round++ {
		members, err := s.members()
		if err != nil {
			log.Warn("proc: cannot list the command's session; processes outside its process group may survive", "sid", sid, "err", err)
			return
		}
		if len(members) == 0 {
			break
		}
		if round == sessionRounds {
			log.Warn("proc: processes of the command's session survived SIGKILL", "sid", sid, "pids", members, "rounds", round)
			break
		}
		for _, pid := range members {
			if err := s.kill(pid); err != nil {
				s.refused[pid] = err
			}
		}
		time.Sleep(pause)
		pause = min(2*pause, sessionPauseMax)
	}
	for pid, err := range s.refused {
		log.Warn("proc: cannot kill a process of the command's session", "sid", sid, "pid", pid, "err", err)
	}
}

// sessionScan finds and kills the members of one session.
type sessionScan struct {
	sid     int
	procFD  int           // /proc: opening PID/stat relative to it is cheaper
	buf     []byte        // reused for every PID/stat
	refused map[int]error // members that could not be signalled: not retried
}

// members returns the pids of the session's live processes, not counting
// those that refused the signal before.
func (s *sessionScan) members() ([]int, error) {
	d, err := os.Open("/proc")
	if err != nil {
		return nil, err
	}
	defer d.Close()
	names, err := d.Readdirnames(-1)
	if err != nil {
		return nil, fmt.Errorf("read /proc: %w", err)
	}
	var pids []int
	for _, name := range names {
		pid, err := strconv.Atoi(name)
		if err != nil || pid == s.sid {
			continue // not a process, or the shell: its group kill gets it
		}
		if _, no := s.refused[pid]; no {
			continue
		}
		if sid, err := unix.Getsid(pid); err != nil || sid != s.sid {
			continue
		}
		if st, ok := s.stat(pid); ok && st.sid == s.sid && st.live() {
			pids = append(pids, pid)
		}
	}
	return pids, nil
}

// kill sends SIGKILL to pid if it is still in the session. Where it can,
// it signals through a pidfd opened before checking the session, so a pid
// reused between the scan and the signal is never hit: while the pidfd's
// process lives, pid names it; once it is gone the signal fails harmlessly.
func (s *sessionScan) kill(pid int) error {
	fd, err := unix.PidfdOpen(pid, 0)
	switch {
	case errors.Is(err, unix.ESRCH):
		return nil
	case err != nil:
		// No pidfds (before Linux 5.3, or filtered out): the pid was read
		// from the session a moment ago, and a pid is reused only after
		// the kernel has cycled through all the others.
		return ignoreGone(unix.Kill(pid, unix.SIGKILL))
	}
	defer unix.Close(fd)
	if sid, err := unix.Getsid(pid); err != nil || sid != s.sid {
		return nil
	}
	return ignoreGone(unix.PidfdSendSignal(fd, unix.SIGKILL, nil, 0))
}

func ignoreGone(err error) error {
	if errors.Is(err, unix.ESRCH) {
		return nil
	}
	return err
}

// procStat is what killSession needs of /proc/PID/stat.
type procStat struct {
	state byte
	sid   int
}

// live reports whether the process still runs: not a zombie, not dead.
func (st procStat) live() bool {
	return st.state != 'Z' && st.state != 'X' && st.state != 'x'
}

// stat reads the start of /proc/PID/stat, with raw system calls. A process
// that is gone, or cannot be read, reports !ok.
func (s *sessionScan) stat(pid int) (procStat, bool) {
	fd, err := unix.Openat(s.procFD, strconv.Itoa(pid)+"/stat", unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		return procStat{}, false
	}
	n, err := unix.Read(fd, s.buf)
	unix.Close(fd)
	if err != nil || n <= 0 {
		return procStat{}, false
	}
	return parseStat(s.buf[:n])
}

// parseStat parses "pid (comm) state ppid pgrp session ...". The command
// name may hold spaces and parentheses, so the fields start after the
// last ')'; the fields that follow hold none, so a buffer cut after the
// session id still finds the right one. Each field must end in a space:
// one cut off by the buffer is not trusted.
func parseStat(b []byte) (procStat, bool) {
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return procStat{}, false
	}
	rest := b[i+1:]
	var f [4][]byte // state ppid pgrp session
	for k := range f {
		rest = bytes.TrimLeft(rest, " ")
		end := bytes.IndexByte(rest, ' ')
		if end < 0 {
			return procStat{}, false
		}
		f[k], rest = rest[:end], rest[end:]
	}
	sid, err := strconv.Atoi(string(f[3]))
	if err != nil || len(f[0]) != 1 {
		return procStat{}, false
	}
	return procStat{state: f[0][0], sid: sid}, true
}
