package confine

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/toolhost/toolhost/host/internal/egress"
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
	proxy    *proxyConfig // network = "allowlist": where calls' proxies listen
	seq      *atomic.Uint64
	// pool holds launchers started ahead of need once Warm enabled it;
	// nil when commands cannot be confined by this program.
	pool *warmPool
	// bg runs the removals of cgroups whose warm launchers still exit
	// once their commands' ends were reported (Run.Close).
	bg *background
	// runs are the Runs prepared and not closed: Close kills their
	// launchers, so that no command outlives the host.
	runs *runSet
	// ahead is what the pool's launchers mount while they wait.
	ahead *mountsAhead
}

// runSet is a set of Runs, safe for concurrent use.
type runSet struct {
	mu sync.Mutex
	m  map[*Run]bool
}

func (s *runSet) add(r *Run) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.m[r] = true
}

func (s *runSet) remove(r *Run) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.m, r)
}

// abort kills the launchers of every Run in s.
func (s *runSet) abort() {
	s.mu.Lock()
	defer s.mu.Unlock()
	for r := range s.m {
		if r.launch != nil {
			r.launch.abort()
		}
	}
}

// exitingWait bounds the wait, off the call's path, for a warm launcher
// that reported its command's end to exit before its cgroup is removed.
const exitingWait = 5 * time.Second

// background runs functions off the caller's path until Wait, which
// waits for those started; later ones run on the caller's.
type background struct {
	mu     sync.Mutex
	closed bool
	wg     sync.WaitGroup
}

// Go runs f in a goroutine, or, once Wait was called, before it returns.
func (b *background) Go(f func()) {
	b.mu.Lock()
	if b.closed {
		b.mu.Unlock()
		f()
		return
	}
	b.wg.Add(1)
	b.mu.Unlock()
	go func() {
		defer b.wg.Done()
		f()
	}()
}

// Wait waits for the functions Go started.
func (b *background) Wait() {
	b.mu.Lock()
	b.closed = true
	b.mu.Unlock()
	b.wg.Wait()
}

// proxyConfig is what each call's egress proxy is made from.
type proxyConfig struct {
	dir   string // a short directory: a socket's path is at most 107 bytes
	rules egress.Rules
}

// WithProxy returns c with the egress proxy settings of network =
// "allowlist": each call gets a proxy of its own, with a socket in dir.
func (c *Confiner) WithProxy(dir string, rules egress.Rules) *Confiner {
	out := *c
	out.proxy = &proxyConfig{dir: dir, rules: rules}
	return &out
}

// NewConfiner returns the confiner for settings on a kernel that allows
// support. launcher is the path of a toolhost binary that answers
// spec.LauncherArg ("/proc/self/exe" inside toolhost); "" means commands
// cannot be confined, so every call fails closed unless settings.Mode is
// off.
func NewConfiner(settings Settings, support Support, launcher string, log *slog.Logger) *Confiner {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	c := &Confiner{settings: settings, support: support, launcher: launcher, log: log, seq: new(atomic.Uint64), bg: &background{}, runs: &runSet{m: map[*Run]bool{}}, ahead: newMountsAhead()}
	if launcher != "" {
		c.pool = newWarmPool(launcher, log)
	}
	if settings.Mode == ModeOff {
		c.reason = "set by the operator"
	} else {
		c.recoverStages()
	}
	return c
}

// recoverStages applies the git directories' stages that a toolhost
// killed during a call left (recoverStages in stage_recover.go), then
// runs the check after each such call (recoverChecks), which the killed
// toolhost never ran: before each call, so that what the killed call's
// command did is in place, and what it planted for git outside to run is
// set aside, before another command or the operator's git builds on it.
// With nothing left, it costs three directory reads.
func (c *Confiner) recoverStages() {
	if c.settings.StateDir == "" {
		return
	}
	for _, n := range recoverAllStages(c.settings.StateDir) {
		c.log.Warn("confine: applied a stage a killed toolhost left", "what", n)
	}
	for _, rc := range recoverChecks(context.Background(), c.settings) {
		c.log.Warn("confine: ran the check after a call of a toolhost killed before it ran it", "pid", rc.PID, "call", rc.Call, "set_aside", len(rc.Found), "uncovered", rc.Notes)
		for _, n := range rc.Found {
			c.log.Warn("confine: a command of a killed toolhost wrote config or hooks that git outside the sandbox would run; removed and kept for review", "pid", rc.PID, "call", rc.Call, "repo", n.Repo, "keys", n.Keys, "files", n.Files, "kept", n.Kept, "err", n.Err)
		}
	}
}

