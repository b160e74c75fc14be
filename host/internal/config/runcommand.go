package config

import (
	"errors"
	"fmt"
	"math/bits"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/toolhost/toolhost/host/internal/confine/spec"
	"github.com/toolhost/toolhost/host/internal/egress"
	"github.com/toolhost/toolhost/host/internal/secrets"
)

// CommandSandbox is tools.run_command.sandbox: how much of the filesystem
// a command may write. It is the confinement's own type (spec.Mode), so
// the value the operator writes is the one the launcher enforces, with
// nothing to convert between them.
type CommandSandbox = spec.Mode

// Sandbox modes, least strict first: off runs commands with toolhost's
// own privileges and only the operator's configuration may choose it.
const (
	SandboxOff            = spec.ModeOff
	SandboxWorkspaceWrite = spec.ModeWorkspaceWrite
	SandboxReadOnly       = spec.ModeReadOnly
)

// CommandNetwork is tools.run_command.network: what a command may reach;
// the confinement's own type (spec.Network), as CommandSandbox is.
type CommandNetwork = spec.Network

// Network modes, least strict first: on is the host's network, allowlist
// the hosts of allowed_domains through toolhost's proxy, off loopback
// only. Only the operator's configuration may choose on or allowlist.
const (
	NetworkOn        = spec.NetworkOn
	NetworkAllowlist = spec.NetworkAllowlist
	NetworkOff       = spec.NetworkOff
)

// RunCommand is [tools.run_command]: the kernel's confinement of the
// commands run_command starts. A project file or a profile may
// only narrow it; only the operator's configuration turns the sandbox
// off, opens the network, names domains or writable directories, shares
// caches or raises a limit.
type RunCommand struct {
	Sandbox CommandSandbox `mapstructure:"sandbox"`
	Network CommandNetwork `mapstructure:"network"`
	// AllowedDomains are the hosts the proxy lets commands reach when
	// Network is allowlist: names, "*.example.com" patterns or literal
	// addresses. None allows nothing. DeniedDomains win over them.
	AllowedDomains []string `mapstructure:"allowed_domains"`
	DeniedDomains  []string `mapstructure:"denied_domains"`
	// ExtraWritable are absolute directories commands may write besides
	// the roots and their private temporary directory.
	ExtraWritable []string `mapstructure:"extra_writable"`
	// ShareCaches gives commands the user's own tool caches, writable,
	// instead of a per-root cache toolhost owns.
	ShareCaches bool `mapstructure:"share_caches"`
	// MemoryMax is the memory of one call's processes, in bytes, where a
	// cgroup is available; 0 sets no limit.
	MemoryMax uint64 `mapstructure:"memory_max"`
	// PidsMax is the number of processes of one call, where a cgroup is
	// available; 0 sets no limit.
	PidsMax int `mapstructure:"pids_max"`
	// CPUSeconds is the CPU time of each process (RLIMIT_CPU); 0 sets
	// none, and the call's timeout still stops the command.
	CPUSeconds int `mapstructure:"cpu_seconds"`
	// MaxFileSize is the largest file a command may write, in bytes
	// (RLIMIT_FSIZE); always set.
	MaxFileSize uint64 `mapstructure:"max_file_size"`
	// OpenFiles is the most files one process may hold open
	// (RLIMIT_NOFILE); always set.
	OpenFiles int `mapstructure:"open_files"`
	// MaxTimeoutMS is the longest timeout_ms a call may ask for; the
	// call's deadline (tools.timeouts.shell_commands_seconds) bounds
	// every command too, whichever is shorter.
	MaxTimeoutMS int `mapstructure:"max_timeout_ms"`
	// NonInteractiveEnv (NAME=value entries) is set for every command
	// before the variables a call adds, so that nothing waits for input
	// that never comes; empty sets none.
	NonInteractiveEnv []string `mapstructure:"noninteractive_env"`
}

// DefaultMaxTimeoutMS is max_timeout_ms's default: ten minutes.
const DefaultMaxTimeoutMS = 600_000

