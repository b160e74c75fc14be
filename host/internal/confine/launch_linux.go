package confine

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/toolhost/toolhost/host/internal/confine/spec"
)

// exitWait bounds how long Exit waits for the launcher's last status line
// once the launcher has exited: its pipe reaches end of file at once then.
const exitWait = 2 * time.Second

// Launch follows one confined command: it implements proc.Launcher.
//
// Its methods are called in order from one goroutine: Prepare before the
// launcher starts, Started once it runs, Exit once it has exited, Close
// at the end (also when Prepare or the start failed).
type Launch struct {
	policy   *Policy
	launcher string
	cg       *Cgroup

	command string
	msg     []byte // the spec.LaunchMsg, written by Started
	// The pipes: the launcher's ends (policyR, statusW) are closed once it
	// has started, ours once it is done with.
	policyR, policyW *os.File
	statusR, statusW *os.File
	// cgDir and cgTasks let the launcher enter cg (Cgroup.launchFiles);
	// closed once it has started.
	cgDir    *os.File
	cgTasks  []*os.File
	nCgTasks int

	applied Applied
	// warm is a launcher started ahead of need, taken by
	// Confiner.Prepare; Spawn hands it the command and keeps it as
	// spawned. Prepare makes the cold rewrite of cmd anyway, for when
	// the warm launcher died waiting.
	warm    *warmLauncher
	spawned *warmLauncher
	// last receives the launcher's last status line ("" if none) once
	// it reported how the shell ended, or the pipe reached end of file.
	last chan string
	// reported is closed once a warm launcher reported how the shell
	// ended: it has killed and reaped everything the shell left, and
	// closed the command's output, before its own exit, which takes most
	// of a millisecond and is not waited for.
	reported     chan struct{}
	reportedOnce sync.Once

	// mu guards spawned's write and pidfd, which follows a cold launcher
	// from Started until Close, for abort.
	mu    sync.Mutex
	pidfd int
}

// NewLaunch prepares to run p through launcher, the path of a toolhost
// binary; cg, if non-nil, receives the launcher before the shell starts.
func NewLaunch(p *Policy, launcher string, cg *Cgroup) *Launch {
	return &Launch{policy: p, launcher: launcher, cg: cg, pidfd: -1}
}

// Prepare rewrites cmd, an exec.Command("/bin/sh", "-c", command) not yet
// started, into the launcher's: the same Dir and output, in new
// namespaces, with the policy pipe as fd 3 and the status pipe as fd 4
// (spec.PolicyFD, spec.StatusFD: ExtraFiles start at 3), cloned into the
// cgroup's v2 directory and handed its v1 tasks files from fd 5 on
// (spec.CgroupFD). The launcher's own environment is empty; the shell gets
// Policy.Env.
func (l *Launch) Prepare(cmd *exec.Cmd) error {
	if len(cmd.Args) != 3 || cmd.Args[1] != "-c" {
		return fmt.Errorf("confine: cannot confine %q: want sh -c COMMAND", cmd.Args)
	}
	if len(cmd.ExtraFiles) != 0 {
		return errors.New("confine: cannot confine a command that is handed extra files")
	}
	if err := l.policy.Check(); err != nil {
		return fmt.Errorf("confine: the command did not run: %w", err)
	}
	if !filepath.IsAbs(l.launcher) {
		return fmt.Errorf("confine: the launcher %q is not an absolute path", l.launcher)
	}
	l.command = cmd.Args[2]
	var err error
	if l.policyR, l.policyW, err = os.Pipe(); err != nil {
		return fmt.Errorf("confine: policy pipe: %w", err)
	}
	if l.statusR, l.statusW, err = os.Pipe(); err != nil {
		l.Close()
		return fmt.Errorf("confine: status pipe: %w", err)
	}
	cmd.Path = l.launcher
	cmd.Args = []string{l.launcher, spec.LauncherArg}
	cmd.Err = nil
	cmd.Env = []string{}
	cmd.ExtraFiles = []*os.File{l.policyR, l.statusW}
	attr := cmd.SysProcAttr
	if attr == nil {
		attr = &syscall.SysProcAttr{}
		cmd.SysProcAttr = attr
	}
	if l.cg != nil {
		if l.cgDir, l.cgTasks, err = l.cg.launchFiles(); err != nil {
			l.Close()
			return fmt.Errorf("confine: the command did not run: %w", err)
		}
		if l.cgDir != nil {
			attr.UseCgroupFD = true
			attr.CgroupFD = int(l.cgDir.Fd())
		}
		cmd.ExtraFiles = append(cmd.ExtraFiles, l.cgTasks...)
		l.nCgTasks = len(l.cgTasks)
	}
	attr.Cloneflags |= syscall.CLONE_NEWUSER | syscall.CLONE_NEWNS | syscall.CLONE_NEWPID | syscall.CLONE_NEWIPC | syscall.CLONE_NEWUTS
	if l.policy.Network != NetworkOn {
		attr.Cloneflags |= syscall.CLONE_NEWNET
	}
	attr.UidMappings = []syscall.SysProcIDMap{{ContainerID: os.Getuid(), HostID: os.Getuid(), Size: 1}}
	attr.GidMappings = []syscall.SysProcIDMap{{ContainerID: os.Getgid(), HostID: os.Getgid(), Size: 1}}
	attr.GidMappingsEnableSetgroups = false
	attr.Pdeathsig = syscall.SIGKILL
	if l.msg, err = l.launchMsg(); err != nil {
		l.Close()
		return err
	}
	return nil
}