// Unconfined returns a confiner that runs commands with toolhost's own
// privileges, recording reason: for embedders and tests that choose it
// explicitly, never a fallback.
func Unconfined(reason string) *Confiner {
	return &Confiner{settings: Settings{Mode: ModeOff}, reason: reason, log: slog.New(slog.DiscardHandler), seq: new(atomic.Uint64)}
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
func (c *Confiner) Prepare(ctx context.Context, call Call) (*Run, error) {
	if c.settings.Mode == ModeOff {
		return &Run{applied: Applied{Mode: ModeOff, Network: NetworkOn, Reason: c.reason}}, nil
	}
	if err := c.support.Require(c.settings.Mode, c.settings.Network); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrUnavailable, err)
	}
	if c.launcher == "" {
		return nil, fmt.Errorf("%w: this program cannot re-execute itself as the launcher; run commands through the toolhost binary, or set [tools.run_command] sandbox = \"off\" in the operator's configuration", ErrUnavailable)
	}
	c.recoverStages()
	seq := c.seq.Add(1)
	r := &Run{log: c.log, call: call.ID, bg: c.bg}
	settings := c.settings
	if settings.Network == NetworkAllowlist {
		sock, err := c.startProxy(seq, r)
		if err != nil {
			return nil, fmt.Errorf("%w: %w", ErrUnavailable, err)
		}
		settings.ProxySocket = sock
	}
	// The launcher first: the tmp made for its command, mounted ahead,
	// is the call's.
	var w *warmLauncher
	if c.pool != nil {
		w = c.pool.take(settings.Network != NetworkOn)
	}
	p, st, cleanup, removeScratch, err := prepareCall(ctx, settings, call, w.takeTmp())
	if err != nil {
		w.discard()
		r.Close()
		return nil, fmt.Errorf("%w: %w", ErrUnavailable, err)
	}
	r.policy, r.settle, r.cleanup, r.removeScratch = p, st, cleanup, removeScratch
	if len(p.Uncovered) > 0 {
		c.log.Warn("confine: part of the roots was not searched for repositories and project files to keep read-only", "call", call.ID, "uncovered", p.Uncovered)
	}
	c.ahead.record(p)
	if err := c.prepareCgroup(r, seq, call.ID, p.Limits, w); err != nil {
		w.discard()
		r.Close()
		return nil, fmt.Errorf("%w: %w", ErrUnavailable, err)
	}
	r.launch = NewLaunch(p, c.launcher, r.cgroup)
	r.launch.warm = w
	r.runs = c.runs
	c.runs.add(r)
	return r, nil
}

// PoolLaunchers lets commands start from launchers started ahead of
// need, which skips the launcher's start-up; Close ends them. None is
// started until Warm or the first command, which waits for the first
// launcher rather than start its own. Without PoolLaunchers every
// command starts its own launcher. small, when not "", is a launcher
// binary smaller than c's (toolhost-launcher), used while it starts
// launchers and c's from its first failure on. PoolLaunchers does
// nothing when commands are not confined here.
func (c *Confiner) PoolLaunchers(small string) {
	if c.pool == nil || c.settings.Mode == ModeOff || c.support.Require(c.settings.Mode, c.settings.Network) != nil {
		return
	}
	c.pool.limitCgroups(c.cgroupLimits(limits(c.settings.Limits)))
	c.pool.mountAhead(c.ahead.next)
	c.pool.enable(small)
}

// Warm starts the launchers of PoolLaunchers for the configured network
// mode now, so that the first command is as quick as the rest.
func (c *Confiner) Warm() {
	if c.pool != nil {
		c.pool.warm(c.settings.Network != NetworkOn)
	}
}

// poolStatus is what the launcher pool has: the server's pid (0 when it
// is not running), how many launchers wait, by network namespace, and
// why it cannot start them, if it cannot.
type poolStatus struct {
	Enabled            bool
	ServerPid          int
	WaitingNewNetwork  int
	WaitingHostNetwork int
	Error              string
}

// Close kills the commands still running, ends the launchers started
// ahead of need and their server: it belongs to the host's end, whose
// calls still running fail.
func (c *Confiner) Close() {
	c.runs.abort()
	c.bg.Wait()
	if c.pool != nil {
		c.pool.close()
	}
}

