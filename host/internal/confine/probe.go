package confine

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"
)

// Support is what this kernel and machine allow, found once at start
// (Probe). It is a plain value: Require and Doctor judge it, and a test
// can clear a piece (LandlockABI = 0) to see confinement fail closed.
type Support struct {
	// Home, set by the host, is why the user's home directory is unknown:
	// the secrets in it could not be hidden, so nothing is confined.
	Home error

	// LandlockABI is the highest Landlock ABI the kernel offers, 0 when
	// it offers none; LandlockErr then says why.
	LandlockABI int
	LandlockErr string

	// Namespaces lists the namespaces a child started by the probe could
	// enter (user, mount, pid, net, ipc, uts); NamespaceErr holds, for
	// each one it could not, the error the kernel gave.
	Namespaces   []string
	NamespaceErr map[string]string

	// The kernel's switches on user namespaces, -1 where the machine has
	// none: kernel.apparmor_restrict_unprivileged_userns (Ubuntu 23.10+),
	// user.max_user_namespaces and kernel.unprivileged_userns_clone
	// (Debian). AppArmorLabel is toolhost's own AppArmor profile
	// ("unconfined" without one); Privileged is true when toolhost runs
	// as root, which the AppArmor restriction spares.
	AppArmorRestrict  int
	AppArmorLabel     string
	MaxUserNamespaces int
	UnprivUsernsClone int
	Privileged        bool

	// Seccomp is true when the kernel takes seccomp filters with the
	// actions the filter uses (errno, trace for ENOSYS, kill); SeccompErr
	// says why not. SeccompInherited is true when toolhost itself already
	// runs under a filter (a container's), which may refuse namespaces.
	Seccomp          bool
	SeccompErr       string
	SeccompInherited bool

	// ProcCovered lists mounts on top of parts of /proc (a container's
	// masked paths): the kernel then refuses the command's own /proc.
	ProcCovered []string

	Cgroup CgroupSupport

	// Took is how long the probe ran.
	Took time.Duration
}

// CgroupSupport is where toolhost can make a cgroup for each command.
// Cgroups are optional: without one, a command's memory and process
// count are unbounded but for the rlimits, and Applied says so.
type CgroupSupport struct {
	// Unified is toolhost's own cgroup in the v2 hierarchy when it is
	// writable, "" otherwise; UnifiedControllers lists the controllers
	// (memory, pids) its children can have; UnifiedKill is true when
	// children have cgroup.kill (Linux 5.14+).
	Unified            string
	UnifiedControllers []string
	UnifiedKill        bool
	// Memory and Pids are toolhost's own cgroups in v1 memory and pids
	// hierarchies, when they are writable.
	Memory string
	Pids   string
	// Note says why a piece is missing.
	Note string
}

// Controllers names the controllers (memory, pids) a command's cgroup
// can have, from either hierarchy.
func (c CgroupSupport) Controllers() []string {
	var out []string
	for _, name := range []string{"memory", "pids"} {
		v1 := map[string]string{"memory": c.Memory, "pids": c.Pids}[name]
		if slices.Contains(c.UnifiedControllers, name) || v1 != "" {
			out = append(out, name)
		}
	}
	return out
}

// piece is one line of the doctor's report: a kernel feature, whether it
// is there, what was found, and how to get it when it is not.
type piece struct {
	name   string
	ok     bool
	detail string
	fix    string
	// needed reports whether run_command needs the piece to run confined
	// with this mode and network.
	needed func(Mode, Network) bool
}

func always(m Mode, _ Network) bool { return m != ModeOff }

func unlessNetworkOn(m Mode, n Network) bool { return m != ModeOff && n != NetworkOn }

func never(Mode, Network) bool { return false }

// pieces judges s, in the doctor's order.
func (s Support) pieces() []piece {
	ns := s.namespacePieces()
	// The AppArmor switch is about user namespaces: its line follows theirs.
	ps := []piece{s.landlockPiece(), ns[0], s.apparmorPiece()}
	ps = append(ps, ns[1:]...)
	return append(ps, s.seccompPiece(), s.procPiece(), s.cgroupPiece())
}