// Spawn hands the command to the warm launcher Prepare took, if any
// (proc.Spawner): it receives the command's output pipes, the status
// pipe and the cgroup's descriptors over its socket. A zero pid means
// there was none, or it died without taking the command, and the caller
// starts cmd, the cold launcher. An error means the launcher was killed
// for not answering, perhaps after it took the command: it is not run
// again.
func (l *Launch) Spawn(ctx context.Context, cmd *exec.Cmd) (int, <-chan struct{}, error) {
	w := l.warm
	l.warm = nil
	if w == nil {
		return 0, nil, nil
	}
	out, ok1 := cmd.Stdout.(*os.File)
	errOut, ok2 := cmd.Stderr.(*os.File)
	msg, err := json.Marshal(spec.WarmMsg{LaunchMsg: spec.LaunchMsg{Policy: *l.policy, Command: l.command, CgroupTasks: l.nCgTasks}})
	// A v2 cgroup must be the one the launcher was cloned into.
	inCgroup := l.cgDir == nil || w.adopted
	if !ok1 || !ok2 || err != nil || len(msg) > spec.MaxWarmMsg || l.statusW == nil || !inCgroup {
		w.discard()
		l.emptyTmp()
		return 0, nil, nil
	}
	files := append([]*os.File{out, errOut, l.statusW}, l.cgTasks...)
	exited, err := w.send(ctx, msg, files)
	if errors.Is(err, errNotTaken) {
		l.emptyTmp()
		return 0, nil, nil
	}
	if err != nil {
		return 0, nil, fmt.Errorf("confine: %w", err)
	}
	l.mu.Lock()
	l.spawned = w
	l.mu.Unlock()
	l.reported = make(chan struct{})
	ended := make(chan struct{})
	go func() {
		select {
		case <-exited:
		case <-l.reported:
		}
		close(ended)
	}()
	return w.pid, ended, nil
}

// emptyTmp empties the command's tmp for the cold path, when the warm
// launcher it was made for never ran the command: what is in it is that
// launcher's, the mount points it made ahead (roots under /tmp), which
// would show the command another call's root names.
func (l *Launch) emptyTmp() {
	tmp := tmpOf(l.policy)
	if tmp == "" {
		return
	}
	entries, _ := os.ReadDir(tmp)
	for _, e := range entries {
		// RemoveAll follows no symlink out of the tmp.
		os.RemoveAll(filepath.Join(tmp, e.Name()))
	}
}