// prepareCgroup gives the run a cgroup with the memory and process limits
// whose controllers the probe found; the result's confinement records
// which applied. Where the probe found a controller, a limit set on it
// must hold, so a cgroup that cannot be made stops the command.
//
// A warm launcher w (nil without) was cloned into a v2 cgroup of its
// own, if there is a v2 hierarchy: the command's cgroup takes it over.
func (c *Confiner) prepareCgroup(r *Run, seq uint64, id string, l Limits, w *warmLauncher) error {
	l = c.cgroupLimits(l)
	if l.MemoryBytes == 0 && l.Pids == 0 {
		return nil
	}
	if cg := w.presetFor(l); cg != nil {
		w.adopt()
		r.cgroup = cg
		return nil
	}
	// Limits other than the launcher's: its cgroup is made again below.
	w.dropPreset()
	// The name is toolhost's, never the call id alone, which a client
	// chooses: "a/b", "..", or the id of a call still running must not
	// cost the command its limits.
	cg, err := newCgroupIn(fmt.Sprintf("call-%d-%s", seq, safeName(id)), l, w.v2Cgroup())
	if err != nil {
		return fmt.Errorf("cannot make the cgroup that limits its memory and processes: %w", err)
	}
	w.adopt()
	r.cgroup = cg
	return nil
}

// cgroupLimits is l with the limits whose controllers the probe did not
// find left out.
func (c *Confiner) cgroupLimits(l Limits) Limits {
	avail := c.support.Cgroup.Controllers()
	if !slices.Contains(avail, "memory") {
		l.MemoryBytes = 0
	}
	if !slices.Contains(avail, "pids") {
		l.Pids = 0
	}
	return l
}

// startProxy starts the call's own egress proxy (network = "allowlist"):
// one per call, so that connections a command leaves open end with it
// (Run.Close) and one call cannot use up the connections of the next.
func (c *Confiner) startProxy(seq uint64, r *Run) (string, error) {
	if c.proxy == nil {
		return "", errors.New("network = \"allowlist\" needs a directory for the calls' proxies (Confiner.WithProxy), which this host did not give")
	}
	path := filepath.Join(c.proxy.dir, fmt.Sprintf("p%d.sock", seq))
	p, err := egress.Listen(context.Background(), path, c.proxy.rules, c.log)
	if err != nil {
		return "", fmt.Errorf("the network proxy: %w", err)
	}
	r.proxy = p
	return path, nil
}

// Run is one command's confinement, from Prepare until Close.
type Run struct {
	log     *slog.Logger
	call    string        // the call's id, for the log
	bg      *background   // the Confiner's
	runs    *runSet       // the Confiner's, which holds this Run until Close
	proxy   *egress.Proxy // the call's own proxy, network = "allowlist"
	launch  *Launch       // nil when commands run unconfined
	policy  *Policy
	cgroup  *Cgroup
	cleanup func()
	// removeScratch removes the call's tmp, its stages and the record of
	// its check (prepareCall).
	removeScratch func()
	applied       Applied // for an unconfined run
	// settle sets aside what git would run from repositories the
	// command made or changed; logged once.
	settle  *settle
	settled sync.Once
}

// afterCommand runs the check of the repositories in the roots (settle)
// once the command has ended, and logs what it set aside.
func (r *Run) afterCommand() []Neutralized {
	found := r.settle.run(context.Background())
	r.settled.Do(func() {
		for _, n := range found {
			r.log.Warn("confine: a command wrote config or hooks that git outside the sandbox would run; removed and kept for review", "call", r.call, "repo", n.Repo, "keys", n.Keys, "files", n.Files, "kept", n.Kept, "err", n.Err)
		}
		if notes := r.settle.notes(); len(notes) > 0 {
			r.log.Warn("confine: the check for repositories a command made did not reach everything", "call", r.call, "uncovered", notes)
		}
	})
	return found
}

// LimitsHit reports whether the command reached its memory limit (the
// kernel killed a process of it for memory) or its process limit (a
// fork was refused), so its result can say why it was killed.
func (r *Run) LimitsHit() (memory, pids bool) {
	if r.cgroup == nil {
		return false, false
	}
	return r.cgroup.OOMKilled(), r.cgroup.PidsMaxHit()
}

// TmpDir is the host path of the command's private tmp (mounted at /tmp
// inside), "" when the command runs unconfined.
func (r *Run) TmpDir() string { return tmpOf(r.policy) }

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
	a.Uncovered = r.policy.Uncovered
	return a
}

