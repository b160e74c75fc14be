package confine

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

// Probe finds what the kernel allows. It starts one short process (true,
// in the namespaces the launcher enters) and reads a few files; it
// changes nothing.
func Probe(ctx context.Context) Support {
	start := time.Now()
	s := Support{
		AppArmorRestrict:  readSysctl("/proc/sys/kernel/apparmor_restrict_unprivileged_userns"),
		AppArmorLabel:     apparmorLabel(),
		MaxUserNamespaces: readSysctl("/proc/sys/user/max_user_namespaces"),
		UnprivUsernsClone: readSysctl("/proc/sys/kernel/unprivileged_userns_clone"),
		Privileged:        os.Geteuid() == 0,
		SeccompInherited:  seccompInherited(),
	}
	s.LandlockABI, s.LandlockErr = probeLandlock()
	s.Namespaces, s.NamespaceErr = probeNamespaces(ctx)
	s.Seccomp, s.SeccompErr = probeSeccomp()
	mounts, err := readMountinfo()
	if err != nil {
		s.ProcCovered = []string{err.Error()}
		s.Cgroup.Note = err.Error()
	} else {
		s.ProcCovered = procCovered(mounts)
		s.Cgroup = probeCgroups(mounts)
	}
	s.Took = time.Since(start)
	return s
}

// probeLandlock asks the kernel for its Landlock ABI version.
func probeLandlock() (int, string) {
	abi, _, errno := unix.Syscall(unix.SYS_LANDLOCK_CREATE_RULESET, 0, 0, unix.LANDLOCK_CREATE_RULESET_VERSION)
	switch {
	case errno == unix.EOPNOTSUPP:
		return 0, "landlock_create_ruleset: operation not supported: Landlock is not in the kernel's lsm= list"
	case errno == unix.ENOSYS:
		return 0, "landlock_create_ruleset: function not implemented: the kernel lacks Landlock"
	case errno != 0:
		return 0, "landlock_create_ruleset: " + errno.Error()
	}
	return int(abi), ""
}

// probeNamespaces starts true in every namespace the launcher enters,
// mapped to the caller's own uid and gid as the launcher is. Only when
// that fails does it try them one by one, to name the one refused.
func probeNamespaces(ctx context.Context) ([]string, map[string]string) {
	flags := map[string]uintptr{
		"mount": syscall.CLONE_NEWNS, "pid": syscall.CLONE_NEWPID, "net": syscall.CLONE_NEWNET,
		"ipc": syscall.CLONE_NEWIPC, "uts": syscall.CLONE_NEWUTS,
	}
	all := uintptr(0)
	for _, f := range flags {
		all |= f
	}
	if err := startIn(ctx, all); err == nil {
		return namespaceNames, nil
	}
	errs := map[string]string{}
	if err := startIn(ctx, 0); err != nil {
		for _, ns := range namespaceNames {
			errs[ns] = "user namespace: " + err.Error()
		}
		return nil, errs
	}
	ok := []string{"user"}
	for _, ns := range namespaceNames[1:] {
		if err := startIn(ctx, flags[ns]); err != nil {
			errs[ns] = err.Error()
			continue
		}
		ok = append(ok, ns)
	}
	return ok, errs
}

// startIn runs true in a new user namespace plus the namespaces of flags.
func startIn(ctx context.Context, flags uintptr) error {
	path := trueBinary()
	cmd := exec.CommandContext(ctx, path)
	uid, gid := os.Getuid(), os.Getgid()
	cmd.SysProcAttr = &syscall.SysProcAttr{
		Cloneflags:  syscall.CLONE_NEWUSER | flags,
		UidMappings: []syscall.SysProcIDMap{{ContainerID: uid, HostID: uid, Size: 1}},
		GidMappings: []syscall.SysProcIDMap{{ContainerID: gid, HostID: gid, Size: 1}},
		Pdeathsig:   syscall.SIGKILL,
	}
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("starting %s: %w", path, err)
	}
	return nil
}

// trueBinary is true's path, looked for in the system's directories
// before $PATH: the probe should not run whatever a PATH entry offers.
func trueBinary() string {
	for _, p := range []string{"/usr/bin/true", "/bin/true"} {
		if fi, err := os.Stat(p); err == nil && fi.Mode().IsRegular() {
			return p
		}
	}
	if p, err := exec.LookPath("true"); err == nil {
		return p
	}
	return "/bin/true"
}

