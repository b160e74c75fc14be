package launcher

import (
	"fmt"
	"runtime"
	"unsafe"

	seccomp "github.com/elastic/go-seccomp-bpf"
	"github.com/elastic/go-seccomp-bpf/arch"
	"golang.org/x/net/bpf"
	"golang.org/x/sys/unix"

	"github.com/toolhost/toolhost/host/internal/confine/spec"
)

// deniedSyscalls fail with EPERM whatever their arguments. None is needed
// to build, test or run a program; each would let a command reach past
// its namespaces and Landlock, or widen the kernel it can attack.
func deniedSyscalls() []string {
	return []string{
		// io_uring runs operations (open, connect, send) that no seccomp
		// filter sees, and is a large source of kernel bugs.
		"io_uring_setup", "io_uring_enter", "io_uring_register",
		// Another process's memory and file descriptors: ptrace and its
		// relatives would let the command steer the launcher, its PID 1,
		// which holds capabilities in the namespaces and the status pipe
		// toolhost trusts. Debuggers and strace do not run inside.
		"ptrace", "process_vm_readv", "process_vm_writev", "process_madvise", "pidfd_getfd",
		// Mounts: in its user namespace the launcher, and a shell whose
		// mapped uid is 0, hold CAP_SYS_ADMIN, and the mounts the launcher
		// made are not locked there: unmounting the one that hides ~/.ssh
		// would show it. The mounts are done before this filter loads.
		"mount", "umount2", "pivot_root", "move_mount", "open_tree",
		"fsopen", "fsconfig", "fsmount", "fspick", "mount_setattr",
		// New namespaces: setns and unshare (of namespace flags, below) would
		// give a fresh user namespace with every capability over new mount
		// and network namespaces, the door to most kernel exploits of the
		// last years (nf_tables, net/sched).
		"setns",
		// The kernel keyrings are not namespaced: the session keyring that
		// toolhost's process holds (Kerberos tickets, fscrypt keys) would be
		// readable inside.
		"keyctl", "add_key", "request_key",
		// Opens any file by its handle, past every path check (the
		// "shocker" container escape); name_to_handle_at makes the handle.
		"open_by_handle_at", "name_to_handle_at",
		// Kernel attack surface without a use in a build: eBPF programs,
		// performance counters (which also leak kernel addresses) and
		// userfaultfd, the usual tool for winning kernel races.
		"bpf", "perf_event_open", "userfaultfd",
		// The machine itself: kernel modules, kexec, reboot, swap, process
		// accounting, quotas, the kernel log, the clock, I/O ports, the x86
		// LDT (only 16-bit and Wine code needs it) and obsolete calls. They
		// need capabilities no namespace grants, so they fail anyway; denied
		// here so the kernel never parses their arguments.
		"init_module", "finit_module", "delete_module", "kexec_load", "kexec_file_load",
		"reboot", "swapon", "swapoff", "acct", "quotactl", "quotactl_fd", "syslog",
		"settimeofday", "clock_settime", "clock_adjtime", "adjtimex",
		"iopl", "ioperm", "modify_ldt", "uselib", "lookup_dcookie", "_sysctl", "nfsservctl", "vhangup",
	}
}

// namespaceFlags are clone's CLONE_NEW* bits. CLONE_NEWTIME (0x80) is
// not among them: clone() reads the low byte as the exit signal, so
// only unshare and clone3 can ask for it.
const namespaceFlags = unix.CLONE_NEWNS | unix.CLONE_NEWCGROUP | unix.CLONE_NEWUTS |
	unix.CLONE_NEWIPC | unix.CLONE_NEWUSER | unix.CLONE_NEWPID | unix.CLONE_NEWNET

// socketFamilies and netlinkProtocols are what a command may open. Inet sockets
// reach only the namespace's own loopback unless network is on (the
// namespace is the wall for them, so every mode gets the same list);
// netlink's route protocol answers getaddrinfo and ip, sock_diag answers
// ss. Every other family (packet, vsock, bluetooth, can, xdp, tipc...)
// and every other netlink protocol (netfilter, xfrm, generic: what a
// shell mapped to uid 0 could configure in its namespace) is refused.
func socketFamilies() []uint64 {
	return []uint64{unix.AF_UNIX, unix.AF_INET, unix.AF_INET6, unix.AF_NETLINK}
}

