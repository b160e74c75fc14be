package confine

import (
	"bufio"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/toolhost/toolhost/host/internal/confine/spec"
	"github.com/toolhost/toolhost/host/internal/secrets"
)

// Settings are the host's side of every call's policy: [tools.run_command]
// and where toolhost keeps its state.
type Settings struct {
	Mode          Mode
	Network       Network
	ExtraWritable []string
	ShareCaches   bool
	Limits        Limits
	// StateDir is toolhost's state directory: per-root caches and per-call
	// temporary directories are made under StateDir/sandbox. It must be
	// absolute.
	StateDir string
	// Protected are toolhost's own files and directories that commands may
	// read but never change (the plugins, their compile cache, projects'
	// configuration files): read-only inside when they lie in a writable
	// tree. Those inside StateDir are hidden with it.
	Protected []string
	// Hidden are toolhost's files that hold what no command may read: the
	// operator's configuration files (the HTTP token), the user's
	// configuration directory, the journal and its companions wherever
	// [journal] path puts it. Each is hidden, a file behind an empty one,
	// a directory behind an empty unreadable one, wherever a mounted tree
	// shows it, in every mode; read_file refuses the same paths.
	Hidden []string
	// Home is the user's home directory; Path the PATH toolchains are
	// looked for on; Environ the sanitized environment commands get where
	// the call brings none (Call.Environ).
	Home    string
	Path    string
	Environ []string
	// ProxySocket is the proxy's socket on the host, for NetworkAllowlist.
	ProxySocket string
	// Search remembers, across calls, what the search of the writable
	// trees for nested repositories and project files read, so that a
	// call reads again only the directories that changed (SearchCache).
	// One per host, shared by its calls; nil searches every tree in full.
	Search *SearchCache
	// ProjectFileNames are the names of toolhost's project configuration
	// files, kept read-only at any depth of a writable tree. They are the
	// configuration's (config.ProjectFileNames), which the host passes;
	// this package keeps no list of its own that could drift from the
	// names the configuration reads.
	ProjectFileNames []string
}

// Call is what Build needs of one call.
type Call struct {
	ID    string
	Roots []string // the sandbox's roots, absolute and canonical
	Dir   string   // working directory, inside a root
	// Environ is the call's sanitized environment, from the engine: the
	// command's, in place of Settings.Environ; nil takes Settings.Environ.
	Environ []string
}

// Where things toolhost provides appear inside a command's root. They lie
// outside every tree a command sees of the host, so a hidden state
// directory cannot be in their way.
const (
	// cacheTarget holds the per-root tool caches (GOCACHE and the others).
	cacheTarget = "/run/toolhost/cache"
	// proxyTarget is where the proxy's socket is bound (NetworkAllowlist);
	// Policy.ProxySocket names it, since the launcher dials it inside.
	proxyTarget = "/run/toolhost/proxy.sock"
	// proxyPort is the port the launcher relays to the proxy on the
	// namespace's own loopback.
	proxyPort = 3128
)

// Build returns the policy of one call and a cleanup that removes what it
// made: the call's private temporary directory (mounted at /tmp and
// /var/tmp inside). It also makes the per-root cache directory. Build
// starts no process; it runs for every run_command call. ctx (the call's)
// ends the protection of a pathological tree, and Build then fails, so
// the command does not run; Build's work is bounded without it
// (walkMaxEntries, maxNestedMounts), ctx keeps a slow disk from holding a
// cancelled call.
//
// The mounts come in an order that lets later ones cover parts of earlier
// ones: the system trees, toolchains and package stores read-only, an
// empty scratch $HOME, the roots, then what must stay read-only inside a
// writable root (.git's hooks and config, toolhost's configuration), what
// must stay hidden (secrets, toolhost's state directory) and last the
// call's tmp, cache and proxy socket.
func Build(ctx context.Context, s Settings, c Call) (*Policy, func(), error) {
	p, _, cleanup, err := buildCall(ctx, s, c)
	return p, cleanup, err
}

// buildCall is Build, with the check that sets aside what git would run
// from repositories the command made or changed (newrepos.go): the
// cleanup runs it, and a caller that reports it runs it first, once the
// command has ended.
func buildCall(ctx context.Context, s Settings, c Call) (*Policy, *settle, func(), error) {
	p, st, cleanup, removeScratch, err := prepareCall(ctx, s, c, "")
	return p, st, func() { cleanup(); removeScratch() }, err
}

// prepareCall is buildCall with the removal of the call's tmp, of its
// git directories' stages (emptied by the cleanup) and of the record of
// its check (run by the cleanup) apart from the rest of the cleanup:
// while a launcher's mount namespace still holds the tmp and the stages
// as mounts, removing them detaches those, which waits for the kernel
// (most of a millisecond on two cores for the tmp, some for each
// stage); a caller may remove them once the launcher is gone, off the
// call's path. Both are safe to call more than once. ahead, when not
// "", is a tmp made for the call ahead (mountsAhead), which it takes
// over.
func prepareCall(ctx context.Context, s Settings, c Call, ahead string) (*Policy, *settle, func(), func(), error) {
	start := time.Now()
	none := func() {}
	var tmp string
	b, err := newBuilder(ctx, s, c)
	if err == nil {
		tmp, err = b.makeDirs(c.ID, ahead)
	}
	if err != nil {
		if ahead != "" {
			// The tmp made ahead holds the mount points its launcher
			// made for roots under /tmp: RemoveAll, which follows no
			// link out of it.
			os.RemoveAll(ahead)
		}
		return nil, nil, none, none, err
	}
	var once, tmpOnce sync.Once
	var st *settle
	cleanup := func() {
		once.Do(func() {
			st.run(context.Background())
			b.afterCall()
		})
	}
	// RemoveAll does not follow symbolic links, so a link a command left
	// in its tmp cannot lead the removal out of it.
	removeScratch := func() {
		tmpOnce.Do(func() {
			os.RemoveAll(tmp)
			removeStages(b.stageRoot)
			st.removeRecord()
		})
	}
	p, err := b.build(tmp)
	if err != nil {
		cleanup()
		removeScratch()
		return nil, nil, none, none, err
	}
	if st, err = newSettle(s, c, p, start, b.bound); err != nil {
		cleanup()
		removeScratch()
		return nil, nil, none, none, fmt.Errorf("confine: call %s: %w", c.ID, err)
	}
	return p, st, cleanup, removeScratch, nil
}