func (s Support) landlockPiece() piece {
	p := piece{name: "landlock", needed: always, ok: s.LandlockABI >= 1}
	switch {
	case p.ok:
		p.detail = fmt.Sprintf("ABI %d%s", s.LandlockABI, landlockScope(s.LandlockABI))
	case strings.Contains(s.LandlockErr, "not supported"):
		p.detail = "built into the kernel but not enabled (" + s.LandlockErr + ")"
		p.fix = `add landlock to the kernel's lsm= boot parameter (e.g. lsm=landlock,lockdown,yama,integrity,apparmor,bpf) and reboot`
	default:
		p.detail = "unavailable (" + orUnknown(s.LandlockErr) + ")"
		p.fix = "run a kernel with Landlock: Linux 5.13 or later built with CONFIG_SECURITY_LANDLOCK=y and landlock in its lsm= boot parameter"
	}
	return p
}

// landlockScope says what a Landlock ABI covers beyond files, the parts
// the policy relies on.
func landlockScope(abi int) string {
	switch {
	case abi >= 6:
		return " (files, TCP, abstract Unix sockets and signals scoped)"
	case abi >= 4:
		return " (files and TCP; abstract Unix sockets and signals not scoped before ABI 6)"
	default:
		return " (files only; TCP rules from ABI 4, socket and signal scoping from ABI 6)"
	}
}

// namespaceNames are the namespaces the launcher enters, in the doctor's
// order.
var namespaceNames = []string{"user", "mount", "pid", "net", "ipc", "uts"}

func (s Support) namespacePieces() []piece {
	var ps []piece
	for _, ns := range namespaceNames {
		p := piece{name: ns + " namespace", needed: always, ok: slices.Contains(s.Namespaces, ns)}
		if ns == "net" {
			p.needed = unlessNetworkOn
		}
		if p.ok {
			p.detail = "a child entered one"
		} else {
			p.detail = "refused (" + orUnknown(s.NamespaceErr[ns]) + ")"
			p.fix = s.namespaceFix(ns)
		}
		ps = append(ps, p)
	}
	return ps
}

// namespaceFix names the setting that most likely refused namespaces.
func (s Support) namespaceFix(ns string) string {
	switch {
	case s.MaxUserNamespaces == 0:
		return "sysctl -w user.max_user_namespaces=15000 (and set it in /etc/sysctl.d to keep it)"
	case s.UnprivUsernsClone == 0 && !s.Privileged:
		return "sysctl -w kernel.unprivileged_userns_clone=1 (and set it in /etc/sysctl.d to keep it)"
	case s.SeccompInherited:
		return "toolhost runs under a seccomp filter that refuses namespaces (a container's): run the container with a seccomp profile allowing unshare and clone with namespace flags, or toolhost outside it"
	case ns != "user" && ns != "mount" && slices.Contains(s.Namespaces, "user"):
		return "run a kernel built with CONFIG_" + strings.ToUpper(ns) + "_NS=y"
	default:
		return "allow unprivileged user namespaces for toolhost (see the apparmor line, user.max_user_namespaces and kernel.unprivileged_userns_clone)"
	}
}

func (s Support) apparmorPiece() piece {
	p := piece{name: "apparmor", needed: always, ok: true}
	switch {
	case s.AppArmorRestrict < 0:
		p.detail = "no restriction on user namespaces (kernel.apparmor_restrict_unprivileged_userns absent)"
	case s.AppArmorRestrict == 0:
		p.detail = "kernel.apparmor_restrict_unprivileged_userns = 0"
	case s.Privileged:
		p.detail = "kernel.apparmor_restrict_unprivileged_userns = 1, which spares toolhost: it runs as root"
	case s.AppArmorLabel != "" && s.AppArmorLabel != "unconfined":
		p.detail = fmt.Sprintf("kernel.apparmor_restrict_unprivileged_userns = 1; toolhost runs under the profile %q, which must grant userns", s.AppArmorLabel)
	default:
		p.ok = false
		p.detail = "kernel.apparmor_restrict_unprivileged_userns = 1: user namespaces come without the capabilities the launcher needs to mount"
		p.fix = "give the toolhost binary an AppArmor profile granting userns (/etc/apparmor.d/toolhost: abi <abi/4.0>, include <tunables/global>, profile toolhost /path/to/toolhost flags=(unconfined) { userns, }; then apparmor_parser -r /etc/apparmor.d/toolhost), or sysctl -w kernel.apparmor_restrict_unprivileged_userns=0"
	}
	return p
}

