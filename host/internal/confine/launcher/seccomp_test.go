//go:build linux

package launcher

import (
	"bytes"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/toolhost/toolhost/internal/testenv"
)

// systemPython is the interpreter the probes that need one run: the
// system's, which the policy's system directories cover.
const systemPython = "/usr/bin/python3"

// needsPython are the probes that run systemPython.
var needsPython = map[string]bool{"i386-unshare": true, "python-threads": true}

// needSystemPython stops t (testenv.Need) unless systemPython runs: a
// probe that cannot start its interpreter proves nothing either way.
func needSystemPython(t *testing.T) {
	t.Helper()
	if out, err := exec.Command(systemPython, "-c", "").CombinedOutput(); err != nil {
		testenv.Need(t, "python3", fmt.Errorf("%s does not run: %v %s", systemPython, err, bytes.TrimSpace(out)), "apt-get install python3 (as root)")
	}
}

func seccompProbes() map[string]confineProbe {
	sock := func(domain, typ, proto int) confineProbe {
		return func(string, string) error {
			fd, err := unix.Socket(domain, typ, proto)
			if err == nil {
				unix.Close(fd)
			}
			return err
		}
	}
	return map[string]confineProbe{
		"io-uring-setup":   ioUringSetup,
		"ptrace-attach":    ptraceAttach,
		"process-vm-readv": processVMReadv,
		"socket-packet":    sock(unix.AF_PACKET, unix.SOCK_RAW, 0),
		"socket-vsock":     sock(unix.AF_VSOCK, unix.SOCK_STREAM, 0),
		"socket-bluetooth": sock(unix.AF_BLUETOOTH, unix.SOCK_STREAM, 0),
		"socket-packet-high-bits": func(string, string) error {
			// The kernel reads the family as an int: AF_PACKET with a
			// high bit set is still AF_PACKET to it.
			return rawSocket(1<<32|unix.AF_PACKET, unix.SOCK_RAW, 0)
		},
		"netlink-netfilter": sock(unix.AF_NETLINK, unix.SOCK_RAW, unix.NETLINK_NETFILTER),
		"netlink-route":     sock(unix.AF_NETLINK, unix.SOCK_RAW, unix.NETLINK_ROUTE),
		"socket-unix":       sock(unix.AF_UNIX, unix.SOCK_STREAM, 0),
		"socketpair-unix":   socketpairUnix,
		"tcp-loopback":      tcpLoopback,
		"unshare-user":      func(string, string) error { return unix.Unshare(unix.CLONE_NEWUSER) },
		"unshare-files":     func(string, string) error { return unix.Unshare(unix.CLONE_FILES) },
		"clone-namespace":   cloneNamespace,
		"mount":             mountTmpfs,
		"clone3":            clone3Probe,
		"keyctl":            keyctlProbe,
		"bpf":               func(string, string) error { return rawSyscallErr(unix.SYS_BPF, unix.BPF_MAP_CREATE, 0, 0) },
		"userfaultfd":       func(string, string) error { return rawClose(unix.SYS_USERFAULTFD, unix.O_CLOEXEC, 0, 0) },
		"setns":             func(string, string) error { return rawSyscallErr(unix.SYS_SETNS, ^uintptr(0), 0, 0) },
		"personality-query": func(string, string) error { return rawSyscallErr(unix.SYS_PERSONALITY, 0xffffffff, 0, 0) },
		"personality-page-zero": func(string, string) error {
			return rawSyscallErr(unix.SYS_PERSONALITY, 0x0100000, 0, 0) // MMAP_PAGE_ZERO
		},
		"tiocsti":            tiocstiProbe,
		"i386-unshare":       i386Unshare,
		"sh-echo":            shEcho,
		"go-threads":         goThreads,
		"python-threads":     pythonThreads,
		"go-exec-with-pidfd": goExecWithPidfd,
	}
}

func rawSyscallErr(nr, a1, a2, a3 uintptr) error {
	_, _, e := unix.Syscall(nr, a1, a2, a3)
	if e != 0 {
		return e
	}
	return nil
}

// rawClose makes a call that returns a descriptor and closes it.
func rawClose(nr, a1, a2, a3 uintptr) error {
	fd, _, e := unix.Syscall(nr, a1, a2, a3)
	if e != 0 {
		return e
	}
	return unix.Close(int(fd))
}

func rawSocket(domain uint64, typ, proto int) error {
	return rawClose(unix.SYS_SOCKET, uintptr(domain), uintptr(typ), uintptr(proto))
}

func ioUringSetup(string, string) error {
	var params [120]byte // struct io_uring_params
	return rawClose(unix.SYS_IO_URING_SETUP, 1, uintptr(unsafe.Pointer(&params[0])), 0)
}