// builder assembles one policy.
type builder struct {
	ctx     context.Context
	s       Settings
	c       Call
	environ []string          // the environment the command's is made from
	env     map[string]string // environ, by name
	secrets []string
	cache   string // the per-root cache directory on the host
	mounts  []Mount
	// last indexes mounts by target (the latest added), and have holds
	// every mount added: a root with thousands of nested repositories
	// adds thousands of mounts, and Build must stay linear in them.
	last   map[string]int
	have   map[Mount]bool
	rw, ro []string // Landlock's lists
	pins   []string // paths whose ancestors must stay in place (pinAncestors)
	// uncovered says what the protection of the writable trees could not
	// reach (Policy.Uncovered); unprotected names the roots whose nested
	// repositories were not all protected (Policy.Unprotected).
	uncovered, unprotected []string
	// staged are the directories shown through a stage (stage.go), by
	// real path; stageRoot holds their stages.
	staged    map[string]bool
	stageRoot string
	// stageErr is why stages cannot be had (stageBase), once known;
	// strays are then the files no command may leave in a git directory
	// bound writable instead, absent when Build ran: the cleanup removes
	// them (afterCall).
	stageErr error
	strays   []string
	// made are the directories Build made to bind them read-only (a
	// core.hooksPath not made yet): the cleanup removes those still
	// empty (afterCall).
	made []string
	// bound are the files of git directories Build replaced by a copy
	// to break their hard links (breakLinks), for the check after the
	// call.
	bound map[string]boundFile
}

func newBuilder(ctx context.Context, s Settings, c Call) (*builder, error) {
	switch s.Mode {
	case ModeWorkspaceWrite, ModeReadOnly:
	case ModeOff:
		return nil, errors.New(`confine: sandbox = "off" runs commands unconfined; there is no policy to build`)
	default:
		return nil, fmt.Errorf("confine: [tools.run_command] sandbox = %q is not a mode; use \"workspace-write\", \"read-only\" or \"off\"", s.Mode)
	}
	switch s.Network {
	case NetworkOff, NetworkOn:
	case NetworkAllowlist:
		if !isAbsClean(s.ProxySocket) {
			return nil, fmt.Errorf("confine: network = \"allowlist\" needs the proxy's socket, an absolute path (got %q)", s.ProxySocket)
		}
	default:
		return nil, fmt.Errorf("confine: [tools.run_command] network = %q is not a network mode; use \"off\", \"allowlist\" or \"on\"", s.Network)
	}
	if !isAbsClean(s.StateDir) {
		return nil, fmt.Errorf("confine: the state directory %q is not an absolute clean path; toolhost keeps each command's tmp and caches there", s.StateDir)
	}
	if s.Home != "" && !filepath.IsAbs(s.Home) {
		return nil, fmt.Errorf("confine: the home directory %q is not absolute", s.Home)
	}
	s.Home = filepath.Clean(s.Home)
	if s.Home == "." {
		s.Home = ""
	}
	if len(c.Roots) == 0 {
		return nil, fmt.Errorf("confine: call %s has no sandbox root to run its command in", c.ID)
	}
	environ := s.Environ
	if c.Environ != nil {
		environ = c.Environ
	}
	b := &builder{ctx: ctx, s: s, c: c, environ: environ, env: envMap(environ), last: map[string]int{}, have: map[Mount]bool{}, staged: map[string]bool{}}
	b.secrets = secretPaths(s.Home, b.env)
	if c.Environ != nil {
		// What the operator's environment names a secret (an agent's
		// socket, GNUPGHOME) stays one whatever the call's says.
		b.secrets = dedupe(append(b.secrets, secretPaths(s.Home, envMap(s.Environ))...))
	}
	if real, err := filepath.EvalSymlinks(s.Home); err == nil && real != s.Home {
		// Sources are spelled with links resolved: so are the secrets.
		b.secrets = dedupe(append(b.secrets, secretPaths(real, b.env)...))
	}
	for _, r := range append(slices.Clip(c.Roots), s.ExtraWritable...) {
		if err := b.checkTree(r); err != nil {
			return nil, err
		}
	}
	if c.Dir == "" {
		b.c.Dir = c.Roots[0]
	}
	if !isAbsClean(b.c.Dir) || !underAny(b.c.Dir, append(slices.Clip(c.Roots), s.ExtraWritable...)) {
		return nil, fmt.Errorf("confine: call %s: the working directory %q is not inside a root (%s)", c.ID, c.Dir, strings.Join(c.Roots, ", "))
	}
	return b, nil
}

// checkTree refuses a root or extra writable path a command must not be
// given: not absolute, /, or holding a secret's place.
func (b *builder) checkTree(r string) error {
	switch {
	case !isAbsClean(r):
		return fmt.Errorf("confine: call %s: the path %q given to commands is not absolute and clean", b.c.ID, r)
	case r == "/":
		return fmt.Errorf("confine: call %s: / cannot be a root or writable path of a confined command; name the project's directory instead", b.c.ID)
	case spec.MadeByLauncher(r) != "":
		return fmt.Errorf("confine: call %s: %s cannot be a root or writable path of a confined command: it is %s, which the sandbox makes afresh for each command; keep the project elsewhere (a workspace in memory can live under /tmp or $XDG_RUNTIME_DIR), or remove it from [tools.run_command] extra_writable", b.c.ID, r, spec.MadeByLauncher(r))
	}
	for _, s := range b.secrets {
		if within(r, s) {
			return fmt.Errorf("confine: call %s: %s lies in %s, which commands may never read; remove it from the roots and [tools.run_command] extra_writable", b.c.ID, r, s)
		}
	}
	if _, err := os.Stat(r); err != nil {
		return fmt.Errorf("confine: call %s: the path given to commands: %w", b.c.ID, err)
	}
	return nil
}

