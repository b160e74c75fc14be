package confine

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/toolhost/toolhost/host/internal/confine/spec"
)

const (
	// warmDepth is how many warm launchers wait per network mode: one in
	// the channel and one held by its refill goroutine. Two cover a
	// command started while the one before it still runs.
	warmDepth = 2
	// refillDelay bounds how long the start of the next launcher waits
	// for the commands started from the pool to end, so that its
	// start-up does not take a core from them (a command that finds the
	// pool empty starts it at once).
	refillDelay = 250 * time.Millisecond
	// warmWait is how long a command waits for a warm launcher that is
	// starting (about 10 ms of the binary's start-up) before it takes
	// the cold path, which costs several times that.
	warmWait = 100 * time.Millisecond
	// discardWait bounds the wait for a discarded launcher's exit before
	// its cgroup is removed.
	discardWait = 2 * time.Second
	// serverTimeout bounds an answer of the launcher server.
	serverTimeout = 10 * time.Second
	// The refill's pause after a failure doubles from the first to the
	// last.
	firstBackoff, lastBackoff = time.Second, time.Minute
)

// warmPool keeps launchers started ahead of need, so that a confined
// command pays for the launcher's own work and not for the clone of a
// large process nor the binary's start-up (see launcher.ServeLaunchers).
// It starts nothing until Warm or a take; a command that finds none
// ready takes the cold path, never an unconfined one.
//
// Its methods are safe for concurrent use.
type warmPool struct {
	// exe is the binary of the launcher server and its launchers: the
	// small launcher binary when warm was given one, until it fails, and
	// fallback, the host's launcher, from then on.
	exe, fallback string
	log           *slog.Logger
	// id and seq name the launchers' cgroups: id tells apart the pools
	// of hosts in one process, which share its cgroup.
	id  string
	seq atomic.Uint64

	mu      sync.Mutex
	enabled bool
	// limits are the commands' cgroup limits, set on a launcher's cgroup
	// while it waits (presetCgroup); zero sets none.
	limits Limits
	// ahead says what a launcher mounts while it waits, with the tmp
	// made for it (mountsAhead.next); nil mounts nothing ahead.
	ahead func(newNet bool) (tmp string, msg []byte)
	// running are the launchers taken whose commands have not ended:
	// close kills them, so that no command outlives its host.
	running map[*warmLauncher]bool
	closed  bool
	server  *launcherServer
	ready   map[bool]*warmSlot // by new network namespace
	done    chan struct{}
	wg      sync.WaitGroup
}

// warmSlot is one network mode's warm launchers.
type warmSlot struct {
	ch       chan *warmLauncher
	need     chan struct{}         // a take found ch empty
	taken    chan *warmLauncher    // what takes took, for the refill
	starting atomic.Bool           // a launcher is being started
	failing  atomic.Pointer[error] // the last start failed; no waiting then
}

func newWarmPool(exe string, log *slog.Logger) *warmPool {
	return &warmPool{exe: exe, fallback: exe, log: log, id: strconv.FormatUint(rand.Uint64()>>40, 36),
		ready: map[bool]*warmSlot{}, done: make(chan struct{}), running: map[*warmLauncher]bool{}}
}

// enable lets commands take launchers from the pool, with the launcher
// binary small if it is not "". It starts none: the first take or warm
// does.
func (p *warmPool) enable(small string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed || p.enabled {
		return
	}
	if small != "" {
		p.exe = small
	}
	p.enabled = true
}

// limitCgroups has the cgroups of launchers started from now on carry
// l, the commands' memory and process limits, while they wait.
func (p *warmPool) limitCgroups(l Limits) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.limits = l
}

// mountAhead has launchers started from now on mount in their
// commands' roots, while they wait, what ahead says.
func (p *warmPool) mountAhead(ahead func(newNet bool) (string, []byte)) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.ahead = ahead
}

// warm starts filling the slot of newNet if the pool is enabled.
func (p *warmPool) warm(newNet bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.enabled && !p.closed {
		p.slotLocked(newNet)
	}
}

