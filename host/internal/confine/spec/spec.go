// Package spec is the contract between the two halves of run_command's
// confinement: the host side (package confine), which builds a Policy and
// starts the launcher, and the launcher (package launcher), which runs in
// the re-executed toolhost binary and enforces it. It holds what both
// read: the policy and what was applied, the launch message, the
// descriptors it travels on and the status lines the launcher answers
// with.
//
// It must stay plain data and never import either side: the launcher
// imports it without the host's dependencies, and the host without the
// launcher's.
package spec

import (
	"errors"
	"fmt"
	"path/filepath"
	"strings"
)

// Mode is [tools.run_command] sandbox: how much of the filesystem a
// command may write.
type Mode string

// The modes. Off runs commands with toolhost's own privileges; only the
// operator's configuration can choose it.
const (
	ModeWorkspaceWrite Mode = "workspace-write"
	ModeReadOnly       Mode = "read-only"
	ModeOff            Mode = "off"
)

// Network is [tools.run_command] network: what a command may reach.
type Network string

// The network modes. Off leaves a namespace with loopback only;
// Allowlist adds toolhost's proxy, reached through a relay in the
// namespace; On is the host's network, only by the operator's choice.
const (
	NetworkOff       Network = "off"
	NetworkAllowlist Network = "allowlist"
	NetworkOn        Network = "on"
)

// Limits bound one command's resources. Zero means no limit of that
// kind (file size and open files always get one from confine.Build; CPU
// only when set).
type Limits struct {
	CPUSeconds    uint64 `json:"cpu_seconds,omitempty"`     // RLIMIT_CPU, per process
	FileSizeBytes uint64 `json:"file_size_bytes,omitempty"` // RLIMIT_FSIZE
	OpenFiles     uint64 `json:"open_files,omitempty"`      // RLIMIT_NOFILE
	MemoryBytes   uint64 `json:"memory_bytes,omitempty"`    // cgroup memory limit, where a cgroup is available
	Pids          uint64 `json:"pids,omitempty"`            // cgroup process limit, where a cgroup is available
}

// The limits a command gets unless the operator's [tools.run_command]
// sets others: the configuration's defaults, and what confine.Build gives
// a file size or open-file limit left at zero. CPU time has none: the
// call's deadline stops a command, and a long build is legitimate.
const (
	// DefaultMemoryBytes leaves room for a compiler and a test run.
	DefaultMemoryBytes = 2 << 30
	// DefaultPids is far above any build's process count, far below a
	// fork bomb's.
	DefaultPids = 512
	// DefaultFileSizeBytes is larger than any build artefact we know,
	// small enough to stop a runaway writer.
	DefaultFileSizeBytes = 1 << 30
	DefaultOpenFiles     = 4096
)

// MountKind is how one path appears inside the command's root.
type MountKind string

// The mount kinds, applied in Policy.Mounts order.
const (
	// MountRead binds Source read-only at Target.
	MountRead MountKind = "ro"
	// MountWrite binds Source read-write at Target.
	MountWrite MountKind = "rw"
	// MountTmpfs puts an empty writable tmpfs at Target (discarded when the
	// command ends); Source is unused.
	MountTmpfs MountKind = "tmpfs"
	// MountHide makes Target unreadable: an empty read-only tmpfs for a
	// directory, /dev/null for a file. For secrets inside a tree that is
	// otherwise visible.
	MountHide MountKind = "hide"
	// MountStage shows Source at Target through an overlay whose upper
	// layer is Stage's "upper" directory (its work directory Stage's
	// "work"): what the command writes there lands in Stage, and Source
	// is left as it was, for the host to apply what it allows after the
	// command ended. For a repository's git directory, where git writes
	// its lock files next to what git outside reads as configuration.
	MountStage MountKind = "stage"
)

// Mount is one path of the command's root.
type Mount struct {
	Kind   MountKind `json:"kind"`
	Source string    `json:"source,omitempty"` // absolute path on the host
	Target string    `json:"target"`           // absolute path inside; usually Source
	Stage  string    `json:"stage,omitempty"`  // MountStage's directory on the host
}