// makeDirs makes StateDir/sandbox/{tmp,cache}, the call's private tmp and
// the root's cache, and returns the tmp.
func (b *builder) makeDirs(id, ahead string) (string, error) {
	base := filepath.Join(b.s.StateDir, "sandbox")
	for _, d := range []string{filepath.Join(base, "tmp"), filepath.Join(base, "cache")} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			return "", fmt.Errorf("confine: call %s: the command's directories: %w", b.c.ID, err)
		}
	}
	// The cache is the root's, shared by its calls: builds stay fast, and
	// what one project's command leaves there cannot reach another's.
	sum := sha256.Sum256([]byte(b.cacheKey()))
	b.cache = filepath.Join(base, "cache", hex.EncodeToString(sum[:])[:16])
	// GOTMPDIR must exist; the tools make their other directories.
	if err := os.MkdirAll(filepath.Join(b.cache, "go-tmp"), 0o700); err != nil {
		return "", fmt.Errorf("confine: call %s: the root's cache: %w", b.c.ID, err)
	}
	// The tmp's name carries toolhost's pid: a toolhost killed before its
	// cleanup ran leaves its calls' tmps, which a later Build removes.
	sweepTmp(filepath.Join(base, "tmp"))
	b.cache = hostPath(b.cache)
	if ahead != "" {
		// Made in the same place, by this toolhost (mountsAhead.next);
		// anything else is not taken, and goes.
		if fi, err := os.Lstat(ahead); err == nil && fi.IsDir() && ahead == hostPath(filepath.Join(base, "tmp", filepath.Base(ahead))) {
			return ahead, nil
		}
		os.RemoveAll(ahead)
	}
	tmp, err := os.MkdirTemp(filepath.Join(base, "tmp"), fmt.Sprintf("call-%d-%s-", os.Getpid(), safeName(id)))
	if err != nil {
		return "", fmt.Errorf("confine: call %s: the command's tmp: %w", b.c.ID, err)
	}
	return hostPath(tmp), nil
}

// sweepTmp removes the calls' tmps in dir whose toolhost is gone: one
// killed (SIGKILL, the OOM killer) before its cleanup ran, whose
// commands' files would otherwise stay on the host's disk for good.
// A tmp of a live toolhost, another's sharing the state directory
// included, is kept, as is a name it cannot read a pid from.
func sweepTmp(dir string) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return
	}
	for _, e := range entries {
		if _, ok := deadOwner(e.Name()); !ok {
			continue
		}
		// RemoveAll does not follow links out of the tmp.
		os.RemoveAll(filepath.Join(dir, e.Name()))
	}
}

// processGone reports whether no process pid exists.
func processGone(pid int) bool {
	p, err := os.FindProcess(pid)
	if err != nil {
		return true
	}
	return errors.Is(p.Signal(syscall.Signal(0)), os.ErrProcessDone)
}

// cacheKey is the root the working directory lies in.
func (b *builder) cacheKey() string {
	for _, r := range b.c.Roots {
		if within(b.c.Dir, r) {
			return r
		}
	}
	return b.c.Roots[0]
}

func (b *builder) build(tmp string) (*Policy, error) {
	b.systemTrees()
	for _, d := range b.toolchainDirs() {
		b.read(d)
	}
	b.home()
	writable := b.s.Mode == ModeWorkspaceWrite
	for _, r := range b.c.Roots {
		b.tree(r, writable)
	}
	for _, r := range b.s.ExtraWritable {
		b.tree(r, writable)
	}
	if err := b.protectInside(); err != nil {
		return nil, err
	}
	b.hideState()
	b.hideSecrets()
	b.pinAncestors()
	b.add(Mount{Kind: MountWrite, Source: tmp, Target: "/tmp"}, "rw")
	b.add(Mount{Kind: MountWrite, Source: tmp, Target: "/var/tmp"}, "rw")
	if !b.s.ShareCaches {
		b.add(Mount{Kind: MountWrite, Source: b.cache, Target: cacheTarget}, "rw")
	}
	p := &Policy{Mode: b.s.Mode, Network: b.s.Network, Dir: b.c.Dir}
	if b.s.Network == NetworkAllowlist {
		b.add(Mount{Kind: MountRead, Source: hostPath(b.s.ProxySocket), Target: proxyTarget}, "")
		p.ProxySocket, p.ProxyPort = proxyTarget, proxyPort
	}
	// The devices the launcher makes in its /dev, and /dev/shm.
	b.rw = append(b.rw, "/dev/null", "/dev/zero", "/dev/full", "/dev/tty", "/dev/shm")
	b.ro = append(b.ro, "/dev/random", "/dev/urandom")
	slices.SortStableFunc(b.mounts, func(x, y Mount) int { return depth(x.Target) - depth(y.Target) })
	if err := b.check(); err != nil {
		return nil, err
	}
	p.Mounts = b.mounts
	p.Writable, p.Readable = dedupe(b.rw), dedupe(b.ro)
	p.Limits = limits(b.s.Limits)
	p.Env = b.commandEnv()
	p.Uncovered, p.Unprotected = b.uncovered, b.unprotected
	return p, nil
}

// add appends m, and its target to Landlock's read-write ("rw") or
// read-only ("ro") list.
func (b *builder) add(m Mount, list string) {
	b.mounts = append(b.mounts, m)
	b.last[m.Target] = len(b.mounts) - 1
	b.have[m] = true
	switch list {
	case "rw":
		b.rw = append(b.rw, m.Target)
	case "ro":
		b.ro = append(b.ro, m.Target)
	}
}

// read mounts p read-only at its own path. A symbolic link is resolved
// and the real directory mounted unless a tree already shows it; the
// link itself is then listed as a MountRead whose Source is the link, for
// the launcher to recreate as a link with the same text (binding it
// would mount the directory it names, which also works).
func (b *builder) read(p string) {
	fi, err := os.Lstat(p)
	if err != nil {
		return
	}
	if fi.Mode()&os.ModeSymlink == 0 {
		b.add(Mount{Kind: MountRead, Source: hostPath(p), Target: p}, "ro")
		return
	}
	real, err := filepath.EvalSymlinks(p)
	if err != nil || b.exposes(real) {
		return // a dangling link shows nothing
	}
	if !b.shown(real) {
		b.add(Mount{Kind: MountRead, Source: real, Target: real}, "ro")
	}
	b.add(Mount{Kind: MountRead, Source: hostPath(p), Target: p}, "")
}

// hostPath is p with its directory's symbolic links resolved, p's last
// element kept: the launcher refuses a source that passes through a link
// (a command could have swapped one), so every Source is spelled this
// way, while the Target keeps the path programs know.
func hostPath(p string) string {
	dir, err := filepath.EvalSymlinks(filepath.Dir(p))
	if err != nil {
		return p
	}
	return filepath.Join(dir, filepath.Base(p))
}

// shown reports whether a bind mounted so far shows p: the mount that
// decides is the deepest one holding p (the latest of equals), since
// Build orders mounts by depth, stably.
func (b *builder) shown(p string) bool {
	last := b.effective(p)
	return last != nil && (last.Kind == MountRead || last.Kind == MountWrite)
}