// slotLocked returns newNet's slot, starting its refill the first time.
func (p *warmPool) slotLocked(newNet bool) *warmSlot {
	s := p.ready[newNet]
	if s == nil {
		s = &warmSlot{ch: make(chan *warmLauncher, warmDepth-1), need: make(chan struct{}, 1), taken: make(chan *warmLauncher, warmDepth)}
		// Set before the refill runs, so that the take that made the
		// slot waits for its first launcher.
		s.starting.Store(true)
		p.ready[newNet] = s
		p.wg.Add(1)
		go p.refill(newNet, s)
	}
	return s
}

// take returns a warm launcher for newNet, waiting up to warmWait for one
// being started, or nil: then the command takes the cold path.
func (p *warmPool) take(newNet bool) *warmLauncher {
	p.mu.Lock()
	if !p.enabled || p.closed {
		p.mu.Unlock()
		return nil
	}
	s := p.slotLocked(newNet)
	p.mu.Unlock()
	select {
	case w := <-s.ch:
		return p.took(s, w)
	default:
	}
	select {
	case s.need <- struct{}{}:
	default:
	}
	if !s.starting.Load() {
		return nil
	}
	t := time.NewTimer(warmWait)
	defer t.Stop()
	select {
	case w := <-s.ch:
		return p.took(s, w)
	case <-t.C:
	case <-p.done:
	}
	return nil
}

// took counts w running until it ends, and tells s's refill that it was
// taken.
func (p *warmPool) took(s *warmSlot, w *warmLauncher) *warmLauncher {
	p.mu.Lock()
	closed := p.closed
	if !closed {
		p.running[w] = true
	}
	p.mu.Unlock()
	if closed {
		w.discard()
		return nil
	}
	go func() {
		<-w.ended
		p.mu.Lock()
		delete(p.running, w)
		p.mu.Unlock()
	}()
	select {
	case s.taken <- w:
	default:
		// The refill is behind: it waits for the latest anyway.
		select {
		case <-s.taken:
		default:
		}
		select {
		case s.taken <- w:
		default:
		}
	}
	return w
}

// waitQuiet waits, bounded by refillDelay, until the command that took w
// has ended, or a take found s empty, or the pool closes.
func (p *warmPool) waitQuiet(s *warmSlot, w *warmLauncher) {
	t := time.NewTimer(refillDelay)
	defer t.Stop()
	select {
	case <-w.ended:
	case <-s.need:
	case <-t.C:
	case <-p.done:
	}
}

// refill keeps s full until the pool closes, pausing after a failure.
func (p *warmPool) refill(newNet bool, s *warmSlot) {
	defer p.wg.Done()
	backoff := firstBackoff
	for {
		s.starting.Store(true)
		w, err := p.start(newNet)
		s.starting.Store(false)
		if err != nil {
			select {
			case <-p.done:
				// A start the close cut short failed for that reason.
				return
			default:
			}
			if s.failing.Load() == nil {
				p.log.Warn("confine: cannot start launchers ahead of need; commands start the slower way until it can", "err", err)
			}
			s.failing.Store(&err)
			select {
			case <-time.After(backoff):
			case <-p.done:
				return
			}
			backoff = min(2*backoff, lastBackoff)
			continue
		}
		if s.failing.Swap(nil) != nil {
			p.log.Info("confine: launchers are started ahead of need again")
		}
		backoff = firstBackoff
		// A push that waits for room is let in by a take; one that does
		// not may follow takes made while w started.
		waited := false
		select {
		case s.ch <- w:
		default:
			waited = true
			select {
			case s.ch <- w:
			case <-p.done:
				w.kill()
				unix.Close(w.sock)
				w.sock = -1
				w.release()
				return
			}
		}
		// A take that found the pool empty has w now.
		select {
		case <-s.need:
		default:
		}
		// The next launcher starts once the command that took the last
		// one has ended: on two cores its start-up slows that command
		// (its mounts, Landlock, the shell) by a millisecond or more.
		var last *warmLauncher
		if waited {
			select {
			case last = <-s.taken:
			case <-p.done:
				return
			}
		}
		for drained := false; !drained; {
			select {
			case t := <-s.taken:
				last = t
			default:
				drained = true
			}
		}
		if last != nil {
			// A take meanwhile waits for the launcher it has started.
			s.starting.Store(true)
			p.waitQuiet(s, last)
		}
	}
}

