package launcher

import (
	"errors"
	"fmt"
	"slices"

	ll "github.com/landlock-lsm/go-landlock/landlock/syscall"
	"golang.org/x/sys/unix"

	"github.com/toolhost/toolhost/host/internal/confine/spec"
)

// landlockPinnedABI is the Landlock ABI the rules are written for: V7
// adds nothing over V6 that confinement uses (audit logging only), and
// pinning keeps a newer kernel from handling rights (V9's pathname Unix
// sockets, V10's UDP) that the rules below were never written to grant.
const landlockPinnedABI = 7

// devFiles are the device files every command may read and write: the
// launcher binds them into the command's /dev.
func devFiles() []string {
	return []string{"/dev/null", "/dev/zero", "/dev/full", "/dev/random", "/dev/urandom", "/dev/tty"}
}

// devIoctl are the device files that also keep their ioctls. Landlock
// (ABI 5+) otherwise refuses ioctls on device files opened inside the
// domain: /dev/tty needs them for a program that asks the terminal its
// size or mode, and /dev/null has no ioctls of its own, so granting it
// only keeps isatty() answering ENOTTY instead of EACCES.
func devIoctl() []string { return []string{"/dev/null", "/dev/tty"} }

// restrictLandlock applies p's Writable and Readable rules to the calling
// thread and returns the Landlock ABI version enforced: min(kernel's, 7).
// Everything the thread starts afterwards inherits the rules. A kernel
// without Landlock is an error, never a silent no-op: best effort only
// trades rights a kernel lacks, not the wall. The thread must have
// no_new_privs (setNoNewPrivs).
//
// The thread is the one Main locked, which forks the shell
// (startShell), as for no_new_privs and the dropped capabilities: the
// command inherits that thread's domain and nothing of the launcher's
// other threads. Restricting them too, as go-landlock's Restrict does
// on kernels before ABI 8, stops the launcher's world twice (one
// prctl and one landlock_restrict_self on each thread), which cost 0.4
// to 0.8 ms of each confined start on a 2-core machine. The launcher's
// other threads keep more than the command has (no Landlock domain,
// their capabilities in the namespaces), and nothing of the command
// reaches them: Landlock refuses a ptrace, and so /proc/<pid>/mem and
// pidfd_getfd, from inside a domain to a task outside it; seccomp
// refuses ptrace, process_vm_* and pidfd_getfd outright; the launcher
// is undumpable (guard), which closes /proc/1/fd and the like; and
// scoping (ABI 6+) keeps the command's signals inside its domain.
// TestLauncherOutOfReach checks each of them from a command.
//
// The rules:
//   - Writable: read, write, execute, create and remove below each path
//     (a file gets the file rights only), with refer so that mv and
//     hard links work between directories of the writable trees. Refer
//     never lets a file gain rights: the kernel refuses a link or rename
//     that would make it writable where it was only readable.
//   - Readable: read and execute.
//   - The device files of the command's /dev read-write.
//   - /proc read-only: a shell reads /proc/self (fd, status, maps); the
//     few writable files there (comm, oom_score_adj, attr, and the mem
//     of a process of the same command, which is ptrace by another
//     name) are left out, as no build needs them. Reading through
//     /proc/self/fd/N reaches the file N refers to only when the rules
//     grant it; pipes and sockets are always reachable.
//   - Scoped (ABI 6+): no abstract Unix socket outside the domain can be
//     connected (D-Bus, X11, a host service in the host's network
//     namespace when network is on) and no signal reaches a process
//     outside it (toolhost, the user's shell).
//
// TCP is not handled: the network namespace confines it, and the rules
// would otherwise refuse the namespace's own loopback that tests and the
// allowlist proxy's relay use.
func restrictLandlock(p *spec.Policy) (int, error) {
	abi, err := landlockABI()
	if err != nil {
		return 0, err
	}
	handled := handledAccessFS(abi)
	attr := ll.RulesetAttr{HandledAccessFS: handled, Scoped: handledScopes(abi)}
	ruleset, err := ll.LandlockCreateRuleset(&attr, 0)
	if err != nil {
		return 0, fmt.Errorf("confine: creating the Landlock ruleset (ABI %d): %w", abi, err)
	}
	defer unix.Close(ruleset)
	if err := addLandlockRules(ruleset, p, abi, handled); err != nil {
		return 0, err
	}
	if err := ll.LandlockRestrictSelf(ruleset, 0); err != nil {
		return 0, fmt.Errorf("confine: enforcing Landlock rules (ABI %d): %w", abi, err)
	}
	return abi, nil
}