// systemTrees mounts the system directories read-only, hides /etc's
// secrets, and shows where /etc/resolv.conf points when that is elsewhere
// (systemd-resolved's stub under /run).
func (b *builder) systemTrees() {
	for _, d := range systemDirs {
		b.read(d)
	}
	hide := secrets.Etc()
	for _, g := range secrets.EtcGlobs() {
		m, _ := filepath.Glob(g)
		hide = append(hide, m...)
	}
	for _, h := range hide {
		if _, err := os.Lstat(h); err == nil && b.shown(h) {
			b.add(Mount{Kind: MountHide, Target: h}, "")
		}
	}
	if real, err := filepath.EvalSymlinks("/etc/resolv.conf"); err == nil && real != "/etc/resolv.conf" && !b.shown(real) && !b.exposes(real) {
		b.add(Mount{Kind: MountRead, Source: real, Target: real}, "ro")
	}
}

// toolchainDirs are the toolchain installations and package stores to
// mount read-only, and ~/.config/go (go env -w settings) and git's user
// configuration (so commits carry the user's name; credentials stay out).
func (b *builder) toolchainDirs() []string {
	t := findToolchains(b.s.Path, b.s.Home, b.env)
	ds := slices.Concat(t.dirs, t.links)
	if !b.s.ShareCaches {
		ds = append(ds, stores(b.s.Home, b.env)...)
	}
	if b.s.Home != "" {
		// ~/.config/git holds git's credential store too: its files are
		// bound one by one.
		for _, rel := range []string{".gitconfig", ".config/git/config", ".config/git/ignore", ".config/git/attributes", ".config/go"} {
			ds = append(ds, filepath.Join(b.s.Home, rel))
		}
	}
	var out []string
	for _, d := range ds {
		if !b.exposes(d) && !b.shown(d) {
			out = append(out, d)
		}
	}
	return out
}

// home puts an empty writable tmpfs at $HOME, discarded when the command
// ends, unless a root already shows $HOME: tools that write their
// settings there work, and nothing of the user's home is visible but
// what is bound on top. With shared caches, the user's caches are bound
// writable on top.
func (b *builder) home() {
	h := b.s.Home
	if h == "" || h == "/" || underAny(h, b.c.Roots) || underAny(h, b.s.ExtraWritable) {
		return
	}
	b.add(Mount{Kind: MountTmpfs, Target: h}, "rw")
	if !b.s.ShareCaches {
		return
	}
	for _, d := range b.sharedCaches() {
		if !b.exposes(d) {
			b.add(Mount{Kind: MountWrite, Source: hostPath(d), Target: d}, "rw")
		}
	}
}

// sharedCaches are the user's own caches, writable with ShareCaches: only
// the tools' cache directories, never all of ~/.cache (tokens live there
// too).
func (b *builder) sharedCaches() []string {
	cache := filepath.Join(b.s.Home, ".cache")
	if x := b.env["XDG_CACHE_HOME"]; filepath.IsAbs(x) {
		cache = filepath.Clean(x)
	}
	ds := []string{filepath.Join(cache, "go-build"), filepath.Join(cache, "pip"), filepath.Join(cache, "uv"), filepath.Join(b.s.Home, ".npm")}
	if g := b.env["GOCACHE"]; filepath.IsAbs(g) {
		ds = append(ds, filepath.Clean(g))
	}
	ds = append(ds, stores(b.s.Home, b.env)...)
	return existingDirs(dedupe(ds))
}

// tree mounts a root or extra writable path, read-write or read-only.
func (b *builder) tree(r string, writable bool) {
	src := r
	if real, err := filepath.EvalSymlinks(r); err == nil {
		src = real
	}
	if writable {
		b.add(Mount{Kind: MountWrite, Source: src, Target: r}, "rw")
		return
	}
	b.add(Mount{Kind: MountRead, Source: src, Target: r}, "ro")
}

// writableTrees are the host trees bound read-write so far.
func (b *builder) writableTrees() []string {
	var ts []string
	for _, m := range b.mounts {
		if m.Kind == MountWrite {
			ts = append(ts, m.Target)
		}
	}
	return ts
}

// protectInside keeps read-only, inside the writable trees, what a
// command must not change because toolhost or git run it later outside
// the sandbox: each repository's hooks and config (the .git directory
// itself becomes a mount point, so it cannot be renamed away and
// replaced), those of the repositories nested in a root (a vendored
// checkout, a submodule's), and toolhost's configuration, the project
// files at any depth included. The nested ones are found by a bounded
// search (searchTree) and remembered for later calls (readKnown); what
// could not be covered is stated in Policy.Uncovered (b.uncovered). A
// path that does not exist yet cannot be bound: a command could create
// it (a new toolhost.yaml, or git init and then hooks), a gap the host's
// checks of those paths cover for the other tools.
//
// Every path here is resolved, and bound only when the real path lies in
// a writable tree: what a command wrote can make the protection point
// elsewhere, never make a mount show something new.
func (b *builder) protectInside() error {
	trees := b.writableTrees()
	if len(trees) == 0 {
		return nil
	}
	for _, t := range trees {
		// The tree's own repository, and its submodules' git directories
		// in .git/modules.
		b.protectDotGit(filepath.Join(t, ".git"), trees)
		mods, _ := b.modulesRead(filepath.Join(t, ".git", "modules"), walkMaxEntries)
		for _, d := range mods {
			b.protectGitDir(d, trees)
		}
	}
	for _, p := range b.s.Protected {
		if !isAbsClean(p) || within(p, b.s.StateDir) {
			continue
		}
		if real := b.bindInside(MountRead, p, trees); real != "" {
			b.pins = append(b.pins, real)
		}
	}
	// The roots and extra writable paths are searched; the user's caches
	// that ShareCaches makes writable are not: nobody runs git there,
	// nor in what hideState hides (a mount below a hide cannot be made).
	s := search{skip: searchSkip(b.s), lim: searchLimits{walkMaxDepth, walkMaxEntries}, projects: b.s.ProjectFileNames, cache: b.s.Search, start: time.Now().UnixNano()}
	var repos, projects []string
	for _, t := range dedupe(append(slices.Clone(b.c.Roots), b.s.ExtraWritable...)) {
		f := searchTree(t, s)
		// What an earlier search found is protected whatever this one
		// reached (walk_known.go).
		rs := oldestFirst(dedupe(slices.Concat(readKnown(b.s.StateDir, t), f.dotgits, f.gitdirs)))
		// What another search listed inside a hidden tree stays out.
		rs = slices.DeleteFunc(rs, func(r string) bool { return underAny(r, s.skip) })
		writeKnown(b.s.StateDir, t, rs)
		repos = append(repos, rs...)
		projects = append(projects, f.projects...)
		b.uncovered = append(b.uncovered, f.uncovered...)
	}
	return b.protectNested(b.nestedUnits(repos, projects, trees), trees)
}