// DefaultNonInteractiveEnv returns noninteractive_env's default: what
// tells git, package managers and pagers that no one is there to answer
// (CI=1), and plain output. Each call returns a fresh slice.
func DefaultNonInteractiveEnv() []string {
	return []string{
		"CI=1", "GIT_TERMINAL_PROMPT=0", "GIT_PAGER=cat", "PAGER=cat",
		"DEBIAN_FRONTEND=noninteractive", "npm_config_yes=true", "PIP_NO_INPUT=1",
		"TERM=dumb", "NO_COLOR=1",
	}
}

// Bounds of [tools.run_command]'s limits; the defaults are the
// confinement's (spec.DefaultMemoryBytes and the others).
const (
	// MinCommandMemoryMax is the least memory limit: below it a shell
	// and a compiler cannot start, and the failure would look like a bug.
	MinCommandMemoryMax = 16 << 20
	// MinCommandPidsMax leaves room for the launcher, the shell and a
	// pipeline.
	MinCommandPidsMax = 8
	// MinCommandOpenFiles leaves room for the standard streams, a shell's
	// own descriptors and a pipeline.
	MinCommandOpenFiles = 16
	// MaxCommandOpenFiles is Linux's default fs.nr_open: an unprivileged
	// process cannot raise its limit above it.
	MaxCommandOpenFiles = 1 << 20
)

// defaultRunCommand is [tools.run_command] as Default has it: confined,
// writing only the roots, no network.
func defaultRunCommand() RunCommand {
	return RunCommand{
		Sandbox:        SandboxWorkspaceWrite,
		Network:        NetworkOff,
		AllowedDomains: []string{},
		DeniedDomains:  []string{},
		ExtraWritable:  []string{},
		MemoryMax:      spec.DefaultMemoryBytes,
		PidsMax:        spec.DefaultPids,
		MaxFileSize:    spec.DefaultFileSizeBytes,
		OpenFiles:      spec.DefaultOpenFiles,

		MaxTimeoutMS:      DefaultMaxTimeoutMS,
		NonInteractiveEnv: DefaultNonInteractiveEnv(),
	}
}

// forProfile is r narrowed by profile p's sandbox and network: the stricter of each; a profile never loosens the policy. The
// engine applies profiles itself, through Confiner.Narrow; this mirrors
// that order so that validation can tell what a profile leaves in force.
func (r RunCommand) forProfile(p Profile) RunCommand {
	out := r
	out.AllowedDomains = slices.Clone(r.AllowedDomains)
	out.DeniedDomains = slices.Clone(r.DeniedDomains)
	out.ExtraWritable = slices.Clone(r.ExtraWritable)
	out.NonInteractiveEnv = slices.Clone(r.NonInteractiveEnv)
	if p.Sandbox != "" {
		stricter(&out.Sandbox, p.Sandbox, SandboxOff, SandboxWorkspaceWrite, SandboxReadOnly)
	}
	if p.Network != "" {
		stricter(&out.Network, p.Network, NetworkOn, NetworkAllowlist, NetworkOff)
	}
	return out
}

// validate checks what can be checked without the filesystem; Load checks
// extra_writable's directories on it (CheckExtraWritable).
func (r RunCommand) validate() error {
	const key = "tools.run_command."
	checks := []struct {
		key string
		err error
	}{
		{"sandbox", oneOf(string(r.Sandbox), SandboxWorkspaceWrite, SandboxReadOnly, SandboxOff)},
		{"network", oneOf(string(r.Network), NetworkOff, NetworkAllowlist, NetworkOn)},
		{"sandbox", r.unconfinedNetwork()},
		{"allowed_domains", domains(r.AllowedDomains)},
		{"denied_domains", domains(r.DeniedDomains)},
		{"extra_writable", absoluteDirs(r.ExtraWritable)},
		{"memory_max", limitOrNone(r.MemoryMax, MinCommandMemoryMax, formatSize)},
		{"pids_max", limitOrNone(r.PidsMax, MinCommandPidsMax, strconv.Itoa)},
		{"cpu_seconds", limitOrNone(r.CPUSeconds, 1, strconv.Itoa)},
		{"max_file_size", positiveSize(r.MaxFileSize)},
		{"open_files", between(r.OpenFiles, MinCommandOpenFiles, MaxCommandOpenFiles)},
		{"max_timeout_ms", positiveMS(r.MaxTimeoutMS)},
		{"noninteractive_env", assignments(r.NonInteractiveEnv)},
	}
	for _, c := range checks {
		if c.err != nil {
			return &KeyError{Key: key + c.key, Err: c.err}
		}
	}
	return nil
}