// start asks the launcher server, started or restarted as needed, for a
// launcher. A failure of the small launcher binary makes the pool fall
// back to the host's own at once.
func (p *warmPool) start(newNet bool) (*warmLauncher, error) {
	w, err := p.startWith(newNet)
	if err == nil {
		return w, nil
	}
	p.mu.Lock()
	small := p.exe
	retry := small != p.fallback && !p.closed
	if retry {
		p.exe = p.fallback
		if p.server != nil {
			p.server.close()
			p.server = nil
		}
	}
	p.mu.Unlock()
	if !retry {
		return nil, err
	}
	p.log.Warn("confine: the launcher binary beside toolhost failed; toolhost starts launchers itself instead", "binary", small, "err", err)
	return p.startWith(newNet)
}

func (p *warmPool) startWith(newNet bool) (*warmLauncher, error) {
	p.mu.Lock()
	srv := p.server
	if p.closed {
		p.mu.Unlock()
		return nil, errors.New("the pool is closed")
	}
	if srv == nil || srv.dead() {
		var err error
		if srv, err = startServer(p.exe); err != nil {
			p.mu.Unlock()
			return nil, err
		}
		p.server = srv
	}
	limits, ahead := p.limits, p.ahead
	p.mu.Unlock()
	// The launcher is cloned into a v2 cgroup the command's takes over.
	dir, f, err := warmCgroup(fmt.Sprintf("warm-%s-%d", p.id, p.seq.Add(1)))
	if err != nil {
		return nil, err
	}
	w, err := srv.launcher(newNet, f)
	if f != nil {
		f.Close()
	}
	if err != nil {
		if dir != "" {
			// A launcher the server started for an answer that never
			// came exits when its socket closes; its cgroup empties then.
			removeCgroup(dir, time.Now().Add(discardWait))
		}
		return nil, err
	}
	w.cgroupDir = dir
	if w.cgroup = presetCgroup(dir, limits); w.cgroup != nil {
		w.cgroupLimits = limits
	}
	if ahead != nil {
		if tmp, msg := ahead(newNet); msg != nil {
			w.tmp = tmp
			if err := w.mountAhead(msg); err != nil {
				// Released here, not in the background as discard does:
				// a pool closing waits for its refills, so its Close
				// leaves neither this launcher's tmp nor its cgroup.
				w.kill()
				unix.Close(w.sock)
				w.sock = -1
				w.release()
				return nil, err
			}
		}
	}
	return w, nil
}

// mountAhead sends w the mounts to make while it waits, and waits,
// bounded by serverTimeout (awaitReady), for it to have made them.
func (w *warmLauncher) mountAhead(msg []byte) error {
	if err := unix.Sendmsg(w.sock, msg, nil, nil, unix.MSG_NOSIGNAL); err != nil {
		return fmt.Errorf("a warm launcher did not take the mounts to make ahead: %w", err)
	}
	buf := make([]byte, len(spec.WarmPremounted)+1)
	var n int
	var err error
	for {
		n, _, _, _, err = unix.Recvmsg(w.sock, buf, nil, 0)
		if !errors.Is(err, unix.EINTR) {
			break
		}
	}
	if err != nil {
		return fmt.Errorf("a warm launcher did not make the mounts asked of it ahead (its errors are on toolhost's stderr): %w", err)
	}
	if string(buf[:n]) != spec.WarmPremounted {
		return fmt.Errorf("a warm launcher answered %q to the mounts asked of it ahead, not %q", buf[:n], spec.WarmPremounted)
	}
	return nil
}

// close stops the refills, ends the waiting launchers and the server.
func (p *warmPool) close() {
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		return
	}
	p.closed = true
	close(p.done)
	srv := p.server
	// Calls still running fail: their commands end with the host.
	for w := range p.running {
		w.kill()
	}
	p.mu.Unlock()
	if srv != nil {
		// Unblocks a refill waiting for the server's answer.
		srv.close()
	}
	p.wg.Wait()
	var idle []*warmLauncher
	for _, s := range p.ready {
		for len(s.ch) > 0 {
			idle = append(idle, <-s.ch)
		}
	}
	// All are killed first, then each waited for: their cgroups are gone
	// when close returns.
	for _, w := range idle {
		w.kill()
	}
	for _, w := range idle {
		unix.Close(w.sock)
		w.sock = -1
		w.release()
	}
}