// The rights of the rules, as go-landlock's RODirs, RWDirs, ROFiles and
// RWFiles grant them.
const (
	accessRead  = ll.AccessFSExecute | ll.AccessFSReadFile | ll.AccessFSReadDir
	accessWrite = ll.AccessFSWriteFile | ll.AccessFSRemoveDir | ll.AccessFSRemoveFile | ll.AccessFSMakeChar |
		ll.AccessFSMakeDir | ll.AccessFSMakeReg | ll.AccessFSMakeSock | ll.AccessFSMakeFifo |
		ll.AccessFSMakeBlock | ll.AccessFSMakeSym | ll.AccessFSTruncate
	// accessFile are the rights a rule on a file, not a directory, may
	// hold: the kernel refuses the others there.
	accessFile = ll.AccessFSExecute | ll.AccessFSWriteFile | ll.AccessFSReadFile | ll.AccessFSTruncate | ll.AccessFSIoctlDev
)

// handledAccessFS are the filesystem rights Landlock ABI abi handles,
// all of them: refer from ABI 2, truncate from 3, ioctl on devices from
// 5.
func handledAccessFS(abi int) uint64 {
	switch {
	case abi >= 5:
		return 1<<16 - 1
	case abi >= 3:
		return 1<<15 - 1
	case abi == 2:
		return 1<<14 - 1
	default:
		return 1<<13 - 1
	}
}

// handledScopes are the scopes of ABI abi: abstract Unix sockets and
// signals from ABI 6.
func handledScopes(abi int) uint64 {
	if abi >= 6 {
		return ll.ScopeAbstractUnixSocket | ll.ScopeSignal
	}
	return 0
}

// landlockABI returns the ABI that restrictLandlock enforces on this
// kernel, or an error naming the fix when the kernel has none.
func landlockABI() (int, error) {
	v, err := ll.LandlockGetABIVersion()
	errata := 0
	if err == nil && v >= 6 {
		if errata, err = ll.LandlockGetErrata(); err != nil {
			errata, err = 0, nil // an erratum not known fixed is not fixed
		}
	}
	return landlockLevel(v, errata, err)
}

// landlockLevel is the ABI enforced on a kernel that reports version v
// (or err) and errata: v capped at the pinned ABI, 0 refused.
func landlockLevel(v, errata int, err error) (int, error) {
	if err != nil || v < 1 {
		if err == nil {
			err = errors.New("the kernel reports ABI 0")
		}
		return 0, fmt.Errorf("confine: Landlock is unavailable (%w), and commands do not run without it: "+
			"run a kernel built with CONFIG_SECURITY_LANDLOCK=y (Linux 5.13 or later) that lists landlock in its lsm= boot parameter "+
			"(e.g. lsm=landlock,lockdown,yama,integrity,apparmor,bpf), then check with toolhost sandbox doctor", err)
	}
	// go-landlock treats an ABI 6+ kernel without the fix of the signal
	// scoping erratum (bit 1) as ABI 5, and enforces that; so does the
	// recorded level.
	if v >= 6 && errata&0x2 == 0 {
		v = 5
	}
	return min(v, landlockPinnedABI), nil
}

// addLandlockRules adds p's rules to ruleset, each path's rights cut
// to those handled. A path that does not exist is skipped:
// confine.Build lists every place a toolchain may live. A listed path
// that is a file gets file rights only, which the kernel requires.
func addLandlockRules(ruleset int, p *spec.Policy, abi int, handled uint64) error {
	var rw uint64 = accessRead | accessWrite
	if abi >= 2 {
		// Refer exists from ABI 2. On ABI 1, mv between directories
		// fails (EXDEV; mv then copies) instead.
		rw |= ll.AccessFSRefer
	}
	add := func(path string, access uint64) error {
		fd, err := unix.Open(path, unix.O_PATH|unix.O_CLOEXEC, 0)
		if errors.Is(err, unix.ENOENT) {
			return nil
		}
		if err != nil {
			return fmt.Errorf("confine: Landlock rule for %s: %w; the command's policy lists it: fix its permissions, or remove it from [tools.run_command] extra_writable if it is listed there", path, err)
		}
		defer unix.Close(fd)
		var st unix.Stat_t
		if err := unix.Fstat(fd, &st); err != nil {
			return fmt.Errorf("confine: Landlock rule for %s: %w", path, err)
		}
		if st.Mode&unix.S_IFMT != unix.S_IFDIR {
			access &= accessFile
		}
		if access &= handled; access == 0 {
			return nil
		}
		attr := ll.PathBeneathAttr{ParentFd: fd, AllowedAccess: access}
		if err := ll.LandlockAddPathBeneathRule(ruleset, &attr, 0); err != nil {
			return fmt.Errorf("confine: Landlock rule for %s: %w", path, err)
		}
		return nil
	}
	for _, path := range p.Writable {
		if err := add(path, rw); err != nil {
			return err
		}
	}
	for _, path := range append(p.Readable, "/proc") {
		if err := add(path, accessRead); err != nil {
			return err
		}
	}
	for _, path := range devFiles() {
		access := rw
		if slices.Contains(devIoctl(), path) {
			access |= ll.AccessFSIoctlDev
		}
		if err := add(path, access); err != nil {
			return err
		}
	}
	return nil
}