// unconfinedNetwork refuses sandbox = "off" with a network other than
// "on": an unconfined command has the host's network, and a setting that
// says otherwise would mislead whoever reads it.
func (r RunCommand) unconfinedNetwork() error {
	if r.Sandbox != SandboxOff || r.Network == NetworkOn {
		return nil
	}
	return fmt.Errorf(`"off" runs commands unconfined, with the host's network, so network = %q cannot hold; set network = "on" as well to say so, or keep sandbox = "workspace-write" or "read-only"`, r.Network)
}

// limitOrNone accepts 0 (no limit) or at least least.
func limitOrNone[T int | uint64](n, least T, show func(T) string) error {
	if n == 0 || n >= least {
		return nil
	}
	if n < 0 {
		return fmt.Errorf("must be 0 (no limit) or at least %s, got %s", show(least), show(n))
	}
	return fmt.Errorf("%s is too low for a command to start: use at least %s, or 0 for no limit", show(n), show(least))
}

func positiveSize(n uint64) error {
	if n == 0 {
		return errors.New(`must be a positive size: a command always gets a file-size limit (e.g. "1GiB")`)
	}
	return nil
}

func positiveMS(n int) error {
	if n <= 0 {
		return fmt.Errorf("must be a positive number of milliseconds, got %d (the call's deadline, tools.timeouts.shell_commands_seconds, bounds commands whatever this says)", n)
	}
	return nil
}

// assignments checks noninteractive_env: NAME=value entries, each name
// once.
func assignments(list []string) error {
	seen := map[string]bool{}
	for _, kv := range list {
		name, _, ok := strings.Cut(kv, "=")
		switch {
		case !ok || !envName.MatchString(name):
			return fmt.Errorf("%q is not NAME=value (a name of letters, digits and _, then =, then the value)", kv)
		case strings.IndexByte(kv, 0) >= 0:
			return fmt.Errorf("%q holds a NUL byte, which no environment can carry", name)
		case seen[name]:
			return fmt.Errorf("%s is set twice; keep one", name)
		}
		seen[name] = true
	}
	return nil
}

func between(n, least, most int) error {
	if n < least || n > most {
		return fmt.Errorf("must be between %d and %d, got %d", least, most, n)
	}
	return nil
}

// domains checks allowed_domains or denied_domains with the proxy's own
// check (egress.CheckDomain), so that what Load accepts the host accepts
// too, plus one rule of the configuration's: no pattern over a whole
// top-level domain ("*.com"), which the proxy could match but no
// operator means. A mistyped entry is then an error naming the key rather
// than a host silently refused, or a host that does not start.
func domains(list []string) error {
	for _, d := range list {
		if err := egress.CheckDomain(d); err != nil {
			return err
		}
		if err := wholeTLD(d); err != nil {
			return err
		}
	}
	return nil
}

// wholeTLD refuses "*.com" and the like; d is valid for egress.CheckDomain.
func wholeTLD(d string) error {
	name, wild := strings.CutPrefix(strings.TrimSuffix(d, "."), "*.")
	if wild && !strings.Contains(name, ".") {
		return fmt.Errorf(`%q matches a whole top-level domain; name one below it, e.g. "*.example.com"`, d)
	}
	return nil
}