// searchSkip are the trees the searches for repositories do not enter,
// as given and resolved: the state directory and what hideState hides
// (a mount below a hide cannot be made, and no command reaches there).
func searchSkip(s Settings) []string {
	skip := append([]string{s.StateDir}, s.Hidden...)
	for _, p := range skip {
		if r := resolved(p); r != "" {
			skip = append(skip, r)
		}
	}
	return skip
}

// maxNestedMounts bounds the mounts that protecting the nested
// repositories and project files adds to one call. A
// git directory costs about six (itself, hooks, config, info, the
// directories above it pinned), so 2000 protect some 300 of them, more
// than any project we know holds, and leave the command's root far below
// the kernel's 100000 mounts per namespace (fs.mount-max): a command
// that makes thousands of repositories can no longer make every later
// call fail. Each mount also costs the launcher time before the command
// starts (a bind and a mount_setattr, some tens of microseconds), so the
// bound is what a pathological root adds to each call, a few tens of
// milliseconds.
const maxNestedMounts = 2000

// nested is one thing the nested protection covers: a repository's .git
// (a directory or a "gitdir:" file), a git directory (a bare repository,
// a submodule's in .git/modules) or a project file.
type nested struct {
	path string
	kind nestedKind
	born int64 // birth time, 0 where unknown
}

type nestedKind int

const (
	nestedDotGit nestedKind = iota
	nestedGitDir
	nestedProject
)

// nestedUnits lists what the nested protection covers, oldest first, the
// same order as searchTree's and modulesRead's: a command can make
// many repositories, submodule directories and project files, but none
// older than those that were there before it ran, so what the bound
// leaves out is what commands made last (which were writable while they
// made them anyway). repos are the search's finds, oldest first; the
// writable trees' own repositories are protected already.
func (b *builder) nestedUnits(repos, projects, trees []string) []nested {
	var units []nested
	budget := walkMaxEntries // the entries of nested .git/modules read, in all
	var skipped []string
	for _, r := range repos {
		if filepath.Base(r) != ".git" {
			units = append(units, nested{path: r, kind: nestedGitDir})
			continue
		}
		if slices.Contains(trees, filepath.Dir(r)) {
			continue
		}
		units = append(units, nested{path: r, kind: nestedDotGit})
		mods := filepath.Join(r, "modules")
		if !pathPresent(mods) {
			continue
		}
		if budget <= 0 {
			skipped = append(skipped, mods)
			continue
		}
		dirs, n := b.modulesRead(mods, budget)
		budget -= n
		for _, d := range dirs {
			units = append(units, nested{path: d, kind: nestedGitDir})
		}
	}
	if len(skipped) > 0 {
		b.uncovered = append(b.uncovered, fmt.Sprintf("the submodules' git directories of %d nested repositories, the newest, such as %s, were not looked at: a call reads at most %d entries of nested .git/modules directories", len(skipped), skipped[0], walkMaxEntries))
	}
	for _, p := range projects {
		units = append(units, nested{path: p, kind: nestedProject})
	}
	for i := range units {
		units[i].born = birthTime(units[i].path)
	}
	slices.SortStableFunc(units, func(x, y nested) int { return compareBirth(x.born, y.born) })
	return units
}

// protectNested protects units in order until they have added
// maxNestedMounts mounts, and states what is left. Past the bound, the
// call runs with the newest left writable rather than fail: failing
// would let one command make run_command unusable in its root for every
// later call (make the repositories once, and every call fails until a
// person finds them), while what the bound leaves out, the newest, cannot
// be a repository that was there before the command that made the others
// ran (nestedUnits). The sentence names the root and what to do, and
// UncoveredHint turns the root (Policy.Unprotected) into a line of the
// call's output.
func (b *builder) protectNested(units []nested, trees []string) error {
	start := len(b.mounts)
	for i, u := range units {
		if err := b.ctx.Err(); err != nil {
			return fmt.Errorf("confine: call %s: stopped protecting the repositories nested in %s: %w", b.c.ID, strings.Join(b.c.Roots, ", "), err)
		}
		if len(b.mounts)-start >= maxNestedMounts {
			tree := b.treeOf(u.path)
			b.uncovered = append(b.uncovered, fmt.Sprintf("%s holds more nested repositories and project files than a call protects (%d mounts): %d git directories and project files, the newest, such as %s, were left unprotected and keep their hooks and config writable; remove or move the nested repositories the project does not need", tree, maxNestedMounts, len(units)-i, u.path))
			b.unprotected = append(b.unprotected, tree)
			return nil
		}
		switch u.kind {
		case nestedDotGit:
			b.protectDotGit(u.path, trees)
		case nestedGitDir:
			b.protectGitDir(u.path, trees)
		case nestedProject:
			b.bindInside(MountRead, u.path, trees)
		}
	}
	return nil
}

// treeOf is the root or extra writable path holding p.
func (b *builder) treeOf(p string) string {
	for _, t := range slices.Concat(b.c.Roots, b.s.ExtraWritable) {
		if within(p, t) {
			return t
		}
	}
	return filepath.Dir(p)
}

// protectDotGit protects the repository whose .git is dotgit. A .git
// directory is bound onto itself, then its hooks, config and info
// read-only (protectGitDir). A .git file (a worktree or submodule:
// "gitdir: <path>") is bound read-only and the git directory it names
// protected the same way when it lies in a writable tree; one outside is
// not mounted, so git inside such a worktree fails rather than show
// another tree. Each is pinned where it is (pin).
func (b *builder) protectDotGit(dotgit string, trees []string) {
	fi, err := os.Lstat(dotgit)
	switch {
	case err != nil:
		return
	case fi.Mode().IsRegular():
		b.pin(b.bindInside(MountRead, dotgit, trees))
		if gd := gitdirOf(dotgit); gd != "" {
			b.protectGitDir(gd, trees)
			if cd := commonDir(gd); cd != "" {
				b.protectGitDir(cd, trees)
			}
		}
	case fi.IsDir():
		b.protectGitDir(dotgit, trees)
	}
	b.protectHooksPath(filepath.Dir(dotgit), trees)
}

