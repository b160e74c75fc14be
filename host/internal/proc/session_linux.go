package proc

import (
	"bytes"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"slices"
	"strconv"
	"time"

	"golang.org/x/sys/unix"
)

// Killing the process group is not enough: a child that makes a group of
// its own (timeout, bash's set -m, Python's process_group=0 or
// os.setpgid) leaves it and would outlive the call, its timeout included.
// It keeps the session, though, and the shell leads
// the session (Setsid), so the session id is the shell's pid. Linux has
// no call that signals a session, so killSession lists the processes in
// /proc, asks each for its session with getsid (one system call, no file
// to open and format: about ten times cheaper than reading PID/stat) and
// kills the members it finds.
//
// A process that keeps forking, each parent exiting at once (a "fork
// hopper"), has no pid that lives longer than a fork, so the pid a scan
// lists is often gone by the time it is checked, and its child was not
// listed. Three things catch it:
//
//   - Each member found is killed at once, its whole process group with
//     it. A group kill is atomic against fork: the kernel does not let a
//     fork complete past a fatal signal to its group, so a hopper that
//     keeps its group dies as soon as any of its pids is seen.
//   - The pids are checked newest first, right after the listing, so a
//     hopper (always among the newest) is checked within microseconds of
//     being listed; and every chaseEvery checks, the pids handed out since
//     the listing began are checked too, so a long listing (a hopper that
//     nothing reaps leaves thousands of zombies) gives it no respite.
//   - A pass ends with a hunt: it checks the pids the kernel handed out
//     since the listing began (the pid namespace's last pid,
//     /proc/sys/kernel/ns_last_pid, read before and after) and the
//     backCheck before them, oldest first, until no new pid appeared.
//     A pid is handed out a moment before its process can be seen, so a
//     check can miss a child still being forked; but its parent was then
//     alive, and checked later than the child only if it was older, that
//     is, if the parent had finished forking (and so the child could be
//     seen) by the time the child's pid was checked, or if it was alive at
//     its own check. So a pass whose hunt ends, and which found no live
//     member at all, proves that no member was left alive, and a command
//     that leaves nothing behind pays for one pass and no pause. (A fork
//     that was under way when the listing went by, and handed out its pid
//     more than backCheck pids before the hunt began, is the gap left.)
//
// Without that proof (no ns_last_pid, pids handed out faster than a pass
// checks them, or a pass slower than proofTime) killSession passes again
// until sessionEmptyPasses passes in a row, sessionEmptyPause apart,
// found no live member, and gives up after sessionKillLimit, logging the
// members its last pass found.
//
// Freezing (SIGSTOP to every member found, SIGKILL at the end of the
// pass) adds nothing here: a member is signalled the moment it is found,
// and a stopped process can no more fork than a killed one.
//
// What still escapes: a process that calls setsid starts a session of
// its own and is never a member (setsid(1), or a daemon's double fork); a
// member that toolhost may not signal (a setuid program) lives on,
// logged. A hopper that also makes a new group on every hop is caught
// only when a pass finds one of its pids alive and signals it before it
// forks again, which the passes above make likely but do not guarantee,
// and anything still running after sessionKillLimit is left, logged.
// Confining commands in namespaces or a cgroup closes all of these.
//
// The host is deliberately not a child subreaper (PR_SET_CHILD_SUBREAPER):
// every orphan of every command would become its child, a zombie until it
// reaped them.

const (
	// sessionEmptyPasses is how many passes in a row must find no member
	// before killSession ends without a proof that the session is empty.
	sessionEmptyPasses = 3
	// sessionEmptyPause is the least time between those passes: long
	// enough for a hopper that was between forks to be found alive.
	sessionEmptyPause = 10 * time.Millisecond
	// While passes find members, the pause before the next one doubles
	// from sessionPauseMin up to sessionPauseMax, giving the killed
	// processes time to exit.
	sessionPauseMin = 200 * time.Microsecond
	sessionPauseMax = 20 * time.Millisecond
	// sessionKillLimit bounds killSession: what survives it is logged.
	// A pass over /proc can take a second on a loaded 2-core machine, so
	// the bound leaves room for several.
	sessionKillLimit = 4 * time.Second
	// newPidsLimit bounds the new pids checked at once, huntLimit those
	// one pass checks, and proofTime how long a pass may take and still
	// prove anything: beyond them, pids are handed out faster than a pass
	// checks them, and the pid counter could even have come round to
	// where it began unnoticed.
	newPidsLimit = 4096
	// backCheck is how many pids handed out before a pass began its hunt
	// checks again: forks that were under way when the listing went by.
	backCheck = 64
	// chaseEvery is how many listed pids are checked between chases.
	chaseEvery = 64
	huntLimit  = 4 * newPidsLimit
	proofTime  = 250 * time.Millisecond
	// statBufSize holds the start of /proc/PID/stat up to the session id:
	// the pid, the command name (at most 64 bytes, kernel threads
	// included) and four short fields. It is read only for members.
	statBufSize = 256
)