// absoluteDirs checks extra_writable's entries as written; the filesystem
// is checked by CheckExtraWritable.
func absoluteDirs(list []string) error {
	for _, p := range list {
		switch {
		case !filepath.IsAbs(p):
			return fmt.Errorf("%q is not an absolute path; write the directory's full path (~ is not expanded)", p)
		case p != filepath.Clean(p):
			return fmt.Errorf("%q is not a clean path; write it as %q", p, filepath.Clean(p))
		case p == "/":
			return errors.New(`"/" would make the whole system writable; name the directories commands need`)
		}
	}
	return nil
}

// systemDirs are directories no command may write, nor anything below
// them: the kernel's views of processes and devices (/proc/<toolhost
// pid>/environ), boot files, the system's configuration and secrets, and
// /run (other users' agents, the container runtime's socket).
var systemDirs = []string{"/proc", "/sys", "/dev", "/boot", "/etc", "/run"}

// sharedTemp are the temporary directories every user shares: each call
// gets a private one instead.
var sharedTemp = []string{"/tmp", "/var/tmp"}

// CheckExtraWritable checks each extra_writable directory on the
// filesystem: it exists, and neither as written nor with its links
// resolved is it the home directory or above it, a system directory, the
// shared temporary directory, a secret's directory or one holding a
// secret, or one of protected (toolhost's own configuration and state) or
// inside one. Load calls it with the user configuration
// directory and the operator's file; an embedder that builds a Config
// itself calls it before opening a host. The error is a *KeyError.
func (r RunCommand) CheckExtraWritable(home string, protected []string) error {
	if err := extraWritable(r.ExtraWritable, home, protected); err != nil {
		return &KeyError{Key: "tools.run_command.extra_writable", Err: err}
	}
	return nil
}

func extraWritable(list []string, home string, protected []string) error {
	for _, p := range list {
		real, err := filepath.EvalSymlinks(p)
		if err != nil {
			return fmt.Errorf("%q: %w; create the directory first, or remove it from the list", p, err)
		}
		if fi, err := os.Stat(real); err != nil || !fi.IsDir() {
			return fmt.Errorf("%q is not a directory; name a directory commands may write in", p)
		}
		for _, path := range slices.Compact([]string{p, real}) {
			if why := unwritable(path, home, protected); why != "" {
				if path != p {
					why = fmt.Sprintf("leads to %s, which %s", path, why)
				}
				return fmt.Errorf("%q %s", p, why)
			}
		}
	}
	return nil
}

// unwritable says why path may not be writable by commands; "" when it
// may.
func unwritable(path, home string, protected []string) string {
	if path == "/" {
		return `would make the whole system writable; name the directories commands need`
	}
	for _, d := range systemDirs {
		if within(d, path) {
			return fmt.Sprintf("lies in %s, which commands never write", d)
		}
	}
	if slices.Contains(sharedTemp, path) {
		return "is shared by every user; each command gets a private $TMPDIR of its own, so name a directory below it instead"
	}
	for _, h := range slices.Compact([]string{home, realDir(home)}) {
		if h == "" || !filepath.IsAbs(h) {
			continue
		}
		if within(path, h) {
			return fmt.Sprintf("would make the whole home directory %s writable, credentials included; name a directory inside it, e.g. %s", h, filepath.Join(h, ".cache", "NAME"))
		}
		for _, s := range secrets.Home() {
			secret := filepath.Join(h, s)
			if within(secret, path) || within(path, secret) {
				return fmt.Sprintf("%s %s, where credentials are kept; commands never read it, so name a directory apart from it", relation(path, secret), secret)
			}
		}
	}
	for _, c := range protected {
		if c != "" && (within(c, path) || within(path, c)) {
			return fmt.Sprintf("%s %s, toolhost's own configuration, which commands must not rewrite; name another directory", relation(path, c), c)
		}
	}
	return ""
}

// relation says how path stands to other, one within the other.
func relation(path, other string) string {
	switch {
	case path == other:
		return "is"
	case within(other, path):
		return "lies in"
	}
	return "holds"
}