func (s Support) seccompPiece() piece {
	p := piece{name: "seccomp", needed: always, ok: s.Seccomp}
	if p.ok {
		p.detail = "filters with errno, trace and kill actions"
		if s.SeccompInherited {
			p.detail += "; toolhost itself already runs under a filter"
		}
		return p
	}
	p.detail = "unavailable (" + orUnknown(s.SeccompErr) + ")"
	p.fix = "run a kernel built with CONFIG_SECCOMP_FILTER=y"
	return p
}

func (s Support) procPiece() piece {
	p := piece{name: "proc", needed: always, ok: len(s.ProcCovered) == 0}
	if p.ok {
		p.detail = "/proc is fully visible: a command's PID namespace can mount its own"
		return p
	}
	p.detail = "parts of /proc are covered (" + strings.Join(s.ProcCovered, ", ") + "): the kernel refuses a new /proc in a user namespace"
	p.fix = "run toolhost where /proc is not masked (a container: docker run --security-opt systempaths=unconfined, podman --security-opt unmask=ALL)"
	return p
}

func (s Support) cgroupPiece() piece {
	c := s.Cgroup
	p := piece{name: "cgroups", needed: never}
	var have []string
	if c.Unified != "" {
		what := "kill"
		if !c.UnifiedKill {
			what = "grouping (no cgroup.kill)"
		}
		if len(c.UnifiedControllers) > 0 {
			what += ", " + strings.Join(c.UnifiedControllers, ", ")
		}
		have = append(have, fmt.Sprintf("v2 %s (%s)", c.Unified, what))
	}
	if c.Memory != "" {
		have = append(have, "v1 memory "+c.Memory)
	}
	if c.Pids != "" {
		have = append(have, "v1 pids "+c.Pids)
	}
	ctl := c.Controllers()
	p.ok = len(ctl) == 2
	switch {
	case len(have) == 0:
		p.detail = "none writable"
	default:
		p.detail = strings.Join(have, "; ")
	}
	if len(ctl) > 0 {
		p.detail += ": " + strings.Join(ctl, " and ") + " limits apply"
	}
	if c.Note != "" {
		p.detail += " (" + c.Note + ")"
	}
	if !p.ok {
		p.detail += "; memory_max and pids_max cannot apply, commands get rlimits only"
		p.fix = "give toolhost a delegated cgroup v2 with the memory and pids controllers: systemd-run --user --scope -p Delegate=yes toolhost ..."
	}
	return p
}

func orUnknown(s string) string {
	if s == "" {
		return "no reason given"
	}
	return s
}

// Require returns nil when commands can run confined with mode m and
// network n here, else an error naming each missing piece and its fix.
// There is no fallback: the caller does not run the command.
func (s Support) Require(m Mode, n Network) error {
	if m == ModeOff {
		return nil
	}
	if s.Home != nil {
		return fmt.Errorf("%w (sandbox %q, network %q): the command did not run: %w (toolhost sandbox doctor shows the rest)", ErrUnconfinable, m, n, s.Home)
	}
	var missing []string
	for _, p := range s.pieces() {
		if p.needed(m, n) && !p.ok {
			missing = append(missing, fmt.Sprintf("%s: %s; fix: %s", p.name, p.detail, p.fix))
		}
	}
	if len(missing) == 0 {
		return nil
	}
	return fmt.Errorf("%w (sandbox %q, network %q): the command did not run and no retry or tool argument changes that; the operator must fix the machine (toolhost sandbox doctor shows every piece): %s",
		ErrUnconfinable, m, n, strings.Join(missing, "; "))
}

// ErrUnconfinable is the error Require wraps.
var ErrUnconfinable = errors.New("run_command cannot be confined on this machine")

// Summary is one line for the log at start: each piece, ok or missing.
func (s Support) Summary() string {
	var b strings.Builder
	for i, p := range s.pieces() {
		if i > 0 {
			b.WriteByte(' ')
		}
		state := "ok"
		if !p.ok {
			state = "missing"
		}
		if p.name == "landlock" && p.ok {
			state = fmt.Sprintf("abi%d", s.LandlockABI)
		}
		if p.name == "cgroups" {
			state = strings.Join(s.Cgroup.Controllers(), "+")
			if state == "" {
				state = "none"
			}
		}
		fmt.Fprintf(&b, "%s=%s", strings.ReplaceAll(p.name, " namespace", "ns"), state)
	}
	fmt.Fprintf(&b, " probe=%s", s.Took.Round(10*time.Microsecond))
	return b.String()
}