// protectHooksPath binds read-only each core.hooksPath of tree's
// repository (its config, config.worktree, the user's configuration)
// that names a directory in a writable tree: git outside runs the hooks
// there. One that does not exist yet is made first, empty, as the
// hooks directory is, or the command could make it and fill it.
func (b *builder) protectHooksPath(tree string, trees []string) {
	for _, hp := range hooksPaths(tree, b.s.Home) {
		if !pathPresent(hp) {
			b.makeInside(hp, trees)
		}
		b.bindInside(MountRead, hp, trees)
	}
}

// makeInside makes the directory p, and its missing parents, when p lies
// in one of trees; the directories are made beneath the tree's own, with
// no symlink followed, so what a command left there cannot make Build
// create a directory elsewhere. Those made are remembered (b.made).
func (b *builder) makeInside(p string, trees []string) {
	top := ""
	for _, t := range trees {
		if within(p, t) && p != t && len(t) > len(top) {
			top = t
		}
	}
	if top == "" {
		return
	}
	root, err := os.OpenRoot(top)
	if err != nil {
		return
	}
	defer root.Close()
	rel, err := filepath.Rel(top, p)
	if err != nil {
		return
	}
	d := "."
	for _, name := range strings.Split(rel, string(filepath.Separator)) {
		d = filepath.Join(d, name)
		if _, err := root.Lstat(d); err == nil {
			continue
		}
		if err := root.Mkdir(d, 0o755); err != nil {
			return
		}
		b.made = append(b.made, filepath.Join(top, d))
	}
}

// maxModules bounds the submodules' git directories protected in one
// .git/modules: each costs a handful of mounts, and a command can make
// thousands of directories there.
const maxModules = 64

// modulesRead returns the git directories of a repository's submodules,
// in mods (.git/modules), to protect: the maxModules oldest, read from at
// most limit entries; and how many entries it read. Oldest first: a
// command can make many directories there to push the real ones past the
// bound, but cannot make one older than those that were there before it
// ran. What the bound leaves out is stated.
func (b *builder) modulesRead(mods string, limit int) ([]string, int) {
	l, err := readDir(mods, 0, false, limit, nil)
	if err != nil && !errors.Is(err, errTooMany) {
		return nil, l.n // no submodules
	}
	dirs := make([]string, len(l.subdirs))
	for i, d := range l.subdirs {
		dirs[i] = filepath.Join(mods, d)
	}
	dirs = oldestFirst(dirs)
	if len(dirs) > maxModules {
		b.uncovered = append(b.uncovered, fmt.Sprintf("%s holds %d directories; the %d oldest were protected as submodules' git directories, the others, such as %s, keep their hooks and config writable", mods, len(dirs), maxModules, dirs[maxModules]))
		dirs = dirs[:maxModules]
	}
	if errors.Is(err, errTooMany) {
		b.uncovered = append(b.uncovered, fmt.Sprintf("%s holds more than %d entries; those past them were not looked at", mods, limit))
	}
	return dirs, l.n
}

// protectGitDir shows the git directory gd to the command through a
// stage (stage.go): what it writes at the top (the index, HEAD, lock
// files) is applied after the call from the names git writes there, so
// a commondir, config.worktree or gitdir it writes never reaches the
// real directory. objects, refs, modules, worktrees and lfs are bound
// through, writable, and swept after the call for the links the
// command made there (submodules' and worktrees' git directories are
// staged in turn; the reflogs are staged with the top), objects/info is
// staged too (alternates), and hooks, config, config.worktree, info,
// commondir and gitdir are read-only. The
// git directory is pinned where it is: every directory between its root
// and it becomes a mount point, so a command cannot move the repository
// where the next call's search does not look (deeper than walkMaxDepth)
// and write its hooks there.
func (b *builder) protectGitDir(gd string, trees []string) {
	real, err := filepath.EvalSymlinks(gd)
	if err != nil || !underAny(real, trees) || b.exposes(real) {
		return
	}
	if fi, err := os.Stat(real); err != nil || !fi.IsDir() || b.staged[real] {
		return
	}
	b.pin(real)
	// A missing hooks directory would let the command create hooks that
	// git outside then runs: it is made, empty, so it can be bound.
	// When that fails, there is nothing to bind and the gap stays.
	_ = os.Mkdir(filepath.Join(real, "hooks"), 0o755)
	if !b.stage(real) {
		b.protectGitFiles(real, trees)
		return
	}
	for _, name := range stagedThrough {
		p := filepath.Join(real, name)
		if fi, err := os.Lstat(p); err == nil && fi.IsDir() {
			b.add(Mount{Kind: MountWrite, Source: p, Target: p}, "")
		}
	}
	if info := filepath.Join(real, "objects", "info"); isDir(filepath.Join(real, "objects")) {
		// git init makes it; a repository without it gets it, empty, to
		// stage it, or the command could write alternates there.
		_ = os.Mkdir(info, 0o755)
		if fi, err := os.Lstat(info); err == nil && fi.IsDir() {
			b.stage(info)
		}
	}
	b.protectGitFiles(real, trees)
	wts, _ := b.modulesRead(filepath.Join(real, "worktrees"), walkMaxEntries)
	for _, wt := range wts {
		b.protectGitDir(wt, trees)
	}
}

// protectGitFiles binds read-only what git reads in the git directory
// real as its configuration and code, where it exists. A file (or hook)
// with other hard links is first replaced by a copy (breakLinks): a bind
// covers one path to a file, not the others.
func (b *builder) protectGitFiles(real string, trees []string) {
	if underAny(real, trees) && !b.exposes(real) {
		b.breakLinks(real, []string{"hooks", "config", "config.worktree", "commondir", "gitdir"})
	}
	for _, name := range []string{"hooks", "config", "config.worktree", "info", "commondir", "gitdir"} {
		p := filepath.Join(real, name)
		b.bindInside(MountRead, p, trees)
		if fi, err := os.Lstat(p); err == nil && fi.Mode()&os.ModeSymlink != 0 {
			// A link (.git/hooks -> ../.githooks) is an entry of the
			// git directory: the link itself is listed too, for the
			// launcher to keep in place, or a command replaces it with
			// a directory of its own hooks.
			if m := (Mount{Kind: MountRead, Source: hostPath(p), Target: p}); !b.have[m] {
				b.add(m, "")
			}
		}
	}
}

// afterCall runs once the command has ended: it applies what the
// command wrote in the staged git directories (a caller that reports
// what was refused has applied them already: applyStaged empties each
// stage), removes the strays, and the directories Build made that are
// still empty. The emptied stages go with the call's tmp
// (prepareCall).
func (b *builder) afterCall() {
	if b.stageRoot != "" {
		p := &Policy{Mounts: b.mounts}
		applyStaged(p)
	}
	for _, p := range b.strays {
		if pathPresent(p) {
			os.RemoveAll(p) // not following a link
		}
	}
	for i := len(b.made) - 1; i >= 0; i-- {
		os.Remove(b.made[i]) // only when empty
	}
}

