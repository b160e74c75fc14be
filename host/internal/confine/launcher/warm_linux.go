package launcher

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"runtime"
	"sync"
	"syscall"

	"golang.org/x/sys/unix"

	"github.com/toolhost/toolhost/host/internal/confine/spec"
)

// MainWarm is a warm launcher: the launcher server started it in new
// namespaces ahead of need, with spec.WarmLauncherArg, and it waits on
// spec.WarmFD for the one command it runs. Once the host's WarmMsg and
// its descriptors arrive it goes on exactly as Main does.
//
// The wait costs nothing the command would not pay anyway: the binary's
// start-up, which is most of a cold launcher's, is behind it, and so is
// the part of the root no policy changes (prepareRoot). It exits
// without a word when the host closes the socket instead (the host
// closed its pool).
func MainWarm(args []string) int {
	runtime.LockOSThread()
	if typ, err := unix.GetsockoptInt(spec.WarmFD, unix.SOL_SOCKET, unix.SO_TYPE); err != nil || typ != unix.SOCK_SEQPACKET {
		fmt.Fprintln(os.Stderr, "toolhost: the warm launcher is started by toolhost itself, not by hand")
		return spec.ExitLaunchFailed
	}
	unix.CloseOnExec(spec.WarmFD)
	if err := unix.CloseRange(spec.WarmFD+1, ^uint(0), unix.CLOSE_RANGE_CLOEXEC); err != nil {
		fmt.Fprintf(os.Stderr, "toolhost: warm launcher: cannot mark inherited descriptors close-on-exec: %v\n", err)
		return spec.ExitLaunchFailed
	}
	if err := checkArgs(args, spec.WarmLauncherArg); err != nil {
		fmt.Fprintf(os.Stderr, "toolhost: %v\n", err)
		return spec.ExitLaunchFailed
	}
	sigs, children, err := guard()
	if err != nil {
		fmt.Fprintf(os.Stderr, "toolhost: warm launcher: %v\n", err)
		return spec.ExitLaunchFailed
	}
	// The namespace is opened before the pivot hides /proc.
	ns, nsErr := unix.Open("/proc/self/ns/mnt", unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if nsErr != nil {
		ns = -1
	}
	pre, err := prepare()
	if err != nil {
		// No ready: the host takes the cold path, which says why.
		fmt.Fprintf(os.Stderr, "toolhost: warm launcher: %v\n", err)
		return spec.ExitLaunchFailed
	}
	err = sendReady(spec.WarmFD, ns)
	if ns >= 0 {
		unix.Close(ns)
	}
	if err != nil {
		return spec.ExitLaunchFailed
	}
	msg, fds, err := readWarmMsg(spec.WarmFD, pre.buf)
	if err == nil && msg.Premount {
		// The mounts the host expects, ahead of the command, which
		// follows: once.
		if pm := msg.Policy; pm.Check() == nil {
			pre.premounted = pre.root.premount(&pm)
		}
		err = unix.Sendmsg(spec.WarmFD, []byte(spec.WarmPremounted), nil, nil, unix.MSG_NOSIGNAL)
		if err == nil {
			msg, fds, err = readWarmMsg(spec.WarmFD, pre.buf)
		}
		if err == nil && msg.Premount {
			err = errors.New("the host sent the mounts to make ahead twice")
		}
	}
	if err == nil {
		// Only a launcher that has its command may run it: the host
		// takes the cold path without this answer.
		err = unix.Sendmsg(spec.WarmFD, []byte(spec.WarmTaken), nil, nil, unix.MSG_NOSIGNAL)
	}
	unix.Close(spec.WarmFD)
	if errors.Is(err, errHostGone) {
		return spec.ExitLaunchFailed
	}
	if err != nil {
		// Not taken: the host runs the command in a launcher started for
		// it, with the same status pipe, which must stay clean.
		fmt.Fprintf(os.Stderr, "toolhost: warm launcher: %v\n", err)
		closeFDs(fds)
		return spec.ExitLaunchFailed
	}
	status := os.NewFile(uintptr(fds[2]), "status")
	// The command's output takes the launcher's place on 1 and 2, which
	// the shell inherits; dup3 leaves them open across exec.
	for i, fd := range fds[:2] {
		if err := unix.Dup3(fd, i+1, 0); err != nil {
			fmt.Fprintf(status, "%shand the command its output (descriptor %d): %v\n", spec.StatusError, i+1, err)
			return spec.ExitLaunchFailed
		}
		unix.Close(fd)
	}
	return run(status, &msg.LaunchMsg, fds[spec.WarmFiles:], pre, sigs, children)
}

// ahead is what a warm launcher does while it waits, since no policy
// changes it: the part of the root prepareRoot makes, the seccomp
// program, the buffer the command is read into, a first decoding of a
// message, and, in a network namespace of its own, the loopback up. In
// a process that runs one command, each of them would otherwise be
// done, or faulted in, on the command's path: the
// decoder's first use alone cost about 0.3 ms more than the decoding
// itself on a 2-core machine.
type ahead struct {
	root    *roots
	seccomp []unix.SockFilter
	buf     []byte
	// loopback says the launcher brought lo up in its own network
	// namespace (loopbackUpAhead).
	loopback bool
	// premounted is what it mounted in the command's root on the host's
	// word (WarmMsg.Premount); nil without.
	premounted *premounted
}

func prepare() (*ahead, error) {
	root, err := prepareRoot()
	if err != nil {
		return nil, err
	}
	prog, err := seccompProgram()
	if err != nil {
		root.close()
		return nil, err
	}
	pre := &ahead{root: root, seccomp: prog, buf: make([]byte, spec.MaxWarmMsg+1), loopback: loopbackUpAhead()}
	// A message with every field set makes the decoder build and keep
	// its decoding of each type now.
	sample, err := json.Marshal(spec.WarmMsg{LaunchMsg: spec.LaunchMsg{Command: "true", Policy: spec.Policy{
		Dir: "/", Mounts: []spec.Mount{{Target: "/"}}, Writable: []string{"/"}, Readable: []string{"/"}, Env: []string{"A=1"},
	}}})
	if err == nil {
		var m spec.WarmMsg
		err = json.Unmarshal(sample, &m)
	}
	if err != nil {
		root.close()
		return nil, fmt.Errorf("decode a sample command: %w", err)
	}
	return pre, nil
}

// sendReady tells the host the launcher is past its start-up and has
// prepared the command's root, and hands it the launcher's mount
// namespace ns (none when -1): the host holds it until the
// launcher has exited, so that the launcher's exit does not wait for the
// command's mounts to be torn down (an RCU grace period, some ms), and
// the host learns of the exit without that wait.
func sendReady(sock, ns int) error {
	var rights []byte
	if ns >= 0 {
		rights = unix.UnixRights(ns)
	}
	return unix.Sendmsg(sock, []byte(spec.WarmReady), rights, nil, unix.MSG_NOSIGNAL)
}

// errHostGone is the host closing a warm launcher's socket unused.
var errHostGone = errors.New("the host closed the socket")

// readWarmMsg reads the WarmMsg and its descriptors from sock. It
// returns the descriptors it received even with an error, for the
// caller to close; they are close-on-exec.
func readWarmMsg(sock int, buf []byte) (*spec.WarmMsg, []int, error) {
	oob := make([]byte, unix.CmsgSpace(4*(spec.WarmFiles+spec.MaxCgroupTasks)))
	var n, oobn, flags int
	var err error
	for {
		n, oobn, flags, _, err = unix.Recvmsg(sock, buf, oob, unix.MSG_CMSG_CLOEXEC)
		if !errors.Is(err, unix.EINTR) {
			break
		}
	}
	if err != nil {
		return nil, nil, fmt.Errorf("read the command from the host: %w", err)
	}
	if n == 0 && oobn == 0 {
		return nil, nil, errHostGone
	}
	fds, ferr := rights(oob[:oobn])
	switch {
	case ferr != nil:
		return nil, fds, ferr
	case flags&unix.MSG_CTRUNC != 0:
		return nil, fds, fmt.Errorf("the host handed more descriptors than a launcher takes (%d at most)", spec.WarmFiles+spec.MaxCgroupTasks)
	case flags&unix.MSG_TRUNC != 0 || n > spec.MaxWarmMsg:
		return nil, fds, fmt.Errorf("the command and its policy are larger than %d bytes", spec.MaxWarmMsg)
	}
	var msg spec.WarmMsg
	if err := json.Unmarshal(buf[:n], &msg); err != nil {
		return nil, fds, fmt.Errorf("read the policy: %w", err)
	}
	if msg.Premount {
		if msg.Command != "" || len(fds) != 0 {
			return nil, fds, errors.New("the host sent the mounts to make ahead with a command or descriptors")
		}
		return &msg, nil, nil
	}
	if msg.CgroupTasks < 0 || msg.CgroupTasks > spec.MaxCgroupTasks {
		return nil, fds, fmt.Errorf("the launcher was handed %d cgroup files, want at most %d", msg.CgroupTasks, spec.MaxCgroupTasks)
	}
	if want := spec.WarmFiles + msg.CgroupTasks; len(fds) != want {
		return nil, fds, fmt.Errorf("the host handed %d descriptors with the command, want %d", len(fds), spec.WarmFiles+msg.CgroupTasks)
	}
	return &msg, fds, nil
}

// rights returns the descriptors in a message's control data.
func rights(oob []byte) ([]int, error) {
	msgs, err := unix.ParseSocketControlMessage(oob)
	if err != nil {
		return nil, fmt.Errorf("read the descriptors from the host: %w", err)
	}
	var fds []int
	for _, m := range msgs {
		if m.Header.Level != unix.SOL_SOCKET || m.Header.Type != unix.SCM_RIGHTS {
			continue
		}
		got, err := unix.ParseUnixRights(&m)
		if err != nil {
			return fds, fmt.Errorf("read the descriptors from the host: %w", err)
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

// ServeLaunchers is the launcher server: started once per host with
// spec.LaunchersArg and a SOCK_SEQPACKET socket on spec.LaunchersFD, it
// starts a warm launcher for each LaunchersRequest and answers with its
// pid, the host's end of its socket and a pidfd. It returns when the
// host closes the socket (or dies: its end closes with it).
//
// It exists so that the clone into new namespaces happens from a small
// process: Go cannot vfork into a new user namespace, so the clone
// copies the caller's page tables, some 12 ms from a host of 200 MB and
// 2 ms from here. The launchers' parent-death signal follows this
// process's locked main thread, so they die with it, and it dies with
// the host.
func ServeLaunchers(args []string) int {
	runtime.LockOSThread()
	if typ, err := unix.GetsockoptInt(spec.LaunchersFD, unix.SOL_SOCKET, unix.SO_TYPE); err != nil || typ != unix.SOCK_SEQPACKET {
		fmt.Fprintln(os.Stderr, "toolhost: the launcher server is started by toolhost itself, not by hand")
		return spec.ExitLaunchFailed
	}
	unix.CloseOnExec(spec.LaunchersFD)
	if err := unix.CloseRange(spec.LaunchersFD+1, ^uint(0), unix.CLOSE_RANGE_CLOEXEC); err != nil {
		fmt.Fprintf(os.Stderr, "toolhost: launcher server: cannot mark inherited descriptors close-on-exec: %v\n", err)
		return spec.ExitLaunchFailed
	}
	if err := checkArgs(args, spec.LaunchersArg); err != nil {
		fmt.Fprintf(os.Stderr, "toolhost: %v\n", err)
		return spec.ExitLaunchFailed
	}
	// Nothing of the same user may read its memory or descriptors.
	if err := unix.Prctl(unix.PR_SET_DUMPABLE, 0, 0, 0, 0); err != nil {
		fmt.Fprintf(os.Stderr, "toolhost: launcher server: cannot make it undumpable: %v\n", err)
		return spec.ExitLaunchFailed
	}
	null, err := unix.Open("/dev/null", unix.O_RDWR|unix.O_CLOEXEC, 0)
	if err != nil {
		fmt.Fprintf(os.Stderr, "toolhost: launcher server: open /dev/null: %v\n", err)
		return spec.ExitLaunchFailed
	}
	buf := make([]byte, 4096)
	oob := make([]byte, unix.CmsgSpace(4))
	var launchers sync.WaitGroup
	for {
		n, oobn, flags, _, err := unix.Recvmsg(spec.LaunchersFD, buf, oob, unix.MSG_CMSG_CLOEXEC)
		if errors.Is(err, unix.EINTR) {
			continue
		}
		if err != nil || n == 0 {
			// The launchers already handed out run on: a host that gave
			// up on this server (it answered too slowly) still follows
			// their commands. A host that died took them down with it
			// (its death kills this server, and so each launcher).
			launchers.Wait()
			return 0
		}
		cgroup, rerr := rights(oob[:oobn])
		var reply spec.LaunchersReply
		var fds []int
		if req, err := readRequest(buf[:n], cgroup, errors.Join(rerr, truncated(flags))); err != nil {
			reply.Error = err.Error()
		} else if pid, hostEnd, pidfd, err := startWarm(req, null, cgroup, &launchers); err != nil {
			reply.Error = err.Error()
		} else {
			reply.Pid, fds = pid, []int{hostEnd, pidfd}
		}
		closeFDs(cgroup)
		b, _ := json.Marshal(reply)
		var rights []byte
		if len(fds) > 0 {
			rights = unix.UnixRights(fds...)
		}
		err = unix.Sendmsg(spec.LaunchersFD, b, rights, nil, unix.MSG_NOSIGNAL)
		closeFDs(fds)
		if err != nil {
			launchers.Wait()
			return 0
		}
	}
}

// readRequest reads a LaunchersRequest that came with the descriptors
// cgroup, or with the error err.
func readRequest(b []byte, cgroup []int, err error) (spec.LaunchersRequest, error) {
	var req spec.LaunchersRequest
	if err == nil {
		err = json.Unmarshal(b, &req)
	}
	if err != nil {
		return req, fmt.Errorf("read the request: %w", err)
	}
	if !spec.SameBuild(req.Fingerprint, req.Revision) {
		exe, _ := os.Executable()
		return req, fmt.Errorf("the launcher binary %s was built from other sources than toolhost (protocol %s at %q, toolhost's %s at %q): build both together (make build), or remove it", exe, spec.Fingerprint(), spec.Revision(), req.Fingerprint, req.Revision)
	}
	want := 0
	if req.Cgroup {
		want = 1
	}
	if len(cgroup) != want {
		return req, fmt.Errorf("the request came with %d descriptors, want %d", len(cgroup), want)
	}
	return req, nil
}

// truncated is the error of a message cut short, or nil.
func truncated(flags int) error {
	if flags&(unix.MSG_TRUNC|unix.MSG_CTRUNC) != 0 {
		return errors.New("the message or its descriptors were cut short")
	}
	return nil
}

// startWarm starts one warm launcher, cloned into the cgroup v2
// directory among cgroup if there is one, and a goroutine that reaps it;
// it returns its pid, the host's end of its socket and a pidfd by which
// the host follows it without the pid's reuse in the way.
func startWarm(req spec.LaunchersRequest, null int, cgroup []int, launchers *sync.WaitGroup) (pid, hostEnd, pidfd int, err error) {
	pair, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_SEQPACKET|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return 0, -1, -1, fmt.Errorf("socket for a warm launcher: %w", err)
	}
	defer unix.Close(pair[1])
	flags := uintptr(syscall.CLONE_NEWUSER | syscall.CLONE_NEWNS | syscall.CLONE_NEWPID | syscall.CLONE_NEWIPC | syscall.CLONE_NEWUTS)
	if req.NewNetwork {
		flags |= syscall.CLONE_NEWNET
	}
	pidfd = -1
	sys := &syscall.SysProcAttr{
		Setsid:                     true,
		Pdeathsig:                  syscall.SIGKILL,
		Cloneflags:                 flags,
		UidMappings:                []syscall.SysProcIDMap{{ContainerID: os.Getuid(), HostID: os.Getuid(), Size: 1}},
		GidMappings:                []syscall.SysProcIDMap{{ContainerID: os.Getgid(), HostID: os.Getgid(), Size: 1}},
		GidMappingsEnableSetgroups: false,
		PidFD:                      &pidfd,
	}
	if len(cgroup) == 1 {
		sys.UseCgroupFD, sys.CgroupFD = true, cgroup[0]
	}
	pid, err = syscall.ForkExec("/proc/self/exe", []string{"/proc/self/exe", spec.WarmLauncherArg}, &syscall.ProcAttr{
		Dir: "/",
		Env: []string{},
		// Until its command arrives its stderr is the server's, the
		// host's: a launcher that fails before then says why there.
		Files: []uintptr{uintptr(null), uintptr(null), 2, uintptr(pair[1])},
		Sys:   sys,
	})
	if err != nil {
		unix.Close(pair[0])
		return 0, -1, -1, fmt.Errorf("start a warm launcher in new namespaces: %w", err)
	}
	launchers.Add(1)
	go func() {
		defer launchers.Done()
		var ws syscall.WaitStatus
		for {
			if _, err := syscall.Wait4(pid, &ws, 0, nil); !errors.Is(err, syscall.EINTR) {
				return
			}
		}
	}()
	return pid, pair[0], pidfd, nil
}