// ptraceAttach tries to trace a process of its own, which Landlock would
// allow (same domain): only the filter refuses.
func ptraceAttach(string, string) error {
	cmd := exec.Command("/bin/sleep", "10")
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("starting sleep: %v", err) // not an errno: a broken probe
	}
	defer func() {
		cmd.Process.Kill()
		cmd.Wait()
	}()
	runtime.LockOSThread() // a tracer is a thread
	defer runtime.UnlockOSThread()
	if err := unix.PtraceAttach(cmd.Process.Pid); err != nil {
		return err
	}
	var ws unix.WaitStatus
	unix.Wait4(cmd.Process.Pid, &ws, unix.WALL, nil)
	return unix.PtraceDetach(cmd.Process.Pid)
}

func processVMReadv(string, string) error {
	src, dst := []byte("secret"), make([]byte, 6)
	_, err := unix.ProcessVMReadv(os.Getpid(),
		[]unix.Iovec{{Base: &dst[0], Len: uint64(len(dst))}},
		[]unix.RemoteIovec{{Base: uintptr(unsafe.Pointer(&src[0])), Len: len(src)}}, 0)
	return err
}

func socketpairUnix(string, string) error {
	fds, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_STREAM, 0)
	if err != nil {
		return err
	}
	unix.Close(fds[0])
	return unix.Close(fds[1])
}

// tcpLoopback listens on and connects to 127.0.0.1: the network
// namespace, not the filter, decides what TCP reaches.
func tcpLoopback(string, string) error {
	l, err := net.Listen("tcp4", "127.0.0.1:0")
	if err != nil {
		return err
	}
	defer l.Close()
	c, err := net.Dial("tcp4", l.Addr().String())
	if err != nil {
		return err
	}
	return c.Close()
}

// cloneNamespace starts /bin/true in the new namespace arg names, which
// Go does with clone(2) and the flag.
func cloneNamespace(_, arg string) error {
	flags := map[string]uintptr{
		"user": unix.CLONE_NEWUSER, "mnt": unix.CLONE_NEWNS, "pid": unix.CLONE_NEWPID,
		"net": unix.CLONE_NEWNET, "ipc": unix.CLONE_NEWIPC, "uts": unix.CLONE_NEWUTS,
		"cgroup": unix.CLONE_NEWCGROUP,
	}
	flag, ok := flags[arg]
	if !ok {
		return fmt.Errorf("no namespace %q", arg)
	}
	cmd := exec.Command("/bin/true")
	cmd.SysProcAttr = &syscall.SysProcAttr{Cloneflags: flag}
	return cmd.Run()
}

// mountTmpfs mounts a tmpfs in base; without the filter the test runs
// as root and it would succeed, so it is undone at once.
func mountTmpfs(base, _ string) error {
	dir := filepath.Join(base, "rw")
	if err := unix.Mount("tmpfs", dir, "tmpfs", 0, ""); err != nil {
		return err
	}
	return unix.Unmount(dir, unix.MNT_DETACH)
}

// clone3Probe calls clone3 with no arguments: the kernel says EINVAL, the
// filter ENOSYS before the kernel sees it.
func clone3Probe(string, string) error { return rawSyscallErr(unix.SYS_CLONE3, 0, 0, 0) }

func keyctlProbe(string, string) error {
	_, err := unix.KeyctlInt(unix.KEYCTL_GET_KEYRING_ID, unix.KEY_SPEC_SESSION_KEYRING, 0, 0, 0)
	return err
}

// tiocstiProbe pushes a character into a terminal's input; on /dev/null the
// kernel says ENOTTY, the filter EPERM. The request is also tried with a
// high bit set, which the kernel ignores (the request is an int).
func tiocstiProbe(string, string) error {
	f, err := os.Open("/dev/null")
	if err != nil {
		return fmt.Errorf("opening /dev/null: %v", err)
	}
	defer f.Close()
	c := byte('x')
	low := rawSyscallErr(unix.SYS_IOCTL, f.Fd(), unix.TIOCSTI, uintptr(unsafe.Pointer(&c)))
	high := rawSyscallErr(unix.SYS_IOCTL, f.Fd(), 1<<32|unix.TIOCSTI, uintptr(unsafe.Pointer(&c)))
	if !errors.Is(low, high) {
		return fmt.Errorf("TIOCSTI: %v, with a high bit: %v", low, high)
	}
	return low
}