// parseSize reads a size in bytes: digits, then optionally a unit. K, M,
// G and T are powers of 1000 and Ki, Mi, Gi and Ti of 1024, as
// Kubernetes writes them; a trailing B is allowed (MB, MiB) and case is
// ignored.
func parseSize(s string) (uint64, error) {
	t := strings.TrimSpace(s)
	i := strings.IndexFunc(t, func(r rune) bool { return r < '0' || r > '9' })
	if i < 0 {
		i = len(t)
	}
	digits, unit := t[:i], strings.TrimSpace(t[i:])
	if digits == "" {
		return 0, fmt.Errorf("expected %s, got %s", kindSize, describe(s))
	}
	n, err := strconv.ParseUint(digits, 10, 64)
	if err != nil {
		return 0, fmt.Errorf("%s is too large", digits)
	}
	mult, ok := sizeUnit(unit)
	if !ok {
		return 0, fmt.Errorf("expected %s, got %s: unknown unit %q", kindSize, describe(s), unit)
	}
	hi, lo := bits.Mul64(n, mult)
	if hi != 0 {
		return 0, fmt.Errorf("%s is too large", describe(s))
	}
	return lo, nil
}

func sizeUnit(unit string) (uint64, bool) {
	u := strings.TrimSuffix(strings.ToUpper(unit), "B")
	if u == "" {
		return 1, true
	}
	pow := uint64(1000)
	if p, ok := strings.CutSuffix(u, "I"); ok {
		u, pow = p, 1024
	}
	n := strings.Index("KMGT", u)
	if len(u) != 1 || n < 0 {
		return 0, false
	}
	mult := pow
	for range n {
		mult *= pow
	}
	return mult, true
}

// formatSize writes n with the largest binary unit that divides it
// exactly ("2GiB"), else the largest decimal one ("500M"), else in bytes:
// what parseSize reads back.
func formatSize(n uint64) string {
	if n == 0 {
		return "0"
	}
	for _, base := range []struct {
		pow    uint64
		suffix string
	}{{1024, "iB"}, {1000, ""}} {
		for i := 3; i >= 0; i-- {
			m := base.pow
			for range i {
				m *= base.pow
			}
			if n%m == 0 {
				return strconv.FormatUint(n/m, 10) + "KMGT"[i:i+1] + base.suffix
			}
		}
	}
	return strconv.FormatUint(n, 10)
}

// validateRunCommand checks profile name's sandbox and network: only values that can narrow, and none that cannot hold with
// the policy's run_command table.
func (p Profile) validateRunCommand(name string, r RunCommand) error {
	key := "profiles." + name + "."
	if p.Sandbox != "" {
		if err := oneOf(string(p.Sandbox), SandboxReadOnly, SandboxWorkspaceWrite); err != nil {
			return &KeyError{Key: key + "sandbox", Err: fmt.Errorf(`%w: a profile can only narrow tools.run_command.sandbox; "off" is set only there, by the operator`, err)}
		}
	}
	if p.Network == "" {
		return nil
	}
	if err := oneOf(string(p.Network), NetworkOff, NetworkAllowlist); err != nil {
		return &KeyError{Key: key + "network", Err: fmt.Errorf(`%w: a profile can only narrow tools.run_command.network; "on" is set only there, by the operator`, err)}
	}
	if eff := r.forProfile(p); eff.Sandbox == SandboxOff && eff.Network != NetworkOn {
		return &KeyError{Key: key + "network", Err: fmt.Errorf(`%q needs commands confined, but tools.run_command.sandbox is "off": set sandbox = "workspace-write" (or "read-only") in the profile too`, p.Network)}
	}
	return nil
}

// HiddenName says why Sanitize would hide a variable named name whatever
// its value: a denylist glob matches it, or it looks like a secret's
// name and Keep does not name it; "" when the name alone hides nothing.
// run_command refuses such a name in the variables a model adds, so that
// what the filter keeps from commands cannot be put back by a call.
func (e Environment) HiddenName(name string) string {
	if g, ok := deniedBy(append(DefaultEnvDenylist(), e.Denylist...), name); ok {
		return "the denylist glob " + g
	}
	if slices.Contains(e.Keep, name) {
		return ""
	}
	return secretName(name)
}
