package launcher

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"runtime"
	"strings"
	"syscall"

	"golang.org/x/sys/unix"

	"github.com/toolhost/toolhost/host/internal/confine/spec"
)

// forwarded are the signals the launcher passes on to the shell.
var forwarded = []os.Signal{syscall.SIGTERM, syscall.SIGINT, syscall.SIGHUP, syscall.SIGQUIT, syscall.SIGUSR1, syscall.SIGUSR2}

// Main is the launcher: it runs when the toolhost binary is started with
// spec.LauncherArg, and returns the exit status: the shell's, 128+n when
// the shell was killed by signal n, or 125 when the command did not run,
// after saying why on the status pipe.
//
// It is started by confine.Launch in new namespaces and stays the init of
// the PID namespace: it confines itself, starts sh -c, forwards signals
// to it, reaps every orphan, and returns when the shell exits. Its death
// makes the kernel kill everything else in the namespace.
func Main(args []string) int {
	// Namespaces, limits, no_new_privs, capabilities and (where the kernel
	// does it per thread) Landlock belong to a thread, and the shell
	// inherits those of the thread that forks it: all of it happens on
	// this one.
	runtime.LockOSThread()
	if _, err := unix.FcntlInt(spec.StatusFD, unix.F_GETFD, 0); err != nil {
		fmt.Fprintln(os.Stderr, "toolhost: the confined launcher is started by toolhost itself, not by hand")
		return spec.ExitLaunchFailed
	}
	status := os.NewFile(spec.StatusFD, "status")
	unix.CloseOnExec(spec.PolicyFD)
	unix.CloseOnExec(spec.StatusFD)
	// toolhost's exec hands on every descriptor it holds without
	// close-on-exec, its own parent's included (a file outside the root,
	// opened read-write): none may reach the shell. Marked rather than
	// closed, since the runtime may own some by now.
	if err := unix.CloseRange(spec.StatusFD+1, ^uint(0), unix.CLOSE_RANGE_CLOEXEC); err != nil {
		fmt.Fprintf(status, "%scannot mark inherited descriptors close-on-exec: %v\n", spec.StatusError, err)
		return spec.ExitLaunchFailed
	}
	sigs, children, err := guard()
	if err != nil {
		fmt.Fprintf(status, "%s%v\n", spec.StatusError, err)
		return spec.ExitLaunchFailed
	}
	if err := checkArgs(args, spec.LauncherArg); err != nil {
		fmt.Fprintf(status, "%s%v\n", spec.StatusError, err)
		return spec.ExitLaunchFailed
	}
	msg, err := readLaunchMsg()
	if err != nil {
		fmt.Fprintf(status, "%s%s\n", spec.StatusError, oneLine(err.Error()))
		return spec.ExitLaunchFailed
	}
	tasks := make([]int, 0, spec.MaxCgroupTasks)
	if msg.CgroupTasks < 0 || msg.CgroupTasks > spec.MaxCgroupTasks {
		fmt.Fprintf(status, "%sthe launcher was handed %d cgroup files, want at most %d\n", spec.StatusError, msg.CgroupTasks, spec.MaxCgroupTasks)
		return spec.ExitLaunchFailed
	}
	for fd := spec.CgroupFD; fd < spec.CgroupFD+msg.CgroupTasks; fd++ {
		tasks = append(tasks, fd)
	}
	return run(status, msg, tasks, nil, sigs, children)
}

// checkArgs refuses arguments other than [binary, arg]: the launcher
// takes everything else from the host, over its descriptors.
func checkArgs(args []string, arg string) error {
	if len(args) != 2 || args[1] != arg {
		return fmt.Errorf("the launcher is started as %q with no further arguments, got %q", arg, args)
	}
	return nil
}

// guard makes the launcher undumpable and asks for the signals it
// forwards and for its children's ends, before any shell exists, so
// none is missed.
func guard() (sigs, children chan os.Signal, err error) {
	// The shell runs as the same user: without this it could open the
	// launcher's descriptors through /proc/1/fd.
	if err := unix.Prctl(unix.PR_SET_DUMPABLE, 0, 0, 0, 0); err != nil {
		return nil, nil, fmt.Errorf("cannot make the launcher undumpable: %w", err)
	}
	sigs = make(chan os.Signal, 8)
	signal.Notify(sigs, forwarded...)
	children = make(chan os.Signal, 1)
	signal.Notify(children, syscall.SIGCHLD)
	return sigs, children, nil
}