// killSession sends SIGKILL to every live process of session sid and to
// their process groups, in passes, until a pass proves that every member
// was sent SIGKILL, or sessionEmptyPasses passes in a row found no live
// member, or sessionKillLimit has passed; what survives is logged. Zombies are
// skipped: they run nothing and cannot fork, and the shell itself is one
// while Run has not reaped it, which also keeps sid from naming a new
// session. A failure is logged and never blocks the call.
func killSession(sid int, log *slog.Logger) {
	procFD, err := unix.Open("/proc", unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		log.Warn("proc: cannot list the command's session; only its process group was killed", "sid", sid, "err", &os.PathError{Op: "open", Path: "/proc", Err: err})
		return
	}
	defer unix.Close(procFD)
	s := newSessionScan(sid, procFD)
	defer s.close()
	began := time.Now()
	pause, empty := sessionPauseMin, 0
	for {
		found, proven, err := s.pass(began.Add(sessionKillLimit))
		if err != nil {
			log.Warn("proc: cannot list the command's session; processes outside its process group may survive", "sid", sid, "err", err)
			return
		}
		if proven {
			break // every member left is dying
		}
		wait := pause
		if found > 0 {
			empty = 0
			pause = min(2*pause, sessionPauseMax)
		} else if empty++; empty == sessionEmptyPasses {
			break
		} else {
			wait = sessionEmptyPause
		}
		if time.Since(began)+wait > sessionKillLimit {
			log.Warn("proc: gave up killing the command's session: its processes may survive", "sid", sid, "last_found", s.lastFound, "passes", s.passes, "after", time.Since(began).Round(time.Millisecond))
			break
		}
		time.Sleep(wait)
	}
	log.Debug("proc: killed the command's session", "sid", sid, "passes", s.passes, "after", time.Since(began))
	for pid, err := range s.refused {
		log.Warn("proc: cannot kill a process of the command's session", "sid", sid, "pid", pid, "err", err)
	}
}

// sessionScan finds and kills the members of one session.
type sessionScan struct {
	sid     int
	ownPgrp int           // toolhost's process group: never signalled
	procFD  int           // /proc: opening PID/stat relative to it is cheaper
	lastPid int           // ns_last_pid, read with pread; -1 if unreadable
	buf     []byte        // reused for every PID/stat and ns_last_pid
	names   []int         // reused for every listing
	refused map[int]error // members that could not be signalled, for the log
	// skip holds the members not to check again: those seen dead (a
	// hopper leaves one per hop for as long as nothing reaps them, and an
	// init in a container can be slow to) and those that refused the
	// signal. It is emptied whenever their pids could have been reused:
	// when the pid counter came round (pid_max can be as low as 32768,
	// which a hopper goes through in a second), when a pass was too slow
	// to tell, or at every pass without ns_last_pid.
	skip     map[int]struct{}
	lastSeen int // the last pid read from ns_last_pid
	// groups are those signalled this pass: a group kill walks every
	// process of the group, zombies included, and a hopper that keeps its
	// group leaves thousands of them.
	groups map[int]struct{}

	passes    int
	lastFound []int // the live members the last pass found, for the log
}