// Policy is everything one confined command may do. The host builds it
// (confine.Build) and the launcher enforces it; it travels to the
// launcher as JSON, so it holds no secrets.
type Policy struct {
	Mode    Mode    `json:"mode"`
	Network Network `json:"network"`

	// Dir is the absolute working directory, inside a writable or
	// readable mount.
	Dir string `json:"dir"`
	// Mounts build the command's root, in order: a later mount can cover
	// part of an earlier one (a read-only .git/hooks inside the writable
	// root, a hidden ~/.ssh inside a readable tree). Only what is listed
	// exists inside, besides /proc (the namespace's own), /dev (null,
	// zero, full, random, urandom, tty, the fd links) and /dev/shm.
	Mounts []Mount `json:"mounts"`
	// Writable and Readable are the Landlock rules: the second layer,
	// which holds even if a mount is wrong. Writable paths are also
	// readable and executable.
	Writable []string `json:"writable"`
	Readable []string `json:"readable"`
	// ProxySocket is the Unix socket of toolhost's proxy (network
	// allowlist): the launcher relays ProxyPort on the namespace's
	// loopback to it.
	ProxySocket string `json:"proxy_socket,omitempty"`
	ProxyPort   uint16 `json:"proxy_port,omitempty"`
	// Limits bound resources; Cgroup is the cgroup the host placed the
	// launcher in before it started the shell, "" when none could be had.
	Limits Limits `json:"limits"`
	// Env is the command's whole environment (already sanitized, with
	// TMPDIR, the cache variables and the proxy variables set).
	Env []string `json:"env"`

	// Uncovered says, one sentence each, what confine.Build's bounded
	// search of the writable trees for nested repositories and project
	// files could not cover (a limit hit, another filesystem, an unreadable
	// directory): what lies there stays writable. For the caller to
	// record; the launcher does not need it.
	Uncovered []string `json:"-"`
	// Unprotected are the roots whose nested repositories were not all
	// protected, there being more than a call protects: the subject of
	// the line confine adds to the command's output. For the caller; the
	// launcher does not need it.
	Unprotected []string `json:"-"`
}

// Applied is what confinement a command actually ran under: recorded in
// the call's result details and the journal.
type Applied struct {
	Mode    Mode    `json:"mode"`
	Network Network `json:"network"`
	// Namespaces lists the namespaces entered: user, mount, pid, net,
	// ipc, uts.
	Namespaces []string `json:"namespaces,omitempty"`
	// LandlockABI is the Landlock ABI version enforced (0: none).
	LandlockABI int  `json:"landlock_abi,omitempty"`
	Seccomp     bool `json:"seccomp,omitempty"`
	NoNewPrivs  bool `json:"no_new_privs,omitempty"`
	// Cgroup names the controllers whose limits applied (memory, pids),
	// empty without a cgroup.
	Cgroup []string `json:"cgroup,omitempty"`
	Limits Limits   `json:"limits"`
	// Reason says why Mode is off: "set by the operator".
	Reason string `json:"reason,omitempty"`
	// Uncovered says what the search for repositories and project files
	// to keep read-only could not cover (Policy.Uncovered): a limit hit,
	// another filesystem, an unreadable directory.
	Uncovered []string `json:"uncovered,omitempty"`
	// Premounted is how many of the policy's mounts a warm launcher had
	// made before the command came (WarmMsg.Premount).
	Premounted int `json:"premounted,omitempty"`
}

// Check refuses a policy the launcher cannot apply as written, with what
// to fix. Both sides call it: the host before it starts the launcher, the
// launcher on what it read.
func (p *Policy) Check() error {
	if p == nil {
		return errors.New("no policy")
	}
	switch p.Mode {
	case ModeWorkspaceWrite, ModeReadOnly:
	default:
		return fmt.Errorf("the policy's mode %q cannot be confined (want %s or %s)", p.Mode, ModeWorkspaceWrite, ModeReadOnly)
	}
	switch p.Network {
	case NetworkOff, NetworkAllowlist, NetworkOn:
	default:
		return fmt.Errorf("the policy's network %q is unknown (want %s, %s or %s)", p.Network, NetworkOff, NetworkAllowlist, NetworkOn)
	}
	if !filepath.IsAbs(p.Dir) {
		return fmt.Errorf("the working directory %q is not an absolute path", p.Dir)
	}
	for _, m := range p.Mounts {
		if !filepath.IsAbs(m.Target) {
			return fmt.Errorf("the mount target %q is not an absolute path", m.Target)
		}
		if dir := MadeByLauncher(m.Target); dir != "" {
			return fmt.Errorf("the mount target %s is %s, which the launcher makes itself for every command; give commands a directory elsewhere", m.Target, dir)
		}
		switch m.Kind {
		case MountRead, MountWrite:
			if !filepath.IsAbs(m.Source) {
				return fmt.Errorf("the mount source %q of %s is not an absolute path", m.Source, m.Target)
			}
		case MountTmpfs, MountHide:
		case MountStage:
			if !filepath.IsAbs(m.Source) || !filepath.IsAbs(m.Stage) {
				return fmt.Errorf("the staged mount of %s needs absolute source and stage paths (got %q, %q)", m.Target, m.Source, m.Stage)
			}
		default:
			return fmt.Errorf("the mount of %s has an unknown kind %q", m.Target, m.Kind)
		}
	}
	return nil
}

// MadeByLauncher says which part of the command's root that the
// launcher makes itself target is, or lies in: the root itself, /dev or
// /proc; "" for none. The launcher makes /dev and /proc before the
// policy's mounts (a warm launcher before its command comes), so a
// mount there would cover or change them.
func MadeByLauncher(target string) string {
	t := filepath.Clean(target)
	switch {
	case t == "/":
		return "the root"
	case t == "/dev" || strings.HasPrefix(t, "/dev/"):
		return "in /dev"
	case t == "/proc" || strings.HasPrefix(t, "/proc/"):
		return "in /proc"
	}
	return ""
}