// run confines the launcher as msg says, starts the shell, reports on
// status and supervises the shell until it exits; it returns the
// launcher's exit status.
func run(status *os.File, msg *spec.LaunchMsg, cgroupTasks []int, pre *ahead, sigs, children <-chan os.Signal) int {
	shell, applied, err := launch(msg, cgroupTasks, pre)
	if err != nil {
		fmt.Fprintf(status, "%s%s\n", spec.StatusError, oneLine(err.Error()))
		return spec.ExitLaunchFailed
	}
	b, _ := json.Marshal(applied)
	if _, err := fmt.Fprintf(status, "%s%s\n", spec.StatusConfined, b); err != nil {
		// The host no longer waits for this command: it must not run.
		unix.Kill(shell, unix.SIGKILL)
		return spec.ExitLaunchFailed
	}
	code, sig := supervise(shell, sigs, children)
	// What the shell left dies with the launcher, PID 1 of its namespace,
	// anyway. Killed and reaped here, with the command's output closed,
	// the end is reported before the launcher's own exit, which takes
	// most of a millisecond (its threads, its namespaces) the host need
	// not wait: the report is the last thing the launcher writes.
	endAll()
	unix.Close(1)
	unix.Close(2)
	if sig != 0 {
		fmt.Fprintf(status, "%s%d\n", spec.StatusSignal, sig)
		return 128 + int(sig)
	}
	fmt.Fprintf(status, "%s%d\n", spec.StatusExit, code)
	return code
}

// launch confines the launcher as msg's policy says, in the cgroups of
// the v1 tasks files cgroupTasks, and starts the shell; it returns the
// shell's pid. pre, when not nil, is what a warm launcher did ahead.
func launch(msg *spec.LaunchMsg, cgroupTasks []int, pre *ahead) (int, spec.Applied, error) {
	p := &msg.Policy
	if err := p.Check(); err != nil {
		return 0, spec.Applied{}, err
	}
	if err := enterCgroup(cgroupTasks); err != nil {
		return 0, spec.Applied{}, err
	}
	var err error
	var prog []unix.SockFilter
	premounted := 0
	if pre != nil {
		premounted, err = finishRoot(pre.root, p, pre.premounted)
		prog = pre.seccomp
	} else {
		err = buildRoot(p)
	}
	if err != nil {
		return 0, spec.Applied{}, err
	}
	applied := spec.Applied{Mode: p.Mode, Network: p.Network, Namespaces: namespaces(p.Network), Limits: p.Limits, Premounted: premounted}
	if p.Network != spec.NetworkOn && (pre == nil || !pre.loopback) {
		if err := loopbackUp(); err != nil {
			return 0, spec.Applied{}, err
		}
	}
	if p.Network == spec.NetworkAllowlist {
		if err := listenRelay(p.ProxySocket, p.ProxyPort); err != nil {
			return 0, spec.Applied{}, err
		}
	}
	if err := setLimits(p.Limits); err != nil {
		return 0, spec.Applied{}, err
	}
	// What confines the command from here on is the calling thread's
	// (startShell).
	thread := unix.Gettid()
	if err := setNoNewPrivs(); err != nil {
		return 0, spec.Applied{}, err
	}
	if applied.LandlockABI, err = restrictLandlock(p); err != nil {
		return 0, spec.Applied{}, fmt.Errorf("restrict with Landlock: %w", err)
	}
	if err := loadSeccomp(p, prog); err != nil {
		return 0, spec.Applied{}, fmt.Errorf("seccomp: %w", err)
	}
	if err := dropCapabilities(); err != nil {
		return 0, spec.Applied{}, err
	}
	nnp, _ := unix.PrctlRetInt(unix.PR_GET_NO_NEW_PRIVS, 0, 0, 0, 0)
	mode, _ := unix.PrctlRetInt(unix.PR_GET_SECCOMP, 0, 0, 0, 0)
	applied.NoNewPrivs, applied.Seccomp = nnp == 1, mode == 2
	pid, err := startShell(msg.Command, p, thread)
	if err != nil {
		return 0, spec.Applied{}, err
	}
	return pid, applied, nil
}

// setNoNewPrivs sets no_new_privs on the calling thread. It is the
// launcher's invariant that this happens once, here, on the thread Main
// locked, before anything restricts the launcher: loadSeccomp relies on
// it, as does restrictLandlock (the kernel requires it of the thread
// loading a filter or enforcing a ruleset, and seccomp's TSYNC copies
// it to the other threads), and everything the launcher starts
// inherits it, so no setuid program can regain what the confinement
// takes.
func setNoNewPrivs() error {
	if err := unix.Prctl(unix.PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0); err != nil {
		return fmt.Errorf("set no_new_privs: %w", err)
	}
	return nil
}