// readSysctl reads an integer switch under /proc/sys, -1 when the
// machine does not have it.
func readSysctl(path string) int {
	data, err := os.ReadFile(path)
	if err != nil {
		return -1
	}
	n, err := strconv.Atoi(strings.TrimSpace(string(data)))
	if err != nil {
		return -1
	}
	return n
}

// apparmorLabel is toolhost's AppArmor profile, "" without AppArmor.
func apparmorLabel() string {
	for _, path := range []string{"/proc/self/attr/apparmor/current", "/proc/self/attr/current"} {
		if data, err := os.ReadFile(path); err == nil {
			label := strings.TrimSpace(strings.TrimRight(string(data), "\x00"))
			// "toolhost (enforce)": the mode is not part of the name.
			label, _, _ = strings.Cut(label, " (")
			return label
		}
	}
	return ""
}

// probeSeccomp asks the kernel whether it has the filter actions the
// launcher's filter uses, without installing one.
func probeSeccomp() (bool, string) {
	if _, err := unix.PrctlRetInt(unix.PR_GET_SECCOMP, 0, 0, 0, 0); err != nil {
		return false, "prctl(PR_GET_SECCOMP): " + err.Error() + ": the kernel lacks seccomp"
	}
	for _, a := range []struct {
		name   string
		action uint32
	}{{"errno", unix.SECCOMP_RET_ERRNO}, {"trace", unix.SECCOMP_RET_TRACE}, {"kill_process", unix.SECCOMP_RET_KILL_PROCESS}} {
		action := a.action
		_, _, errno := unix.Syscall(unix.SYS_SECCOMP, unix.SECCOMP_GET_ACTION_AVAIL, 0, uintptr(unsafe.Pointer(&action)))
		if errno != 0 {
			return false, fmt.Sprintf("seccomp action %s: %v", a.name, errno)
		}
	}
	return true, ""
}

// seccompInherited reports whether toolhost already runs under a seccomp
// filter (Seccomp: 2 in /proc/self/status).
func seccompInherited() bool {
	data, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return false
	}
	for line := range strings.Lines(string(data)) {
		if v, ok := strings.CutPrefix(line, "Seccomp:"); ok {
			return strings.TrimSpace(v) == "2"
		}
	}
	return false
}

// probeCgroups describes, without changing anything, the cgroups
// NewCgroup can make.
func probeCgroups(mounts []mountEntry) CgroupSupport {
	lay := findCgroups(mounts)
	cs := CgroupSupport{Unified: lay.unified, Memory: lay.memory, Pids: lay.pids}
	if lay.unified == "" {
		return cs
	}
	_, err := os.Stat(filepath.Join(lay.unified, "cgroup.kill"))
	// The top cgroup has no cgroup.kill of its own; its children have one
	// from Linux 5.14, as do those of any cgroup that has one.
	cs.UnifiedKill = err == nil || lay.unifiedIsTop && kernelAtLeast(5, 14)
	avail := unifiedControllers(lay, []string{"memory", "pids"})
	if len(avail) == 0 {
		return cs
	}
	sub := strings.Fields(readCgroupFile(filepath.Join(lay.unified, "cgroup.subtree_control")))
	handed := !slices.ContainsFunc(avail, func(k string) bool { return !slices.Contains(sub, k) })
	// The top cgroup may hold every process of the machine: its list is
	// read only when it matters.
	if lay.unifiedIsTop || handed || !slices.ContainsFunc(readPids(lay.unified), func(pid int) bool { return pid != os.Getpid() }) {
		cs.UnifiedControllers = avail
		return cs
	}
	cs.Note = fmt.Sprintf("the v2 cgroup %s holds other processes than toolhost, so it cannot hand memory and pids down", lay.unified)
	return cs
}

// procCovered lists mounts on parts of /proc. The kernel refuses a new
// /proc in a user namespace unless every such mount sits on an empty
// directory of procfs; binfmt_misc's is the one that does.
func procCovered(mounts []mountEntry) []string {
	var out []string
	for _, m := range mounts {
		if strings.HasPrefix(m.point, "/proc/") && m.point != "/proc/sys/fs/binfmt_misc" {
			out = append(out, m.point)
		}
	}
	return out
}
