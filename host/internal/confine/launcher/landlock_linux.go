package launcher

import (
	"errors"
	"fmt"
	"os"

	"github.com/landlock-lsm/go-landlock/landlock"
	ll "github.com/landlock-lsm/go-landlock/landlock/syscall"

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
// process, all threads, and returns the Landlock ABI version enforced:
// min(kernel's, 7). Everything the process starts afterwards inherits
// the rules. A kernel without Landlock is an error, never a silent
// no-op: best effort only trades rights a kernel lacks, not the wall.
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
	cfg := landlockConfig()
	rules, err := landlockRules(p, abi)
	if err != nil {
		return 0, err
	}
	if err := cfg.Restrict(rules...); err != nil {
		return 0, fmt.Errorf("confine: enforcing Landlock rules (ABI %d): %w", abi, err)
	}
	return abi, nil
}

// landlockConfig is V7 in best-effort mode without TCP rights (see
// restrictLandlock).
func landlockConfig() landlock.Config {
	cfg := landlock.V7
	cfg.HandledAccessNet = 0
	return cfg.BestEffort()
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

// landlockRules turns p's lists into go-landlock rules. A path that does
// not exist is skipped: confine.Build lists every place a toolchain may
// live. A listed path that is a file gets file rights only, which the
// kernel requires.
func landlockRules(p *spec.Policy, abi int) ([]landlock.Rule, error) {
	var rules []landlock.Rule
	add := func(path string, dir, file func(...string) landlock.FSRule) error {
		fi, err := os.Stat(path)
		if errors.Is(err, os.ErrNotExist) {
			return nil
		}
		if err != nil {
			return fmt.Errorf("confine: Landlock rule for %s: %w; the command's policy lists it: fix its permissions, or remove it from [tools.run_command] extra_writable if it is listed there", path, err)
		}
		if fi.IsDir() {
			rules = append(rules, dir(path).IgnoreIfMissing())
		} else {
			rules = append(rules, file(path).IgnoreIfMissing())
		}
		return nil
	}
	rwDirs := landlock.RWDirs
	if abi >= 2 {
		// Refer exists from ABI 2. Asked of an ABI 1 kernel, best effort
		// would drop Landlock altogether, so there mv between
		// directories fails (EXDEV; mv then copies) instead.
		rwDirs = func(paths ...string) landlock.FSRule { return landlock.RWDirs(paths...).WithRefer() }
	}
	for _, path := range p.Writable {
		if err := add(path, rwDirs, landlock.RWFiles); err != nil {
			return nil, err
		}
	}
	for _, path := range append(p.Readable, "/proc") {
		if err := add(path, landlock.RODirs, landlock.ROFiles); err != nil {
			return nil, err
		}
	}
	rules = append(rules, landlock.RWFiles(devFiles()...).IgnoreIfMissing(),
		landlock.RWFiles(devIoctl()...).WithIoctlDev().IgnoreIfMissing())
	return rules, nil
}