// i386Unshare makes the i386 system call unshare(CLONE_NEWUSER) through
// int 0x80 from a 64-bit process, in machine code run by Python's
// ctypes: a filter written for x86-64 numbers must not let it pass.
func i386Unshare(base, _ string) error {
	const script = `import ctypes, mmap
code = bytes([0x53, 0xb8]) + (310).to_bytes(4, "little")  # push rbx; mov eax, 310 (unshare)
code += bytes([0xbb]) + (0x10000000).to_bytes(4, "little")  # mov ebx, CLONE_NEWUSER
code += bytes([0xcd, 0x80, 0x5b, 0xc3])                     # int 0x80; pop rbx; ret
m = mmap.mmap(-1, 4096, prot=mmap.PROT_READ | mmap.PROT_WRITE | mmap.PROT_EXEC)
m.write(code)
f = ctypes.CFUNCTYPE(ctypes.c_int)(ctypes.addressof(ctypes.c_char.from_buffer(m)))
print(f())
`
	cmd := exec.Command(systemPython, "-c", script)
	cmd.Dir = filepath.Join(base, "rw")
	out, err := cmd.CombinedOutput()
	if err != nil {
		return fmt.Errorf("python3: %v: %s", err, out)
	}
	n, err := strconv.Atoi(strings.TrimSpace(string(out)))
	if err != nil {
		return fmt.Errorf("python3 printed %q", out)
	}
	if n < 0 {
		return unix.Errno(-n)
	}
	return nil
}

func shEcho(base, _ string) error { return runSh(base, "echo ok") }

// goThreads makes the Go runtime start new OS threads (clone with
// CLONE_THREAD): goroutines locked to their threads and parked keep them.
func goThreads(string, string) error {
	before, err := os.ReadDir("/proc/self/task")
	if err != nil {
		return err
	}
	const n = 4
	tids := make(chan int, n)
	release := make(chan struct{})
	for range n {
		go func() {
			runtime.LockOSThread()
			defer runtime.UnlockOSThread()
			tids <- unix.Gettid()
			<-release
		}()
	}
	var fresh int
	for range n {
		tid := strconv.Itoa(<-tids)
		if !slices.ContainsFunc(before, func(e os.DirEntry) bool { return e.Name() == tid }) {
			fresh++
		}
	}
	close(release)
	if fresh == 0 {
		return errors.New("no new thread started")
	}
	return nil
}

// pythonThreads starts a thread with glibc's pthread_create, which tries
// clone3 first and falls back to clone only on ENOSYS.
func pythonThreads(base, _ string) error {
	cmd := exec.Command(systemPython, "-c",
		`import threading; r = []; t = threading.Thread(target=r.append, args=("ok",)); t.start(); t.join(); print(r[0])`)
	cmd.Dir = filepath.Join(base, "rw")
	out, err := cmd.CombinedOutput()
	if err != nil {
		return fmt.Errorf("python3: %v: %s", err, out)
	}
	if string(out) != "ok\n" {
		return fmt.Errorf("python3 printed %q", out)
	}
	return nil
}

// goExecWithPidfd starts a process the way the launcher does (os/exec,
// which asks clone for a pidfd) and waits for it.
func goExecWithPidfd(base, _ string) error {
	cmd := exec.Command("/bin/true")
	cmd.Dir = filepath.Join(base, "rw")
	return cmd.Run()
}

// TestSeccompRefuses checks that the filter alone refuses what a command
// could use to leave its namespaces or reach the host,
// and keeps what builds need. The probes run under seccomp only, so that
// Landlock (which also refuses mount and ptrace out of its domain) does
// not answer for the filter.
func TestSeccompRefuses(t *testing.T) {
	tests := []struct {
		probe string
		arg   string
		want  string
	}{
		{"io-uring-setup", "", "EPERM"},
		{"ptrace-attach", "", "EPERM"},
		{"process-vm-readv", "", "EPERM"},
		{"socket-packet", "", "EPERM"},
		{"socket-vsock", "", "EPERM"},
		{"socket-bluetooth", "", "EPERM"},
		{"socket-packet-high-bits", "", "EPERM"},
		{"netlink-netfilter", "", "EPERM"},
		{"netlink-route", "", "ok"},
		{"socket-unix", "", "ok"},
		{"socketpair-unix", "", "ok"},
		{"tcp-loopback", "", "ok"},
		{"unshare-user", "", "EPERM"},
		{"unshare-files", "", "ok"},
		{"clone-namespace", "user", "EPERM"},
		{"clone-namespace", "mnt", "EPERM"},
		{"clone-namespace", "pid", "EPERM"},
		{"clone-namespace", "net", "EPERM"},
		{"clone-namespace", "ipc", "EPERM"},
		{"clone-namespace", "uts", "EPERM"},
		{"clone-namespace", "cgroup", "EPERM"},
		{"mount", "", "EPERM"},
		{"clone3", "", "ENOSYS"},
		{"keyctl", "", "EPERM"},
		{"bpf", "", "EPERM"},
		{"userfaultfd", "", "EPERM"},
		{"setns", "", "EPERM"},
		{"personality-query", "", "ok"},
		{"personality-page-zero", "", "EPERM"},
		{"tiocsti", "", "EPERM"},
		{"i386-unshare", "", "ENOSYS"},
	}
	for _, tt := range tests {
		t.Run(strings.TrimSuffix(tt.probe+"-"+tt.arg, "-"), func(t *testing.T) {
			if needsPython[tt.probe] {
				needSystemPython(t)
			}
			base, p := testTree(t)
			got, out := runConfined(t, tt.probe, helperRun{apply: applySeccomp, policy: p, base: base, arg: tt.arg})
			if got != tt.want {
				t.Errorf("%s %s under seccomp = %s, want %s\n%s", tt.probe, tt.arg, got, tt.want, out)
			}
		})
	}
}