// status describes the pool for sandbox doctor.
func (p *warmPool) status() poolStatus {
	p.mu.Lock()
	defer p.mu.Unlock()
	st := poolStatus{Enabled: p.enabled && !p.closed}
	if p.server != nil && !p.server.dead() {
		st.ServerPid = p.server.pid
	}
	for newNet, s := range p.ready {
		n := len(s.ch)
		if newNet {
			st.WaitingNewNetwork += n
		} else {
			st.WaitingHostNetwork += n
		}
		if err := s.failing.Load(); err != nil {
			st.Error = (*err).Error()
		}
	}
	return st
}

// launcherServer is the running launcher server.
type launcherServer struct {
	pid    int
	mu     sync.Mutex // one request at a time
	sock   int
	closed atomic.Bool
	exited chan struct{}
}

// startServer starts the launcher server from a goroutine locked to its
// OS thread, which then waits for it: the server's parent-death signal
// follows that thread, so it dies with toolhost even when toolhost is
// killed.
func startServer(exe string) (*launcherServer, error) {
	pair, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_SEQPACKET|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return nil, fmt.Errorf("the launcher server's socket: %w", err)
	}
	child := os.NewFile(uintptr(pair[1]), "launchers")
	defer child.Close()
	tv := unix.NsecToTimeval(serverTimeout.Nanoseconds())
	if err := unix.SetsockoptTimeval(pair[0], unix.SOL_SOCKET, unix.SO_RCVTIMEO, &tv); err != nil {
		unix.Close(pair[0])
		return nil, fmt.Errorf("the launcher server's socket: %w", err)
	}
	cmd := exec.Command(exe, spec.LaunchersArg)
	cmd.Env = []string{}
	cmd.Dir = "/"
	cmd.Stderr = os.Stderr
	cmd.ExtraFiles = []*os.File{child}
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL, Setsid: true}
	s := &launcherServer{sock: pair[0], exited: make(chan struct{})}
	started := make(chan error, 1)
	go func() {
		runtime.LockOSThread()
		defer runtime.UnlockOSThread()
		err := cmd.Start()
		started <- err
		if err == nil {
			cmd.Wait()
			close(s.exited)
		}
	}()
	if err := <-started; err != nil {
		unix.Close(pair[0])
		return nil, fmt.Errorf("start the launcher server %s: %w", exe, err)
	}
	s.pid = cmd.Process.Pid
	return s, nil
}

func (s *launcherServer) dead() bool {
	select {
	case <-s.exited:
		return true
	default:
		return s.closed.Load()
	}
}

// launcher asks the server for one warm launcher, cloned into the cgroup
// v2 directory cgroup unless it is nil.
func (s *launcherServer) launcher(newNet bool, cgroup *os.File) (*warmLauncher, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed.Load() {
		return nil, errors.New("the launcher server is closed")
	}
	req, _ := json.Marshal(spec.LaunchersRequest{NewNetwork: newNet, Cgroup: cgroup != nil, Fingerprint: spec.Fingerprint(), Revision: spec.Revision()})
	var rights []byte
	if cgroup != nil {
		rights = unix.UnixRights(int(cgroup.Fd()))
	}
	err := unix.Sendmsg(s.sock, req, rights, nil, unix.MSG_NOSIGNAL)
	runtime.KeepAlive(cgroup)
	if err != nil {
		s.shutdown()
		return nil, fmt.Errorf("ask the launcher server for a launcher: %w", err)
	}
	buf := make([]byte, 4096)
	oob := make([]byte, unix.CmsgSpace(4*2))
	var n, oobn, flags int
	for {
		n, oobn, flags, _, err = unix.Recvmsg(s.sock, buf, oob, unix.MSG_CMSG_CLOEXEC)
		if !errors.Is(err, unix.EINTR) {
			break
		}
	}
	if err != nil || n == 0 {
		// A server that does not answer in time is not trusted with the
		// next request either.
		s.shutdown()
		if err == nil {
			err = errors.New("it exited")
		}
		return nil, fmt.Errorf("the launcher server's answer: %w", err)
	}
	fds, ferr := socketRights(oob[:oobn])
	var reply spec.LaunchersReply
	if err := json.Unmarshal(buf[:n], &reply); err != nil || ferr != nil || flags&(unix.MSG_TRUNC|unix.MSG_CTRUNC) != 0 {
		closeFDs(fds)
		s.shutdown()
		return nil, fmt.Errorf("the launcher server's answer %q is not one it sends: %v", buf[:n], errors.Join(err, ferr))
	}
	if reply.Error != "" {
		closeFDs(fds)
		return nil, fmt.Errorf("the launcher server: %s", reply.Error)
	}
	if len(fds) != 2 || reply.Pid <= 0 {
		closeFDs(fds)
		s.shutdown()
		return nil, fmt.Errorf("the launcher server answered pid %d with %d descriptors, want a pid and 2", reply.Pid, len(fds))
	}
	w := &warmLauncher{pid: reply.Pid, sock: fds[0], pidfd: fds[1], newNet: newNet, mntns: -1, ended: make(chan struct{})}
	if err := w.awaitReady(); err != nil {
		w.discard()
		return nil, err
	}
	return w, nil
}