// readLaunchMsg reads what the host wrote on the policy pipe; it blocks
// until the host has placed the launcher in its cgroup.
func readLaunchMsg() (*spec.LaunchMsg, error) {
	f := os.NewFile(spec.PolicyFD, "policy")
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, spec.MaxLaunchMsg+1))
	if err != nil {
		return nil, fmt.Errorf("read the policy: %w", err)
	}
	if len(b) > spec.MaxLaunchMsg {
		return nil, fmt.Errorf("the policy is larger than %d bytes", spec.MaxLaunchMsg)
	}
	var msg spec.LaunchMsg
	if err := json.Unmarshal(b, &msg); err != nil {
		return nil, fmt.Errorf("read the policy: %w", err)
	}
	return &msg, nil
}

// enterCgroup moves the calling thread, the one that forks the shell,
// into the command's cgroup of each v1 hierarchy: 0 written to a tasks
// file moves the writer's thread alone, without the global lock that
// moving a process takes (see confine.Cgroup's launchFiles), and the
// shell is forked into the thread's cgroups. The launcher's other threads stay outside:
// they run no command and are gone when it ends. The host opened the
// files, so the kernel checks its credentials, not the namespace's.
func enterCgroup(tasks []int) error {
	var errs []error
	for _, fd := range tasks {
		if _, err := unix.Write(fd, []byte("0")); err != nil {
			errs = append(errs, fmt.Errorf("enter the command's cgroup (descriptor %d): %w", fd, err))
		}
		unix.Close(fd)
	}
	return errors.Join(errs...)
}

func namespaces(n spec.Network) []string {
	ns := []string{"user", "mount", "pid", "ipc", "uts"}
	if n != spec.NetworkOn {
		ns = append(ns, "net")
	}
	return ns
}

// setLimits sets the per-process limits, which the shell and everything
// it starts inherit. Core dumps are always off: a dump could carry what
// the command read into a file the host later reads.
func setLimits(l spec.Limits) error {
	set := func(name string, res int, v uint64) error {
		if v == 0 {
			return nil
		}
		var cur syscall.Rlimit
		if err := syscall.Getrlimit(res, &cur); err != nil {
			return fmt.Errorf("read %s: %w", name, err)
		}
		// Raising the hard limit needs a privilege the namespace lacks.
		v = min(v, cur.Max)
		// syscall.Setrlimit, unlike a raw call, keeps Go's fork from
		// restoring the soft limit it found at start in the shell.
		if err := syscall.Setrlimit(res, &syscall.Rlimit{Cur: v, Max: v}); err != nil {
			return fmt.Errorf("set %s to %d: %w", name, v, err)
		}
		return nil
	}
	if err := syscall.Setrlimit(unix.RLIMIT_CORE, &syscall.Rlimit{}); err != nil {
		return fmt.Errorf("turn core dumps off: %w", err)
	}
	if err := set("RLIMIT_CPU", unix.RLIMIT_CPU, l.CPUSeconds); err != nil {
		return err
	}
	if err := set("RLIMIT_FSIZE", unix.RLIMIT_FSIZE, l.FileSizeBytes); err != nil {
		return err
	}
	return set("RLIMIT_NOFILE", unix.RLIMIT_NOFILE, l.OpenFiles)
}

// The securebits that keep uid 0 from regaining capabilities at execve
// (capabilities(7)); golang.org/x/sys does not define them.
const (
	secbitNoRoot                 = 1 << 0
	secbitNoRootLocked           = 1 << 1
	secbitNoSetuidFixup          = 1 << 2
	secbitNoSetuidFixupLocked    = 1 << 3
	secbitKeepCapsLocked         = 1 << 5
	secbitNoCapAmbientRaise      = 1 << 6
	secbitNoCapAmbientRaiseLockd = 1 << 7
)