// TestConfinedProcessesStillRun checks, under Landlock and seccomp as the
// launcher applies them, that clone3's ENOSYS leaves threads and
// processes working: a shell, Go threads, os/exec, and glibc's
// pthread_create through Python.
func TestConfinedProcessesStillRun(t *testing.T) {
	for _, name := range []string{"sh-echo", "go-threads", "python-threads", "go-exec-with-pidfd", "clone3"} {
		t.Run(name, func(t *testing.T) {
			if needsPython[name] {
				needSystemPython(t)
			}
			base, p := testTree(t)
			want := "ok"
			if name == "clone3" {
				want = "ENOSYS"
			}
			got, out := runConfined(t, name, helperRun{apply: applyBoth, policy: p, base: base})
			if got != want {
				t.Errorf("%s confined = %s, want %s\n%s", name, got, want, out)
			}
		})
	}
}

// TestConfinementLoadCost bounds what the seccomp filter costs (its
// size: every checked syscall runs it) and checks its shape (the
// foreign-architecture guard first), then logs what applying Landlock and
// the filter takes in fresh processes; the launcher's whole start-up
// budget, 5 ms, is measured by make bench, not asserted here.
func TestConfinementLoadCost(t *testing.T) {
	prog, err := seccompProgram()
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("seccomp filter: %d BPF instructions", len(prog))
	if len(prog) > 400 {
		t.Errorf("the seccomp filter has %d instructions; keep it small, every syscall with arguments checked runs it", len(prog))
	}
	// BPF_LD|BPF_W|BPF_ABS of seccomp_data.arch, and the guard's
	// ENOSYS for a foreign architecture two instructions on.
	if len(prog) < 3 || prog[0].Code != unix.BPF_LD|unix.BPF_W|unix.BPF_ABS || prog[0].K != 4 ||
		prog[2].Code != unix.BPF_RET|unix.BPF_K || prog[2].K != uint32(errnoAction(unix.ENOSYS)) {
		t.Errorf("the seccomp filter does not start with the architecture guard: %+v", prog[:min(3, len(prog))])
	}
	var landlockTook, seccompTook []time.Duration
	for range 5 {
		base, p := testTree(t)
		_, out := runConfined(t, "noop", helperRun{apply: applyBoth, policy: p, base: base})
		landlockTook = append(landlockTook, tookOf(t, out, `landlock abi \d+ took (\S+)`))
		seccompTook = append(seccompTook, tookOf(t, out, `seccomp took (\S+)`))
	}
	slices.Sort(landlockTook)
	slices.Sort(seccompTook)
	t.Logf("restrictLandlock: median %v (runs %v)", landlockTook[2], landlockTook)
	t.Logf("loadSeccomp: median %v (runs %v)", seccompTook[2], seccompTook)
	// Wall-clock time is only logged: under -race on a loaded machine it
	// says nothing about the launcher. The
	// budget is held by the filter's size above and by make bench.
}

func tookOf(t *testing.T, out, pattern string) time.Duration {
	t.Helper()
	m := regexp.MustCompile(pattern).FindStringSubmatch(out)
	if m == nil {
		t.Fatalf("no timing %q in:\n%s", pattern, out)
	}
	d, err := time.ParseDuration(m[1])
	if err != nil {
		t.Fatal(err)
	}
	return d
}

// BenchmarkSeccompProgram measures assembling the filter, which the
// launcher does once per command.
func BenchmarkSeccompProgram(b *testing.B) {
	for b.Loop() {
		if _, err := seccompProgram(); err != nil {
			b.Fatal(err)
		}
	}
}