// shutdown makes the server exit: it reads the end of its socket.
func (s *launcherServer) shutdown() {
	if s.closed.CompareAndSwap(false, true) {
		unix.Shutdown(s.sock, unix.SHUT_RDWR)
	}
}

// close shuts the server down and releases the socket once no request
// uses it.
func (s *launcherServer) close() {
	s.shutdown()
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.sock >= 0 {
		unix.Close(s.sock)
		s.sock = -1
	}
}

// warmLauncher is one launcher waiting for its command.
type warmLauncher struct {
	pid    int
	newNet bool
	sock   int
	// cgroupDir is the v2 cgroup it was cloned into, "" without one;
	// adopted once the command's Cgroup took it over, and removed with
	// the launcher otherwise.
	cgroupDir string
	adopted   bool
	// cgroup is cgroupDir with cgroupLimits set (presetCgroup), nil
	// without.
	cgroup       *Cgroup
	cgroupLimits Limits

	// ended is closed once the launcher has exited or was discarded.
	ended     chan struct{}
	endedOnce sync.Once

	mu     sync.Mutex
	pidfd  int           // -1 once the launcher has exited
	exited chan struct{} // made by send
	// mntns is the launcher's mount namespace (-1 without), closed once
	// the launcher has exited: the close tears the command's mounts
	// down, off the call's path.
	mntns int
	// tmp is the tmp made for its command, mounted ahead (mountAhead),
	// until the command's call takes it (takeTmp); removed with the
	// launcher otherwise.
	tmp string
}

