package confine

import (
	"bytes"
	"errors"
	"fmt"
	"log/slog"
)

// Confiner decides how each command runs: it holds the operator's
// settings, what the kernel allows (Support) and the launcher binary, and
// prepares one Run per call. It is safe for concurrent use: it never
// changes after NewConfiner.
type Confiner struct {
	settings Settings
	support  Support
	launcher string
	reason   string // why Mode is off, for the record
	log      *slog.Logger
}

// NewConfiner returns the confiner for settings on a kernel that allows
// support. launcher is the path of a toolhost binary that answers
// LauncherArg ("/proc/self/exe" inside toolhost); "" means commands cannot
// be confined, so every call fails closed unless settings.Mode is off.
func NewConfiner(settings Settings, support Support, launcher string, log *slog.Logger) *Confiner {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	c := &Confiner{settings: settings, support: support, launcher: launcher, log: log}
	if settings.Mode == ModeOff {
		c.reason = "set by the operator"
	}
	return c
}

// Unconfined returns a confiner that runs commands with toolhost's own
// privileges, recording reason: for embedders and tests that choose it
// explicitly, never a fallback.
func Unconfined(reason string) *Confiner {
	return &Confiner{settings: Settings{Mode: ModeOff}, reason: reason, log: slog.New(slog.DiscardHandler)}
}

// Narrow returns a confiner at least as strict as c: mode and network, a
// profile's, apply where they are stricter (workspace-write to
// read-only, allowlist to off); "" keeps c's. A nil c stays nil: narrowing
// never makes a confiner where there was none.
func (c *Confiner) Narrow(mode Mode, network Network) *Confiner {
	if c == nil {
		return nil
	}
	m, n := StricterMode(c.settings.Mode, mode), StricterNetwork(c.settings.Network, network)
	if m == c.settings.Mode && n == c.settings.Network {
		return c
	}
	out := *c
	out.settings.Mode, out.settings.Network = m, n
	if m != ModeOff {
		out.reason = ""
	}
	return &out
}

// StricterMode is the stricter of two sandbox modes, "" counting as
// neither.
func StricterMode(a, b Mode) Mode {
	rank := map[Mode]int{ModeOff: 1, ModeWorkspaceWrite: 2, ModeReadOnly: 3}
	if rank[b] > rank[a] {
		return b
	}
	return a
}

// StricterNetwork is the stricter of two network modes, "" counting as
// neither.
func StricterNetwork(a, b Network) Network {
	rank := map[Network]int{NetworkOn: 1, NetworkAllowlist: 2, NetworkOff: 3}
	if rank[b] > rank[a] {
		return b
	}
	return a
}

// Mode is the configured sandbox mode.
func (c *Confiner) Mode() Mode { return c.settings.Mode }

// Settings are the settings the confiner was made with.
func (c *Confiner) Settings() Settings { return c.settings }

// Support is what the kernel allows, as probed.
func (c *Confiner) Support() Support { return c.support }

// ErrUnavailable is the class of errors Prepare returns when the
// configured confinement cannot be had: the command does not run.
var ErrUnavailable = errors.New("run_command's sandbox is unavailable")

// Prepare returns the Run of one call's command. It fails closed: when the
// configured confinement cannot be had here, it returns an error wrapping
// ErrUnavailable that says what is missing and how to get it, and the
// command must not run.
func (c *Confiner) Prepare(call Call) (*Run, error) {
	if c.settings.Mode == ModeOff {
		return &Run{applied: Applied{Mode: ModeOff, Network: NetworkOn, Reason: c.reason}}, nil
	}
	if err := c.support.Require(c.settings.Mode, c.settings.Network); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrUnavailable, err)
	}
	if c.launcher == "" {
		return nil, fmt.Errorf("%w: this program cannot re-execute itself as the launcher; run commands through the toolhost binary, or set [tools.run_command] sandbox = \"off\" in the operator's configuration", ErrUnavailable)
	}
	p, cleanup, err := Build(c.settings, call)
	if err != nil {
		return nil, fmt.Errorf("%w: call %s: %w", ErrUnavailable, call.ID, err)
	}
	r := &Run{policy: p, cleanup: cleanup}
	if l := p.Limits; l.MemoryBytes > 0 || l.Pids > 0 {
		cg, err := NewCgroup(call.ID, l)
		if err != nil {
			// Limits of memory and process count hold where a cgroup can be
			// had; the result records that none applied.
			c.log.Warn("confine: no cgroup for the command; its memory and process count are not limited", "call", call.ID, "err", err)
		} else {
			r.cgroup = cg
		}
	}
	r.launch = NewLaunch(p, c.launcher, r.cgroup)
	return r, nil
}

// Run is one command's confinement, from Prepare until Close.
type Run struct {
	launch  *Launch // nil when commands run unconfined
	policy  *Policy
	cgroup  *Cgroup
	cleanup func()
	applied Applied // for an unconfined run
}

// Launch is the launcher to run the command through (proc.Spec.Launcher),
// nil when the mode is off.
func (r *Run) Launch() *Launch { return r.launch }

// Applied is the confinement the command ran under; after the command
// started, it holds what the launcher reported.
func (r *Run) Applied() Applied {
	if r.launch == nil {
		return r.applied
	}
	a := r.launch.Applied()
	if r.cgroup != nil {
		a.Cgroup = r.cgroup.Controllers()
	}
	return a
}

// Hint is the line to append to a command's output when stderr shows an
// operation the sandbox denied; "" otherwise or when unconfined.
func (r *Run) Hint(stderr ...[]byte) string {
	if r.policy == nil {
		return ""
	}
	h := Hint(r.policy, bytes.Join(stderr, nil))
	if r.cgroup != nil && r.cgroup.OOMKilled() {
		if h != "" {
			h += "\n"
		}
		h += fmt.Sprintf("sandbox: a process of the command was killed at its memory limit (%d bytes, [tools.run_command] memory_max)", r.policy.Limits.MemoryBytes)
	}
	return h
}

// Close removes what Prepare made. The launcher closes the cgroup once the
// command's processes are gone; Close makes sure of it.
func (r *Run) Close() {
	if r.cgroup != nil {
		r.cgroup.Close()
	}
	if r.cleanup != nil {
		r.cleanup()
	}
}