func pathPresent(p string) bool {
	_, err := os.Lstat(p)
	return err == nil
}

// bindInside binds p (resolved) onto itself as kind when the real path
// lies in one of trees and shows no secret, and returns the real path
// ("" when nothing was bound).
func (b *builder) bindInside(kind MountKind, p string, trees []string) string {
	real, err := filepath.EvalSymlinks(p)
	if err != nil || !underAny(real, trees) || b.exposes(real) {
		return ""
	}
	// The search finds again what protectInside bound already.
	m := Mount{Kind: kind, Source: real, Target: real}
	if !b.have[m] {
		b.add(m, "")
	}
	return real
}

// hideState hides toolhost's state directory (the journal, read caches,
// other calls' tmp and caches) and its other files that hold secrets
// (Settings.Hidden) where a mounted tree shows them. The call's own tmp
// and cache are mounted elsewhere (/tmp, cacheTarget). A path that does
// not exist is not hidden: nothing of it is shown yet, and a command
// that makes it writes only what it knows. A file is hidden where its
// links lead, since the mounts show trees by their real paths (and a
// link cannot be mounted over).
func (b *builder) hideState() {
	for _, p := range []string{b.s.StateDir, resolved(b.s.StateDir)} {
		if p != "" && b.shown(p) {
			b.add(Mount{Kind: MountHide, Target: p}, "")
			b.pins = append(b.pins, p)
		}
	}
	for _, h := range b.s.Hidden {
		p, err := filepath.EvalSymlinks(h)
		if !isAbsClean(h) || err != nil || !b.shown(p) {
			continue
		}
		b.add(Mount{Kind: MountHide, Target: p}, "")
		b.pins = append(b.pins, p)
	}
}

// hideSecrets covers every secret that a mounted tree shows.
func (b *builder) hideSecrets() {
	for _, s := range b.secrets {
		if !b.shown(s) {
			continue
		}
		if _, err := os.Lstat(s); err == nil {
			b.add(Mount{Kind: MountHide, Target: s}, "")
			b.pins = append(b.pins, s)
		}
	}
}

// pinAncestors binds onto itself each directory between a writable
// root's top and a path Build looks for by name: a hidden secret, the
// hidden state directory, toolhost's configuration. A mount point cannot
// be renamed, so a command cannot move such a path away from where the
// next call's Build looks for it (mv ~/.config ~/.cfg2 would carry
// ~/.config/gh out of its hide; the call's own hide moves with it, the
// next call's finds nothing to cover). Only directories spelled without
// links are pinned: the launcher refuses a source through a link, and
// a path through a link is not where Build looked.
func (b *builder) pinAncestors() {
	for _, p := range b.pins {
		b.pin(p)
	}
}

// pin binds onto itself each writable directory between p and the top of
// the writable root or extra writable path holding it (pinAncestors).
func (b *builder) pin(p string) {
	if b.s.Mode != ModeWorkspaceWrite || p == "" {
		return
	}
	top := ""
	for _, t := range slices.Concat(b.c.Roots, b.s.ExtraWritable) {
		if within(p, t) && p != t && len(t) > len(top) {
			top = t
		}
	}
	if top == "" {
		return
	}
	for d := filepath.Dir(p); d != top && within(d, top); d = filepath.Dir(d) {
		if m := b.effective(d); m == nil || m.Kind != MountWrite || m.Target == d {
			continue // not writable here, or a mount point already
		}
		if real, err := filepath.EvalSymlinks(d); err != nil || real != d {
			continue
		}
		b.add(Mount{Kind: MountWrite, Source: d, Target: d}, "")
	}
}

// effective is the mount added so far that decides what p is inside: the
// deepest holding it, the latest of equals.
func (b *builder) effective(p string) *Mount { return deciding(b.mounts, b.last, p) }

// deciding is the mount of mounts that decides what p is inside:
// the deepest holding it, the latest of equals (the launcher applies
// them in order, Build having sorted them stably by depth). last indexes
// mounts by target, the latest of each (lastByTarget). The deepest mount
// holding p is at p or its nearest ancestor that is a target: one lookup
// per level, whatever the number of mounts (a root with thousands of
// nested repositories has thousands).
func deciding(mounts []Mount, last map[string]int, p string) *Mount {
	for d := p; ; d = filepath.Dir(d) {
		if i, ok := last[d]; ok {
			return &mounts[i]
		}
		if d == "/" || d == "." {
			return nil
		}
	}
}

// lastByTarget indexes mounts by target: the latest at each.
func lastByTarget(mounts []Mount) map[string]int {
	last := make(map[string]int, len(mounts))
	for i, m := range mounts {
		last[m.Target] = i
	}
	return last
}

// exposes reports whether showing p would show a secret.
func (b *builder) exposes(p string) bool { return exposesSecret(p, b.secrets) }

// check is the last line: every target absolute and clean, no mount but a
// hide at or under a secret, and no Landlock rule inside a secret.
func (b *builder) check() error {
	for _, m := range b.mounts {
		if !isAbsClean(m.Target) || m.Kind != MountTmpfs && m.Kind != MountHide && !isAbsClean(m.Source) {
			return fmt.Errorf("confine: call %s: a mount is not absolute and clean: %+v", b.c.ID, m)
		}
		if m.Kind == MountHide {
			continue
		}
		for _, s := range b.secrets {
			if within(m.Target, s) || m.Source != "" && within(m.Source, s) {
				return fmt.Errorf("confine: call %s: %s would be shown to the command, but it is or lies in %s; refusing to run", b.c.ID, m.Target, s)
			}
		}
	}
	for _, p := range slices.Concat(b.rw, b.ro) {
		for _, s := range b.secrets {
			if within(p, s) {
				return fmt.Errorf("confine: call %s: %s lies in %s, which commands may never read; refusing to run", b.c.ID, p, s)
			}
		}
	}
	return nil
}