func netlinkProtocols() []uint64 { return []uint64{unix.NETLINK_ROUTE, unix.NETLINK_SOCK_DIAG} }

// personas are the personality(2) values allowed: the default (0), the
// query (0xffffffff), PER_LINUX32 (0x20000) and UNAME26 (0x0008), which
// old builds ask for, and ADDR_NO_RANDOMIZE (0x0040000: setarch -R and
// debuggers; it weakens only the caller's own layout). The rest
// (MMAP_PAGE_ZERO, foreign personas) only helps exploits.
func personas() []uint64 { return []uint64{0, 0x0008, 0x0040000, 0x20000, 0x20008, 0xffffffff} }

// loadSeccomp loads the seccomp filter on every thread of the calling
// process (TSYNC); everything it starts afterwards inherits it. The
// calling thread must already have no_new_privs (setNoNewPrivs, the
// launcher's invariant) and stay the same OS thread (Main locks it). The filter allows by default and refuses what a
// confined command could use to leave its namespaces or reach the host
// (deniedSyscalls, namespace flags, socket families, tty input
// injection). It is the same for every network mode: the namespace,
// not the filter, decides what inet sockets reach.
//
// Two choices matter to what runs inside:
//   - clone3 fails with ENOSYS, not EPERM: its flags live in memory a
//     filter cannot read, and glibc (pthread_create, posix_spawn) falls
//     back to clone, whose flags the filter checks, only on ENOSYS. The
//     errno is returned by the filter itself (SECCOMP_RET_ERRNO), not by
//     SECCOMP_RET_TRACE, which gives ENOSYS only while no tracer is
//     attached and would let one run the call.
//   - Syscalls of another architecture (i386 through int 0x80, x32) fail
//     with ENOSYS: the filter's numbers are the native ones, so a 32-bit
//     call would otherwise pass every rule. 32-bit programs do not run.
//
// prog is seccompProgram's filter, assembled ahead by a warm launcher;
// nil assembles it here.
func loadSeccomp(p *spec.Policy, prog []unix.SockFilter) error {
	if prog == nil {
		var err error
		if prog, err = seccompProgram(); err != nil {
			return err
		}
	}
	fprog := unix.SockFprog{Len: uint16(len(prog)), Filter: &prog[0]}
	r, _, errno := unix.Syscall(unix.SYS_SECCOMP, unix.SECCOMP_SET_MODE_FILTER,
		unix.SECCOMP_FILTER_FLAG_TSYNC, uintptr(unsafe.Pointer(&fprog)))
	runtime.KeepAlive(prog)
	switch {
	case errno != 0:
		return fmt.Errorf("confine: loading the seccomp filter (network %s): %w; check the kernel's seccomp with toolhost sandbox doctor", p.Network, errno)
	case r != 0:
		// TSYNC names the thread it could not move to the new filter.
		return fmt.Errorf("confine: loading the seccomp filter: thread %d could not take it", r)
	}
	return nil
}

// seccompProgram assembles the filter: a guard that refuses every call
// of a foreign architecture, then go-seccomp-bpf's program. The library
// lets foreign calls through (its arch check jumps to the default
// action, allow), hence the guard in front.
func seccompProgram() ([]unix.SockFilter, error) {
	info, err := arch.GetInfo("")
	if err != nil {
		return nil, fmt.Errorf("confine: seccomp filter: %w", err)
	}
	policy := seccompPolicy(info)
	body, err := policy.Assemble()
	if err != nil {
		return nil, fmt.Errorf("confine: assembling the seccomp filter: %w", err)
	}
	const archOffset = 4 // seccomp_data.arch
	insts := append([]bpf.Instruction{
		bpf.LoadAbsolute{Off: archOffset, Size: 4},
		bpf.JumpIf{Cond: bpf.JumpEqual, Val: uint32(info.ID), SkipTrue: 1},
		bpf.RetConstant{Val: uint32(errnoAction(unix.ENOSYS))},
	}, body...)
	raw, err := bpf.Assemble(insts)
	if err != nil {
		return nil, fmt.Errorf("confine: assembling the seccomp filter: %w", err)
	}
	prog := make([]unix.SockFilter, len(raw))
	for i, in := range raw {
		prog[i] = unix.SockFilter{Code: in.Op, Jt: in.Jt, Jf: in.Jf, K: in.K}
	}
	return prog, nil
}