// Exiting returns, for a command whose warm launcher reported its end,
// a channel closed once the launcher has exited too; nil otherwise.
func (l *Launch) Exiting() <-chan struct{} {
	if l.spawned == nil || l.reported == nil {
		return nil
	}
	select {
	case <-l.reported:
		return l.spawned.exited
	default:
		return nil
	}
}

// Released returns, for a command whose warm launcher reported its end,
// a channel closed once the launcher has exited and its mount namespace,
// with the command's mounts, is let go; nil otherwise.
func (l *Launch) Released() <-chan struct{} {
	if l.Exiting() == nil {
		return nil
	}
	return l.spawned.ended
}

// Kill kills the warm launcher Spawn handed the command, and so the
// command: everything it started is in the launcher's PID namespace.
func (l *Launch) Kill() {
	if l.spawned != nil {
		l.spawned.kill()
	}
}

// Prestarted reports whether the command ran in a launcher started
// ahead of need.
func (l *Launch) Prestarted() bool { return l.spawned != nil }

// launchMsg is what Started hands the launcher, refused before the
// launcher starts when the launcher would refuse it.
func (l *Launch) launchMsg() ([]byte, error) {
	msg, err := json.Marshal(spec.LaunchMsg{Policy: *l.policy, Command: l.command, CgroupTasks: l.nCgTasks})
	if err != nil {
		return nil, fmt.Errorf("confine: the command did not run: %w", err)
	}
	if len(msg) > spec.MaxLaunchMsg {
		return nil, fmt.Errorf("confine: the command did not run: its policy and command take %d bytes, more than the launcher reads (%d); the policy lists %d mounts: remove the repositories nested in the roots that are not needed (each is mounted to keep its .git in place), or shorten the command",
			len(msg), spec.MaxLaunchMsg, len(l.policy.Mounts))
	}
	return msg, nil
}

// Started finishes the setup once the launcher runs as pid (in the
// cgroup already, or entering it before the shell starts): it hands it
// the policy, which lets it go on, and waits,
// bounded by ctx and startTimeoutFor the policy's mounts, until it reports that the command runs
// confined. An error means the command did not run (the launcher exits
// without starting it), and says why.
func (l *Launch) Started(ctx context.Context, pid int) error {
	if l.policyW == nil {
		return errors.New("confine: Started without Prepare")
	}
	l.policyR.Close()
	l.statusW.Close()
	l.policyR, l.statusW = nil, nil
	l.closeCgroupFiles()
	if l.spawned == nil {
		// The launcher is toolhost's child, not reaped until proc has
		// seen its end, so pid still names it.
		if fd, err := unix.PidfdOpen(pid, 0); err == nil {
			l.mu.Lock()
			l.pidfd = fd
			l.mu.Unlock()
		}
	}
	timeout := startTimeoutFor(len(l.policy.Mounts))
	deadline := time.Now().Add(timeout)
	l.policyW.SetWriteDeadline(deadline)
	l.statusR.SetReadDeadline(deadline)
	// The pipes as they are now: Started clears l.policyW while the
	// call's end may still be running this.
	policyW, statusR := l.policyW, l.statusR
	fired := make(chan struct{})
	stop := context.AfterFunc(ctx, func() {
		policyW.SetWriteDeadline(time.Now())
		statusR.SetReadDeadline(time.Now())
		close(fired)
	})
	defer stop()
	var werr error
	if l.spawned == nil {
		_, werr = l.policyW.Write(l.msg)
	}
	l.policyW.Close()
	l.policyW = nil
	// A failed write still reads the status: the launcher's own message
	// says more than a broken pipe.
	r := bufio.NewReader(l.statusR)
	line, err := r.ReadString('\n')
	switch {
	case strings.HasPrefix(line, spec.StatusConfined) && err == nil:
	case strings.HasPrefix(line, spec.StatusError):
		return fmt.Errorf("confine: the command did not run: %s", strings.TrimSpace(strings.TrimPrefix(line, spec.StatusError)))
	case ctx.Err() != nil:
		return fmt.Errorf("confine: the command did not run: %w", ctx.Err())
	case errors.Is(err, os.ErrDeadlineExceeded):
		return fmt.Errorf("confine: the command did not run: its launcher did not confine it within %v (%d mounts)", timeout, len(l.policy.Mounts))
	case werr != nil:
		return fmt.Errorf("confine: the command did not run: hand the policy to its launcher: %w", werr)
	default:
		return fmt.Errorf("confine: the command did not run: its launcher %s exited before confining it (its output, if any, is on the command's stderr)", l.launcher)
	}
	var a Applied
	if err := json.Unmarshal([]byte(strings.TrimPrefix(line, spec.StatusConfined)), &a); err != nil {
		return fmt.Errorf("confine: the command did not run: the launcher's report %q: %w", line, err)
	}
	if l.cg != nil {
		a.Cgroup = l.cg.Controllers()
	}
	l.applied = a
	// The command runs: the status pipe is read to its end from now on,
	// and a call ending just now must not set its deadline back after
	// it was cleared (proc ends the command for such a call).
	if !stop() {
		<-fired
	}
	l.statusR.SetReadDeadline(time.Time{})
	l.last = make(chan string, 1)
	go l.readLast(r)
	return nil
}