// dropCapabilities leaves this thread, and so the shell it forks, with no
// capability, not even in the namespace it owns: no mounts, no
// network administration (netfilter, a large attack surface), no
// overriding file permissions. The user namespace maps the user to
// itself, so for root the securebits keep execve from granting them back.
func dropCapabilities() error {
	// The kernel refuses the first capability past its last one: that
	// ends the loop without reading /proc/sys/kernel/cap_last_cap.
	for c := 0; c < 64; c++ {
		err := unix.Prctl(unix.PR_CAPBSET_DROP, uintptr(c), 0, 0, 0)
		if errors.Is(err, unix.EINVAL) {
			break
		}
		if err != nil {
			return fmt.Errorf("drop capability %d from the bounding set: %w", c, err)
		}
	}
	if err := unix.Prctl(unix.PR_CAP_AMBIENT, unix.PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0); err != nil && !errors.Is(err, unix.EINVAL) {
		return fmt.Errorf("clear the ambient capabilities: %w", err)
	}
	bits := secbitNoRoot | secbitNoRootLocked | secbitNoSetuidFixup | secbitNoSetuidFixupLocked |
		secbitKeepCapsLocked | secbitNoCapAmbientRaise | secbitNoCapAmbientRaiseLockd
	if err := unix.Prctl(unix.PR_SET_SECUREBITS, uintptr(bits), 0, 0, 0); err != nil {
		return fmt.Errorf("set the securebits: %w", err)
	}
	hdr := unix.CapUserHeader{Version: unix.LINUX_CAPABILITY_VERSION_3}
	var none [2]unix.CapUserData
	if err := unix.Capset(&hdr, &none[0]); err != nil {
		return fmt.Errorf("drop capabilities: %w", err)
	}
	return nil
}

// startShell forks sh -c command from this thread, in the working
// directory entered already, with p's environment and stdin from
// /dev/null. confined is the thread launch confined: the shell inherits
// Landlock's domain, no_new_privs and the dropped capabilities from the
// thread that forks it, and from no other, so a fork from another
// thread (a goroutine not locked to it) is refused rather than run
// unconfined.
func startShell(command string, p *spec.Policy, confined int) (int, error) {
	if tid := unix.Gettid(); tid != confined {
		return 0, fmt.Errorf("the shell would be forked from thread %d, not thread %d, which was confined; the launcher must run on its locked thread", tid, confined)
	}
	null, err := unix.Open("/dev/null", unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		return 0, fmt.Errorf("open /dev/null: %w", err)
	}
	defer unix.Close(null)
	env := p.Env
	if env == nil {
		env = []string{}
	}
	pid, err := syscall.ForkExec("/bin/sh", []string{"sh", "-c", command}, &syscall.ProcAttr{
		Env:   env,
		Files: []uintptr{uintptr(null), 1, 2},
	})
	if err != nil {
		return 0, fmt.Errorf("start /bin/sh inside the command's root: %w; the policy must mount /bin and /usr", err)
	}
	return pid, nil
}

// supervise forwards the signals the launcher receives to the shell and
// reaps every child, orphans included, as a PID namespace's init must,
// until the shell exits; it returns how the shell ended.
//
// It runs on the launcher's locked thread, the one that forked the shell
// and whose Landlock domain the shell inherited: the domain's signal
// scoping (ABI 6+) lets signals from this thread reach processes of
// that domain.
func supervise(shell int, sigs, children <-chan os.Signal) (code int, sig syscall.Signal) {
	for {
		if code, sig, done := reapAll(shell); done {
			return code, sig
		}
		select {
		case s := <-sigs:
			unix.Kill(shell, s.(syscall.Signal))
		case <-children:
		}
	}
}

// endAll kills every other process of the launcher's PID namespace
// (kill -1 from its init reaches those and no other) and reaps them all,
// orphans included, until none is left: the kernel would do the same at
// the launcher's exit.
func endAll() {
	unix.Kill(-1, unix.SIGKILL)
	for {
		var ws unix.WaitStatus
		_, err := unix.Wait4(-1, &ws, unix.WALL, nil)
		if err != nil && !errors.Is(err, unix.EINTR) {
			return // ECHILD: none left
		}
	}
}

// reapAll reaps the children that have exited, without waiting, and says
// whether the shell was one of them.
func reapAll(shell int) (code int, sig syscall.Signal, done bool) {
	for {
		var ws unix.WaitStatus
		pid, err := unix.Wait4(-1, &ws, unix.WNOHANG, nil)
		switch {
		case errors.Is(err, unix.EINTR):
			continue
		case err != nil:
			// No child left, so the shell is gone: cannot happen, as only
			// this loop reaps.
			return spec.ExitLaunchFailed, 0, true
		case pid <= 0:
			return 0, 0, false
		case pid != shell:
			continue
		case ws.Signaled():
			return 0, ws.Signal(), true
		}
		return ws.ExitStatus(), 0, true
	}
}

func oneLine(s string) string {
	return strings.ReplaceAll(s, "\n", " ")
}