// errnoAction returns errno e from the filter. go-seccomp-bpf turns a
// bare ActionErrno into EPERM; a value with the errno already in its low
// bits is emitted as it is.
func errnoAction(e unix.Errno) seccomp.Action {
	return seccomp.ActionErrno | seccomp.Action(e)
}

// seccompPolicy is the filter's rules for the architecture info.
func seccompPolicy(info *arch.Info) seccomp.Policy {
	var names []string
	for _, name := range deniedSyscalls() {
		// Tables differ between architectures (no iopl on arm64); a
		// call the architecture lacks cannot be made there.
		if _, ok := info.SyscallNames[name]; ok {
			names = append(names, name)
		}
	}
	return seccomp.Policy{
		DefaultAction: seccomp.ActionAllow,
		Syscalls: []seccomp.SyscallGroup{
			{
				Action:             seccomp.ActionErrno, // EPERM
				Names:              names,
				NamesWithCondtions: conditionalDenials(),
			},
			{
				Action: errnoAction(unix.ENOSYS),
				Names:  []string{"clone3"},
			},
		},
	}
}

// conditionalDenials are the calls refused for some arguments only. The
// conditions of one entry must all hold; entries of the same call are
// alternatives. Arguments the kernel reads as 32-bit ints (a socket's
// family, an ioctl's request) are compared on their low half only or
// through an allow-list, so that setting the high half, which the kernel
// ignores, cannot slip past a rule.
func conditionalDenials() []seccomp.NameWithConditions {
	var out []seccomp.NameWithConditions
	// BitsSet matches when any of the bits is set.
	out = append(out,
		seccomp.NameWithConditions{Name: "clone", Conditions: seccomp.ArgumentConditions{
			{Argument: 0, Operation: seccomp.BitsSet, Value: namespaceFlags},
		}},
		seccomp.NameWithConditions{Name: "unshare", Conditions: seccomp.ArgumentConditions{
			{Argument: 0, Operation: seccomp.BitsSet, Value: namespaceFlags | unix.CLONE_NEWTIME},
		}},
		seccomp.NameWithConditions{Name: "socket", Conditions: notAnyOf(0, socketFamilies())},
		seccomp.NameWithConditions{Name: "socket", Conditions: append(seccomp.ArgumentConditions{
			{Argument: 0, Operation: seccomp.Equal, Value: unix.AF_NETLINK},
		}, notAnyOf(2, netlinkProtocols())...)},
		seccomp.NameWithConditions{Name: "personality", Conditions: notAnyOf(0, personas())},
		// TIOCSTI and TIOCLINUX push characters into a terminal's input:
		// typed into the user's shell once toolhost exits, if a command
		// ever held the terminal.
		seccomp.NameWithConditions{Name: "ioctl", Conditions: lowHalfEquals(1, unix.TIOCSTI)},
		seccomp.NameWithConditions{Name: "ioctl", Conditions: lowHalfEquals(1, unix.TIOCLINUX)},
	)
	return out
}

// notAnyOf holds when argument arg is none of values (compared on all
// 64 bits, so any high bit makes a value foreign: refused).
func notAnyOf(arg uint32, values []uint64) seccomp.ArgumentConditions {
	conds := make(seccomp.ArgumentConditions, 0, len(values))
	for _, v := range values {
		conds = append(conds, seccomp.Condition{Argument: arg, Operation: seccomp.NotEqual, Value: v})
	}
	return conds
}

// lowHalfEquals holds when the low 32 bits of argument arg equal v,
// whatever the high ones: no bit outside v is set (BitsNotSet of ^v)
// and each bit of v is (one BitsSet per bit, since BitsSet matches any
// bit of its value).
func lowHalfEquals(arg uint32, v uint32) seccomp.ArgumentConditions {
	conds := seccomp.ArgumentConditions{{Argument: arg, Operation: seccomp.BitsNotSet, Value: uint64(^v)}}
	for bit := uint32(1); bit != 0; bit <<= 1 {
		if v&bit != 0 {
			conds = append(conds, seccomp.Condition{Argument: arg, Operation: seccomp.BitsSet, Value: uint64(bit)})
		}
	}
	return conds
}