func newSessionScan(sid, procFD int) *sessionScan {
	s := &sessionScan{sid: sid, ownPgrp: unix.Getpgrp(), procFD: procFD, buf: make([]byte, statBufSize),
		refused: map[int]error{}, skip: map[int]struct{}{}, groups: map[int]struct{}{}}
	s.lastPid, _ = unix.Openat(procFD, "sys/kernel/ns_last_pid", unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if s.lastPid < 0 {
		s.lastPid = -1 // not built in (CONFIG_CHECKPOINT_RESTORE), or hidden
	}
	return s
}

func (s *sessionScan) close() {
	if s.lastPid >= 0 {
		unix.Close(s.lastPid)
	}
}

// pass lists /proc and kills the members it finds, newest first, then
// hunts: it checks the pids handed out since the listing began, until no
// new one appeared. It returns how many live members it found, and
// whether it proves that every member alive at its end was sent SIGKILL
// (see the comment at the top of the file). The hunt stops at deadline.
func (s *sessionScan) pass(deadline time.Time) (found int, proven bool, err error) {
	s.passes++
	s.lastFound = s.lastFound[:0]
	clear(s.groups)
	began := time.Now()
	from, counted := s.readLastPid()
	if !counted {
		clear(s.skip)
	}
	defer func() {
		if time.Since(began) >= proofTime {
			proven = false
			clear(s.skip)
		}
	}()
	pids, err := s.list()
	if err != nil {
		return 0, false, err
	}
	chased := from
	for i, pid := range slices.Backward(pids) {
		s.check(pid)
		if counted && i%chaseEvery == 0 {
			s.chase(&chased)
		}
	}
	// The hunt begins a little before the listing did, and goes oldest
	// first: see the comment at the top of the file.
	proven = counted
	from = max(from-backCheck, 0)
	for hunted := 0; counted; {
		to, ok := s.readLastPid()
		if !ok || to == from {
			proven = proven && ok
			break
		}
		if to < from || to-from > newPidsLimit {
			// The counter came round, or too many pids to check: hunt
			// among the newest, where a hopper is, but prove nothing.
			proven = false
			from = max(to-newPidsLimit, 0)
		}
		for pid := from + 1; pid <= to; pid++ {
			s.check(pid)
		}
		if hunted += to - from; hunted > huntLimit || time.Now().After(deadline) {
			proven = false
			break
		}
		from = to
	}
	return len(s.lastFound), proven && len(s.lastFound) == 0, nil
}

// chase checks the pids handed out since *mark, newest newPidsLimit at
// most, and moves the mark: checking thousands of listed processes can
// take long (a hopper leaves a zombie per hop), and a hopper must not get
// that long to run. It proves nothing: the hunt that ends the pass does.
func (s *sessionScan) chase(mark *int) {
	to, ok := s.readLastPid()
	if !ok {
		return
	}
	for pid := max(*mark, to-newPidsLimit) + 1; pid <= to; pid++ {
		s.check(pid)
	}
	*mark = to
}

// list returns the pids in /proc, in the order read: ascending.
func (s *sessionScan) list() ([]int, error) {
	d, err := os.Open("/proc")
	if err != nil {
		return nil, err
	}
	defer d.Close()
	names, err := d.Readdirnames(-1)
	if err != nil {
		return nil, fmt.Errorf("read /proc: %w", err)
	}
	s.names = s.names[:0]
	for _, name := range names {
		if pid, err := strconv.Atoi(name); err == nil {
			s.names = append(s.names, pid)
		}
	}
	return s.names, nil
}

// check kills pid and its process group if pid is a member of the
// session, other than the shell (its group kill got it), those that
// refused the signal before and those seen dead.
func (s *sessionScan) check(pid int) {
	if pid == s.sid {
		return
	}
	if _, no := s.skip[pid]; no {
		return
	}
	if sid, err := unix.Getsid(pid); err != nil || sid != s.sid {
		return
	}
	// The group at once: it gets a hopper that has forked since, and
	// whose pid is gone by now, if the hopper kept its group.
	s.killGroup(pid)
	// The pidfd is opened before the stat that says pid is still the
	// member, so a pid reused in between is never signalled.
	fd, err := unix.PidfdOpen(pid, 0)
	if errors.Is(err, unix.ESRCH) {
		return
	}
	if err == nil {
		defer unix.Close(fd)
	} else {
		// No pidfds (before Linux 5.3, or filtered out), or pid is a
		// thread: it was read from the session a moment ago, and a pid is
		// reused only after the kernel has cycled through all the others.
		fd = -1
	}
	st, ok := s.stat(pid)
	switch {
	case !ok || st.sid != s.sid:
		return
	case !st.live():
		s.skip[pid] = struct{}{}
		return
	}
	s.lastFound = append(s.lastFound, pid)
	if err := s.kill(pid, fd); err != nil {
		s.refused[pid] = err
		s.skip[pid] = struct{}{}
	}
}

// kill sends SIGKILL to pid, through its pidfd fd where there is one: then
// once the process is gone the signal fails harmlessly.
func (s *sessionScan) kill(pid, fd int) error {
	if fd < 0 {
		return ignoreGone(unix.Kill(pid, unix.SIGKILL))
	}
	return ignoreGone(unix.PidfdSendSignal(fd, unix.SIGKILL, nil, 0))
}

// killGroup sends SIGKILL to the process group of pid, a member of the
// session: a group kill is atomic against fork. A process group never
// spans sessions, and its id stays allocated while it has members, so the
// group read from a member is in the session. It is checked all the same,
// and it is never toolhost's own group, nor 0 or 1, which kill(2) reads
// as the caller's group or every process.
func (s *sessionScan) killGroup(pid int) {
	pgid, err := unix.Getpgid(pid)
	if err != nil || pgid <= 1 || pgid == s.ownPgrp {
		return
	}
	if _, done := s.groups[pgid]; done {
		return
	}
	// The member leads its group (a hopper that makes a group on every
	// hop) or the leader is checked: one system call less for the former,
	// between finding it and the signal.
	if pgid != pid {
		if sid, err := unix.Getsid(pgid); err == nil && sid != s.sid {
			return // its leader is alive and in another session
		}
	}
	// A refusal is recorded by the kill of the member itself.
	unix.Kill(-pgid, unix.SIGKILL)
	s.groups[pgid] = struct{}{}
}

// readLastPid reads the last pid the kernel handed out in toolhost's pid
// namespace. When the counter came round, the pids remembered are
// forgotten.
func (s *sessionScan) readLastPid() (int, bool) {
	if s.lastPid < 0 {
		return 0, false
	}
	n, err := unix.Pread(s.lastPid, s.buf, 0)
	if err != nil || n <= 0 {
		return 0, false
	}
	last, err := strconv.Atoi(string(bytes.TrimSpace(s.buf[:n])))
	if err != nil {
		return 0, false
	}
	if last < s.lastSeen {
		clear(s.skip)
		clear(s.groups)
	}
	s.lastSeen = last
	return last, true
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