// takeTmp hands the tmp made for w's command to its call, which removes
// it; "" for none.
func (w *warmLauncher) takeTmp() string {
	if w == nil {
		return ""
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	tmp := w.tmp
	w.tmp = ""
	return tmp
}

// awaitReady waits, bounded by serverTimeout, for the launcher to say it
// is past its start-up, and takes the mount namespace it hands over.
func (w *warmLauncher) awaitReady() error {
	tv := unix.NsecToTimeval(serverTimeout.Nanoseconds())
	if err := unix.SetsockoptTimeval(w.sock, unix.SOL_SOCKET, unix.SO_RCVTIMEO, &tv); err != nil {
		return fmt.Errorf("a warm launcher's socket: %w", err)
	}
	buf := make([]byte, len(spec.WarmReady)+1)
	oob := make([]byte, unix.CmsgSpace(4))
	var n, oobn, flags int
	var err error
	for {
		n, oobn, flags, _, err = unix.Recvmsg(w.sock, buf, oob, unix.MSG_CMSG_CLOEXEC)
		if !errors.Is(err, unix.EINTR) {
			break
		}
	}
	if err != nil || n == 0 {
		return fmt.Errorf("a warm launcher did not start (its errors are on toolhost's stderr): %v", err)
	}
	fds, ferr := socketRights(oob[:oobn])
	if ferr != nil || string(buf[:n]) != spec.WarmReady || len(fds) > 1 || flags&(unix.MSG_TRUNC|unix.MSG_CTRUNC) != 0 {
		closeFDs(fds)
		return fmt.Errorf("a warm launcher sent %q with %d descriptors, not %q", buf[:n], len(fds), spec.WarmReady)
	}
	if len(fds) == 1 {
		w.mntns = fds[0]
	}
	return nil
}

// errNotTaken is send's error when the launcher ended without taking
// the command: it never ran it, so the command may take the cold path.
var errNotTaken = errors.New("the launcher ended without taking the command")

// send hands the launcher its command and descriptors, and starts
// watching for its exit. errNotTaken means the launcher did not take
// them (it died waiting): the command takes the cold path. Any other
// error means it may have taken them and was killed: the command must
// not run a second time.
func (w *warmLauncher) send(ctx context.Context, msg []byte, files []*os.File) (<-chan struct{}, error) {
	// A launcher killed while waiting may still hold its socket for a
	// moment: the send would succeed and the command fail.
	if !w.alive() {
		w.discard()
		return nil, errNotTaken
	}
	fds := make([]int, len(files))
	for i, f := range files {
		fds[i] = int(f.Fd())
	}
	err := unix.Sendmsg(w.sock, msg, unix.UnixRights(fds...), nil, unix.MSG_NOSIGNAL)
	runtime.KeepAlive(files)
	if err != nil {
		// Nothing was delivered.
		err = fmt.Errorf("%w: %w", errNotTaken, err)
	} else {
		err = w.awaitTaken(ctx)
	}
	unix.Close(w.sock)
	w.sock = -1
	if err != nil {
		w.discard()
		return nil, err
	}
	w.exited = make(chan struct{})
	go w.watch()
	return w.exited, nil
}

// awaitTaken waits for the launcher's answer that it holds the command,
// or for its end, bounded by startTimeout as a cold launcher's start is,
// and by ctx. It returns nil once the launcher has taken the command,
// and errNotTaken when it ended without: it answers "taken" before it
// runs anything, and what it sent stays readable after its end. A
// launcher that does neither in time is killed; once it has exited
// without an answer it never took the command (errNotTaken: the cold
// path runs it), and otherwise the error says that it may have started,
// so that the command is not run twice. A call given up on (ctx) starts
// no cold launcher.
func (w *warmLauncher) awaitTaken(ctx context.Context) error {
	deadline := time.Now().Add(startTimeout)
	if d, ok := ctx.Deadline(); ok && d.Before(deadline) {
		deadline = d
	}
	// A cancel wakes the poll through an eventfd.
	wake, err := unix.Eventfd(0, unix.EFD_CLOEXEC|unix.EFD_NONBLOCK)
	if err != nil {
		return fmt.Errorf("%w: %w", errNotTaken, err)
	}
	woken := make(chan struct{})
	stop := context.AfterFunc(ctx, func() {
		unix.Write(wake, []byte{1, 0, 0, 0, 0, 0, 0, 0})
		close(woken)
	})
	defer func() {
		// A cancel that came as this returned may still be writing:
		// closed first, wake's number could be another file's by then,
		// and the write would land in it.
		if !stop() {
			<-woken
		}
		unix.Close(wake)
	}()
	fds := []unix.PollFd{{Fd: int32(w.sock), Events: unix.POLLIN}, {Fd: int32(w.pidfd), Events: unix.POLLIN}, {Fd: int32(wake), Events: unix.POLLIN}}
	for {
		left := time.Until(deadline)
		if left <= 0 || ctx.Err() != nil {
			break
		}
		n, err := unix.Poll(fds, int(left.Milliseconds())+1)
		if errors.Is(err, unix.EINTR) {
			continue
		}
		if err != nil {
			break
		}
		if n == 0 || fds[0].Revents|fds[1].Revents == 0 {
			continue
		}
		if fds[0].Revents == 0 {
			// It exited; an answer it sent first is still there.
			w.waitExit()
		}
		buf := make([]byte, len(spec.WarmTaken)+1)
		n, _, err = unix.Recvfrom(w.sock, buf, unix.MSG_DONTWAIT)
		if err == nil && string(buf[:n]) == spec.WarmTaken {
			return nil
		}
		// It closed its end, or said something else: either way it ends
		// without having run anything.
		w.kill()
		w.waitExit()
		return fmt.Errorf("%w (%q, %v)", errNotTaken, buf[:max(n, 0)], err)
	}
	// Killed, a launcher that has exited without answering never took
	// the command: an answer sent before its end stays readable.
	w.kill()
	late := !w.waitExit()
	if !late {
		buf := make([]byte, len(spec.WarmTaken)+1)
		n, _, _ := unix.Recvfrom(w.sock, buf, unix.MSG_DONTWAIT)
		late = n > 0 && string(buf[:n]) == spec.WarmTaken
	}
	switch {
	case late:
		return fmt.Errorf("its launcher did not answer in time and was killed; the command may have started before it was")
	case ctx.Err() != nil:
		// Not errNotTaken: a call given up on starts no cold launcher.
		return fmt.Errorf("the call ended while its launcher was slow to answer: %w", context.Cause(ctx))
	}
	return fmt.Errorf("%w: it neither took the command nor ended within %v, and was killed", errNotTaken, startTimeout)
}

// waitExit waits, bounded by discardWait, for the launcher's exit, and
// reports whether it has exited.
func (w *warmLauncher) waitExit() bool {
	fds := []unix.PollFd{{Fd: int32(w.pidfd), Events: unix.POLLIN}}
	deadline := time.Now().Add(discardWait)
	for time.Now().Before(deadline) {
		n, err := unix.Poll(fds, int(time.Until(deadline).Milliseconds())+1)
		if n > 0 {
			return true
		}
		if err != nil && !errors.Is(err, unix.EINTR) {
			return false
		}
	}
	return false
}

// alive reports whether the launcher has not exited.
func (w *warmLauncher) alive() bool {
	if w.pidfd < 0 {
		return false
	}
	fds := []unix.PollFd{{Fd: int32(w.pidfd), Events: unix.POLLIN}}
	n, err := unix.Poll(fds, 0)
	return err == nil && n == 0
}

// watch waits for the launcher's exit on its pidfd, which no other
// process can take over as a reused pid could.
func (w *warmLauncher) watch() {
	fds := []unix.PollFd{{Fd: int32(w.pidfd), Events: unix.POLLIN}}
	for {
		_, err := unix.Poll(fds, -1)
		if err == nil || !errors.Is(err, unix.EINTR) {
			break
		}
	}
	w.mu.Lock()
	unix.Close(w.pidfd)
	w.pidfd = -1
	w.mu.Unlock()
	w.removeCgroup()
	close(w.exited)
	w.closeMountNamespace()
	w.end()
}

func (w *warmLauncher) closeMountNamespace() {
	if w.mntns >= 0 {
		unix.Close(w.mntns)
		w.mntns = -1
	}
}

// removeCgroup removes the launcher's cgroup once it has exited, unless
// the command's Cgroup took it over.
func (w *warmLauncher) removeCgroup() {
	if w.cgroupDir != "" && !w.adopted {
		if w.cgroup != nil {
			// Its v1 directories, which the launcher never entered.
			w.cgroup.removeDirs()
		}
		// The launcher has exited, but the kernel may hold its cgroup
		// busy a moment longer, until it is reaped. removeCgroup then
		// takes toolhost's own directory too, once nothing else is in
		// it, as Cgroup.Close does: a directory another command is
		// being made in is made again (makeCgroup).
		removeCgroup(w.cgroupDir, time.Now().Add(discardWait))
	}
}

// kill kills the launcher, and with it everything in its namespaces.
func (w *warmLauncher) kill() {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.pidfd >= 0 {
		unix.PidfdSendSignal(w.pidfd, unix.SIGKILL, nil, 0)
	}
}

// discard ends a launcher that runs no command, and then removes its
// cgroup, from a goroutine: the cgroup empties once it has exited.
func (w *warmLauncher) discard() {
	if w == nil {
		return
	}
	w.kill()
	if w.sock >= 0 {
		unix.Close(w.sock)
		w.sock = -1
	}
	if w.exited != nil {
		return // watch releases the rest
	}
	go w.release()
}

// release waits, bounded, for a killed launcher that ran no command to
// exit, and removes its cgroup, which empties then.
func (w *warmLauncher) release() {
	fds := []unix.PollFd{{Fd: int32(w.pidfd), Events: unix.POLLIN}}
	unix.Poll(fds, int(discardWait.Milliseconds()))
	w.mu.Lock()
	unix.Close(w.pidfd)
	w.pidfd = -1
	w.mu.Unlock()
	w.removeCgroup()
	w.closeMountNamespace()
	// After the mount namespace, which held it as a mount point.
	if tmp := w.takeTmp(); tmp != "" {
		os.RemoveAll(tmp)
	}
	w.end()
}

// end tells the pool, once, that the command that took w has ended.
func (w *warmLauncher) end() {
	w.endedOnce.Do(func() { close(w.ended) })
}

// socketRights returns the descriptors in a message's control data.
func socketRights(oob []byte) ([]int, error) {
	msgs, err := unix.ParseSocketControlMessage(oob)
	if err != nil {
		return nil, err
	}
	var fds []int
	for _, m := range msgs {
		if m.Header.Level != unix.SOL_SOCKET || m.Header.Type != unix.SCM_RIGHTS {
			continue
		}
		got, err := unix.ParseUnixRights(&m)
		if err != nil {
			return fds, err
		}
		fds = append(fds, got...)
	}
	return fds, nil
}

func closeFDs(fds []int) {
	for _, fd := range fds {
		unix.Close(fd)
	}
}

// v2Cgroup is the v2 cgroup w was cloned into, "" for none or a nil w.
func (w *warmLauncher) v2Cgroup() string {
	if w == nil {
		return ""
	}
	return w.cgroupDir
}

// presetFor returns w's cgroup when its limits are l: the command's
// Cgroup then takes it as it is. nil otherwise, or for a nil w.
func (w *warmLauncher) presetFor(l Limits) *Cgroup {
	if w == nil || w.cgroup == nil || w.cgroupLimits != l {
		return nil
	}
	return w.cgroup
}

// dropPreset gives up w's preset cgroup for a command with other
// limits, whose Cgroup is then made in w's v2 directory, where w is: the
// preset's other directories are removed, and the v2 directory's limits
// lifted, so that only the command's apply.
func (w *warmLauncher) dropPreset() {
	if w == nil || w.cgroup == nil {
		return
	}
	for _, d := range w.cgroup.dirs {
		if !d.v2 {
			unix.Rmdir(d.path)
			continue
		}
		for _, f := range []string{"memory.max", "memory.swap.max", "pids.max"} {
			writeCgroupFile(filepath.Join(d.path, f), "max")
		}
	}
	w.cgroup = nil
}

// adopt records that the command's Cgroup took w's cgroup over: it
// removes it, not w.
func (w *warmLauncher) adopt() {
	if w != nil && w.cgroupDir != "" {
		w.adopted = true
	}
}

// DoctorLaunchers starts the launcher server of the toolhost binary exe
// and one warm launcher for network n, and writes a line saying how long
// that took, for sandbox doctor. An error means commands start the slower
// way, each in a launcher of its own; they still run confined.
func DoctorLaunchers(w io.Writer, exe, small string, n Network) error {
	p := newWarmPool(exe, slog.New(slog.DiscardHandler))
	if small != "" {
		p.exe = small
	}
	defer p.close()
	begin := time.Now()
	l, err := p.start(n != NetworkOn)
	if err != nil {
		fmt.Fprintf(w, "launchers: cannot start launchers ahead of need: %v; commands still run confined, each in a launcher started for it (some 25 ms more per command)\n", err)
		return err
	}
	took := time.Since(begin)
	server := p.status().ServerPid
	binary := p.exe
	l.discard()
	fmt.Fprintf(w, "launchers: a launcher server (pid %d, %s) starts launchers ahead of need, each in its namespaces and cgroup, so a command skips the launcher's start-up; the first was ready in %s\n", server, binary, took.Round(100*time.Microsecond))
	return nil
}

// owner is the uid owning the file fi describes.
func owner(fi os.FileInfo) uint32 {
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		return st.Uid
	}
	return ^uint32(0)
}