// readLast reads the status pipe to its end and sends its last line
// to l.last: at once when it reports how the shell ended, which a
// launcher writes last, only after the shell's processes are gone.
func (l *Launch) readLast(r *bufio.Reader) {
	var s string
	sent := false
	for {
		line, err := r.ReadString('\n')
		if line = strings.TrimSpace(line); line != "" && !sent {
			s = line
			if err == nil && (strings.HasPrefix(line, spec.StatusExit) || strings.HasPrefix(line, spec.StatusSignal)) {
				l.last <- s
				sent = true
				if l.reported != nil {
					l.reportedOnce.Do(func() { close(l.reported) })
				}
			}
		}
		if err != nil {
			if !sent {
				l.last <- s
			}
			return
		}
	}
}

// Exit maps the launcher's exit status to the shell's: the launcher
// reports how the shell ended before it exits with 128+n for a signal n,
// so a command killed by a signal is reported as that signal. Without the
// report (the launcher itself was killed) the status is the launcher's.
func (l *Launch) Exit(code int, signal string) (int, string) {
	if l.last == nil {
		return code, signal
	}
	var line string
	select {
	case line = <-l.last:
		l.last <- line // a second Exit sees it too
	case <-time.After(exitWait):
		return code, signal
	}
	if v, ok := strings.CutPrefix(line, spec.StatusExit); ok {
		if n, err := strconv.Atoi(v); err == nil {
			return n, ""
		}
	}
	if v, ok := strings.CutPrefix(line, spec.StatusSignal); ok {
		if n, err := strconv.Atoi(v); err == nil {
			return -1, syscall.Signal(n).String()
		}
	}
	return code, signal
}

// abort kills the launcher, warm or cold, and so the command: the host
// is closing.
func (l *Launch) abort() {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.spawned != nil {
		l.spawned.kill()
		return
	}
	if l.pidfd >= 0 {
		unix.PidfdSendSignal(l.pidfd, unix.SIGKILL, nil, 0)
	}
}

// Close releases what the launch holds, once its processes are gone: the
// pipes, and the cgroup, which kills anything left in it.
func (l *Launch) Close() {
	l.mu.Lock()
	if l.pidfd >= 0 {
		unix.Close(l.pidfd)
		l.pidfd = -1
	}
	l.mu.Unlock()
	for _, f := range []**os.File{&l.policyR, &l.policyW, &l.statusR, &l.statusW} {
		if *f != nil {
			(*f).Close()
			*f = nil
		}
	}
	// The cgroup is the Run's, which closes it once the call is over.
	l.closeCgroupFiles()
	if l.warm != nil {
		l.warm.discard()
		l.warm = nil
	}
}

func (l *Launch) closeCgroupFiles() {
	if l.cgDir != nil {
		l.cgDir.Close()
		l.cgDir = nil
	}
	for _, f := range l.cgTasks {
		f.Close()
	}
	l.cgTasks = nil
}

// Applied is the confinement the command ran under, known once Started
// returned nil.
func (l *Launch) Applied() Applied { return l.applied }