// commandEnv is the command's environment: the call's (Call.Environ, else
// Settings.Environ) less the session's agent sockets, with PWD (the
// shell otherwise takes toolhost's own, a directory it may not even
// see), TMPDIR, the tool caches, and the network mode's variables set.
func (b *builder) commandEnv() []string {
	set := map[string]string{"PWD": b.c.Dir, "TMPDIR": "/tmp"}
	if !b.s.ShareCaches {
		for k, sub := range map[string]string{
			"GOCACHE": "go-build", "GOTMPDIR": "go-tmp", "npm_config_cache": "npm",
			"PIP_CACHE_DIR": "pip", "UV_CACHE_DIR": "uv", "XDG_CACHE_HOME": "xdg",
		} {
			set[k] = filepath.Join(cacheTarget, sub)
		}
	}
	switch b.s.Network {
	case NetworkOff:
		// Fail at once with a clear message instead of hanging on DNS.
		set["GOPROXY"] = "off"
		set["CARGO_NET_OFFLINE"] = "true"
		set["npm_config_offline"] = "true"
	case NetworkAllowlist:
		http := fmt.Sprintf("http://127.0.0.1:%d", proxyPort)
		socks := fmt.Sprintf("socks5h://127.0.0.1:%d", proxyPort)
		for _, k := range []string{"HTTP_PROXY", "HTTPS_PROXY", "http_proxy", "https_proxy"} {
			set[k] = http
		}
		set["ALL_PROXY"], set["all_proxy"] = socks, socks
		set["NO_PROXY"], set["no_proxy"] = "", ""
	}
	drop := []string{"SSH_AUTH_SOCK", "SSH_AGENT_PID", "GPG_AGENT_INFO", "DBUS_SESSION_BUS_ADDRESS", "XDG_RUNTIME_DIR"}
	var env []string
	for _, kv := range b.environ {
		k, _, _ := strings.Cut(kv, "=")
		if _, ok := set[k]; ok || slices.Contains(drop, k) {
			continue
		}
		env = append(env, kv)
	}
	keys := make([]string, 0, len(set))
	for k := range set {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		env = append(env, k+"="+set[k])
	}
	return env
}

// limits fills l's defaults: file size and open files always get one;
// CPU time stays unlimited unless set, since the call's deadline stops a
// command anyway and a long build is legitimate.
func limits(l Limits) Limits {
	if l.FileSizeBytes == 0 {
		l.FileSizeBytes = spec.DefaultFileSizeBytes
	}
	if l.OpenFiles == 0 {
		l.OpenFiles = spec.DefaultOpenFiles
	}
	return l
}

// gitdirOf reads a .git file's "gitdir: <path>" (relative to the file's
// directory), "" when it is not one.
func gitdirOf(dotgit string) string {
	line := firstLine(dotgit)
	gd, ok := strings.CutPrefix(line, "gitdir: ")
	if !ok || gd == "" {
		return ""
	}
	if !filepath.IsAbs(gd) {
		gd = filepath.Join(filepath.Dir(dotgit), gd)
	}
	return filepath.Clean(gd)
}

// commonDir is a worktree's git directory's commondir (where hooks and
// config live), "" when it has none.
func commonDir(gitdir string) string {
	cd := firstLine(filepath.Join(gitdir, "commondir"))
	if cd == "" {
		return ""
	}
	if !filepath.IsAbs(cd) {
		cd = filepath.Join(gitdir, cd)
	}
	return filepath.Clean(cd)
}

// hooksPaths are the core.hooksPath values that apply to tree's
// repository (husky's .husky, say), as absolute paths: git outside runs
// the hooks there. They are read, in a small reading of each file's
// [core] section, from the repository's config and config.worktree (in
// the git directory a .git file names, and its commondir) and from the
// user's configuration; a relative path is the tree's, a "~/" one home's.
func hooksPaths(tree, home string) []string {
	gd := filepath.Join(tree, ".git")
	if g := gitdirOf(gd); g != "" {
		gd = g
	}
	files := []string{filepath.Join(gd, "config"), filepath.Join(gd, "config.worktree")}
	if cd := commonDir(gd); cd != "" {
		files = append(files, filepath.Join(cd, "config"))
	}
	if home != "" {
		files = append(files, filepath.Join(home, ".gitconfig"), filepath.Join(home, ".config", "git", "config"))
	}
	var out []string
	for _, f := range files {
		v := coreHooksPath(f)
		switch {
		case v == "":
			continue
		case strings.HasPrefix(v, "~/") && home != "":
			v = filepath.Join(home, v[2:])
		case strings.HasPrefix(v, "~"):
			continue // another user's home
		case !filepath.IsAbs(v):
			v = filepath.Join(tree, v)
		}
		out = append(out, filepath.Clean(v))
	}
	return dedupe(out)
}

// coreHooksPath is the last core.hooksPath set in the config file p, ""
// when none or unreadable.
func coreHooksPath(p string) string {
	f, err := os.Open(p)
	if err != nil {
		return ""
	}
	defer f.Close()
	sc := bufio.NewScanner(io.LimitReader(f, 64<<10))
	core, v := false, ""
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if strings.HasPrefix(line, "[") {
			core = strings.EqualFold(strings.Trim(line, "[] \t"), "core")
			continue
		}
		k, val, ok := strings.Cut(line, "=")
		if core && ok && strings.EqualFold(strings.TrimSpace(k), "hookspath") {
			v = strings.Trim(strings.TrimSpace(val), `"`)
		}
	}
	return v
}

// firstLine is the first line of a small file, "" when unreadable.
func firstLine(p string) string {
	f, err := os.Open(p)
	if err != nil {
		return ""
	}
	defer f.Close()
	buf := make([]byte, 4096)
	n, _ := io.ReadFull(f, buf)
	line, _, _ := strings.Cut(string(buf[:n]), "\n")
	return strings.TrimSpace(line)
}

// safeName keeps what a call id may put in a directory name: letters,
// digits, - and _, at most 32 of them. Call ids come from the model.
func safeName(id string) string {
	var sb strings.Builder
	for _, r := range id {
		if sb.Len() == 32 {
			break
		}
		if r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '-' || r == '_' {
			sb.WriteRune(r)
		}
	}
	return sb.String()
}

func envMap(environ []string) map[string]string {
	m := make(map[string]string, len(environ))
	for _, kv := range environ {
		if k, v, ok := strings.Cut(kv, "="); ok {
			m[k] = v
		}
	}
	return m
}

func resolved(p string) string {
	r, err := filepath.EvalSymlinks(p)
	if err != nil || r == p {
		return ""
	}
	return r
}

func isAbsClean(p string) bool { return filepath.IsAbs(p) && filepath.Clean(p) == p }

func depth(p string) int {
	if p == "/" {
		return 0
	}
	return strings.Count(p, "/")
}