// Hint is the line to append to a command's output when stderr shows an
// operation the sandbox denied; "" otherwise or when unconfined.
func (r *Run) Hint(stderr ...[]byte) string {
	if r.policy == nil {
		return ""
	}
	h := Hint(r.policy, bytes.Join(stderr, nil))
	for _, l := range r.applyStaged() {
		if h != "" {
			h += "\n"
		}
		h += l
	}
	for _, l := range []string{UncoveredHint(r.policy), r.settle.hint(r.afterCommand())} {
		if l != "" {
			if h != "" {
				h += "\n"
			}
			h += l
		}
	}
	if r.cgroup != nil && r.cgroup.OOMKilled() {
		if h != "" {
			h += "\n"
		}
		h += fmt.Sprintf("sandbox: a process of the command was killed at its memory limit (%d bytes, [tools.run_command] memory_max)", r.policy.Limits.MemoryBytes)
	}
	return h
}

// applyStaged applies to the real git directories what the command
// wrote in their stages, once it has ended, before the check of the
// repositories it made looks at them, and logs and returns what it
// refused, disabled or removed; a second call finds nothing left to
// apply.
func (r *Run) applyStaged() []string {
	notes := applyStaged(r.policy)
	for _, n := range notes {
		r.log.Warn("confine: a command's change to a git directory was not kept as it was written", "call", r.call, "what", n)
	}
	return notes
}

// Close removes what Prepare made: the call's proxy and its connections,
// the cgroup (killing anything left in it), and the private tmp.
//
// For a command whose warm launcher reported its end, nothing of the
// command runs any more (the launcher killed what the shell left), but
// the launcher itself may still be exiting: its cgroup, which it is in,
// and the tmp and the stages, mounts in its namespace until then, are
// removed once it is gone, off the call's path, with the record of the
// check, which has run by then.
func (r *Run) Close() {
	if r.runs != nil {
		r.runs.remove(r)
	}
	if r.proxy != nil {
		r.proxy.Close()
	}
	var exiting, released <-chan struct{}
	if r.launch != nil {
		// A call that failed before its command started (its report or
		// stdin could not be made) still holds the launch's pipes and
		// the warm launcher it took, which goes with them.
		r.launch.Close()
		exiting, released = r.launch.Exiting(), r.launch.Released()
	}
	later := exiting != nil && r.bg != nil
	closeCgroup := func() {
		if r.cgroup == nil {
			return
		}
		if err := r.cgroup.Close(); err != nil {
			r.log.Error("confine: the command's cgroup could not be emptied and removed", "call", r.call, "err", err)
		}
	}
	if !later {
		// What the command left must be dead before the check below.
		closeCgroup()
	}
	r.applyStaged()
	if r.settle != nil {
		r.afterCommand()
	}
	if r.cleanup != nil {
		r.cleanup()
	}
	removeScratch := func() {
		if r.removeScratch != nil {
			r.removeScratch()
		}
	}
	if !later {
		removeScratch()
		return
	}
	r.bg.Go(func() {
		expired := make(chan struct{})
		t := time.AfterFunc(exitingWait, func() { close(expired) })
		defer t.Stop()
		select {
		case <-exiting:
		case <-expired:
		}
		closeCgroup()
		// The launcher's mount namespace goes after its exit.
		select {
		case <-released:
		case <-expired:
		}
		removeScratch()
	})
}

// SmallLauncherName is the small launcher binary's name
// (host/cmd/toolhost-launcher), which toolhost looks for beside itself.
const SmallLauncherName = "toolhost-launcher"

// SmallLauncherBeside returns the small launcher binary beside the
// binary exe when it may be trusted as much as exe: a regular executable
// file of exe's owner (or root) that no one else may write, in a
// directory no one else may write. "" otherwise: toolhost then starts
// launchers from its own binary. Whether it speaks toolhost's protocol
// is checked when it starts (spec.Fingerprint).
func SmallLauncherBeside(exe string) string {
	exe, err := filepath.EvalSymlinks(exe)
	if err != nil {
		return ""
	}
	self, err := os.Stat(exe)
	if err != nil {
		return ""
	}
	dir := filepath.Dir(exe)
	small := filepath.Join(dir, SmallLauncherName)
	fi, err := os.Lstat(small)
	if err != nil || !fi.Mode().IsRegular() || fi.Mode().Perm()&0o111 == 0 || fi.Mode().Perm()&0o022 != 0 {
		return ""
	}
	di, err := os.Stat(dir)
	if err != nil || di.Mode().Perm()&0o022 != 0 {
		return ""
	}
	if owner(fi) != owner(self) && owner(fi) != 0 {
		return ""
	}
	return small
}
