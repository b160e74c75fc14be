// Package host is toolhost's composition root: it wires the configuration,
// the sandbox, the plugin runtime, the registry, the conversations' read
// caches and the engine into one Host that offers tools and processes
// batches of tool calls. The command line, the server and Go programs that
// embed toolhost all open a Host; nothing else assembles these parts, so
// every entry point enforces the same policy.
package host

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"path/filepath"
	"sync"
	"time"

	"github.com/toolhost/toolhost/abi"
	"github.com/toolhost/toolhost/host/internal/config"
	"github.com/toolhost/toolhost/host/internal/engine"
	"github.com/toolhost/toolhost/host/internal/extism"
	"github.com/toolhost/toolhost/host/internal/hostfn"
	"github.com/toolhost/toolhost/host/internal/inside"
	"github.com/toolhost/toolhost/host/internal/jobs"
	"github.com/toolhost/toolhost/host/internal/journal"
	"github.com/toolhost/toolhost/host/internal/readcache"
	"github.com/toolhost/toolhost/host/internal/registry"
	"github.com/toolhost/toolhost/host/internal/runtime"
	"github.com/toolhost/toolhost/host/internal/sandbox"
)

// Options say where a Host finds its plugins and keeps its state, and
// which configuration it enforces.
type Options struct {
	// PluginDir is the trusted plugin directory: every *.wasm in it is
	// loaded. Required.
	PluginDir string
	// Config is the configuration to enforce; nil means DefaultConfig().
	// Relative roots resolve against the working directory.
	Config *Config
	// CacheDir keeps compiled plugins between processes; "" compiles
	// every plugin anew in each process. DefaultCacheDir is the usual one.
	CacheDir string
	// StateDir keeps each conversation's read cache between processes,
	// and the journal (journal.db) unless [journal] path names another
	// file; "" keeps the caches in memory for the Host's lifetime and,
	// without a [journal] path, no journal.
	StateDir string
	// Protected are more paths no tool may read or write, with
	// everything under them: the operator's configuration files and the
	// user's configuration directory. run_command's commands find them
	// hidden (empty, or an unreadable directory) wherever they lie.
	Protected []string
	// Launcher is the path of a toolhost binary that confines run_command's
	// commands (one whose main calls RunLauncher first; the toolhost CLI
	// passes "/proc/self/exe"). "" leaves commands without a launcher, so
	// they fail closed unless the operator's configuration sets
	// [tools.run_command] sandbox = "off".
	Launcher string
	// Logger receives the host's logs; nil discards them.
	Logger *slog.Logger
}

// Host runs tool calls under one configuration. It is safe for concurrent
// use; Close releases it.
type Host struct {
	log *slog.Logger
	rt  *runtime.Runtime[hostfn.Env]
	ext *extism.Loader // Extism MCP plugins' modules
	reg *registry.Registry
	sb  *sandbox.Sandbox
	eng *engine.Engine
	// journal records every batch before it runs, and keeps the read
	// caches; nil keeps no record, and read caches in memory
	// only.
	commands *commandSandbox // confines run_command's commands
	journal  *journal.Journal
	jobs     *jobs.Manager // run_command's background jobs and kept outputs
	saves    *saver        // nil without a journal
	prune    *pruner       // nil without a journal

	mu     sync.Mutex // calls of a parallel batch load caches concurrently
	caches map[string]*conversationCache
	clock  uint64 // orders uses of caches, to evict the least recent

	closeOnce sync.Once
	closeErr  error // the first Close's
}

// conversationCache is a conversation's read cache in memory.
type conversationCache struct {
	reads    *readcache.Cache
	lastUsed uint64
}

// maxCachedConversations bounds the read caches a long-running host keeps
// in memory. An evicted one is saved first (with a state directory), so
// only a host without one forgets reads: its overwrites are then refused
// as stale, never allowed.
const maxCachedConversations = 256

// Open loads the plugins (reading their manifests, compiling nothing yet),
// opens the sandbox on the configured roots and builds the engine.
func Open(ctx context.Context, opts Options) (*Host, error) {
	if opts.PluginDir == "" {
		return nil, errors.New("host: Options.PluginDir is empty; name the plugin directory")
	}
	// With a lock in the plugin directory, only the modules it pins load
	// or compile.
	verify, err := lockVerifier(opts.PluginDir)
	if err != nil {
		return nil, err
	}
	cfg := opts.Config
	if cfg == nil {
		cfg = config.Default()
	}
	// An embedder's configuration gets the checks a file's gets: a
	// misspelled mode must not quietly become another policy.
	if err := cfg.Validate(); err != nil {
		return nil, fmt.Errorf("configuration: %w", err)
	}
	log := opts.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	st, err := fromConfig(cfg)
	if err != nil {
		return nil, err
	}
	// toolhost's own directories are never reachable by a tool. Those
	// holding what a tool must not read (the operator's files and their
	// token, the journal) are hidden from commands too, as the state
	// directory is; the plugins and their cache are only kept read-only.
	hidden := absolute(opts.Protected...)
	if p := cfg.Journal.Path; p != "" && p != journal.Memory {
		// The journal outside the state directory is as out of reach:
		// a tool that could write it could forge what recovery acts on,
		// and one that could read it would see other calls' arguments.
		hidden = append(hidden, absolute(p, p+"-wal", p+"-shm", p+"-journal", journal.LogDir(p))...)
	}
	st.sandbox.ProtectedDirs = append(absolute(opts.StateDir, opts.CacheDir, opts.PluginDir), hidden...)
	if opts.StateDir != "" {
		st.sandbox.RecoveryDir = filepath.Join(opts.StateDir, "txn")
		st.sandbox.LockDir = filepath.Join(opts.StateDir, "locks")
	}
	sb, err := sandbox.New(st.sandbox)
	if err != nil {
		return nil, err // it says "sandbox: " itself
	}
	recoverCommits(sb, log)
	h := &Host{log: log, sb: sb, caches: map[string]*conversationCache{}}
	if err := h.openParts(ctx, cfg, opts, verify, st.sandbox.ProtectedDirs, hidden); err != nil {
		sb.Close()
		return nil, err
	}
	if h.journal != nil {
		h.saves = newSaver(h.save)
		h.prune = startPruner(h.journal, h.jobs, time.Duration(cfg.Journal.RetentionDays)*24*time.Hour, log)
	}
	for _, name := range h.ext.Unused() {
		log.Warn("the configuration grants an Extism plugin that is not in the plugin directory; check the name (the file's name without .wasm, or its folder's name)", "key", "extism."+name)
	}
	ecfg := st.engine
	ecfg.Registry, ecfg.Sandbox, ecfg.Logger, ecfg.ReadCache = h.reg, sb, log, h.readCache
	ecfg.Confiner = h.commands.confiner
	ecfg.Jobs = h.jobs
	if h.journal != nil {
		ecfg.Journal = inside.EngineJournal(h.journal)
	}
	h.eng = engine.New(ecfg)
	return h, nil
}

// openParts opens the parts of a host that do not depend on each other,
// at once: the confinement of commands (a probe of the kernel, which
// waits for a child process), the journal and the jobs (recovering what
// a crashed predecessor left, which waits for the disk), and the plugins
// (reading manifests and compiling their schemas, which takes the CPU).
// Done one after the other they made most of a server's start-up. It
// returns once every part is open, so the journal's and the jobs'
// recovery still precede any call; on an error every part that opened is
// closed, and the error reported is the first in that order.
func (h *Host) openParts(ctx context.Context, cfg *Config, opts Options, verify func(string, []byte) error, protected, hidden []string) error {
	var commandsErr, recordsErr, pluginsErr error
	var wg sync.WaitGroup
	wg.Go(func() {
		h.commands, commandsErr = openCommandSandbox(ctx, cfg, opts.Launcher, opts.StateDir, h.sb.Roots(), protected, hidden, h.log)
	})
	wg.Go(func() { recordsErr = h.openRecords(ctx, cfg, opts.StateDir) })
	wg.Go(func() { pluginsErr = h.openPlugins(ctx, cfg, opts, verify) })
	wg.Wait()
	err := errors.Join(commandsErr, recordsErr, pluginsErr)
	if err == nil {
		return nil
	}
	if commandsErr == nil {
		h.commands.close()
	}
	if recordsErr == nil {
		h.closeSaves()
		h.closeJournal()
	}
	if pluginsErr == nil {
		h.ext.Close(ctx)
		h.rt.Close(ctx)
	}
	return cmp.Or(commandsErr, recordsErr, pluginsErr)
}

// openRecords opens the journal, recovering a crash's leftovers, and
// the jobs, killing those a crash left running: both before any tool
// can run (FR-RES-04c).
func (h *Host) openRecords(ctx context.Context, cfg *Config, stateDir string) error {
	j, err := inside.OpenJournal(ctx, cfg.Journal, stateDir, h.log)
	if err != nil {
		return err
	}
	h.journal = j
	if h.jobs, err = openJobs(cfg.Tools.Jobs, stateDir, h.log); err != nil {
		h.closeJournal()
		h.journal = nil
		return err
	}
	return nil
}

// openPlugins starts the plugin runtimes and loads the plugin directory.
func (h *Host) openPlugins(ctx context.Context, cfg *Config, opts Options, verify func(string, []byte) error) error {
	var err error
	if h.rt, err = runtime.New(ctx, runtime.Config[hostfn.Env]{CacheDir: opts.CacheDir, Logger: h.log, HostFunctions: hostfn.Functions(), Verify: verify}); err != nil {
		return err
	}
	if h.ext, err = extism.NewLoader(extism.Options{CacheDir: opts.CacheDir, Grants: extismGrants(cfg.Extism), Logger: h.log, Verify: verify}); err != nil {
		h.rt.Close(ctx)
		return err
	}
	if h.reg, err = registry.LoadWith(ctx, h.rt, opts.PluginDir, registry.Options{Foreign: extismModules{h.ext}}); err != nil {
		h.ext.Close(ctx)
		h.rt.Close(ctx)
		abs, _ := filepath.Abs(opts.PluginDir)
		return fmt.Errorf("%w (plugin directory %s)", err, abs)
	}
	return nil
}

// recoverCommits finishes the multi-file commits a crash interrupted, all
// or nothing, before any tool runs. A record that cannot be replayed is
// kept for the next start; tools still run, since every commit from now on
// is whole.
func recoverCommits(sb *sandbox.Sandbox, log *slog.Logger) {
	done, err := sb.Recover()
	for _, r := range done {
		if r.Completed {
			log.Warn("a commit interrupted by a crash had completed; removed its backups", "record", r.Record)
		} else {
			log.Warn("undid a commit interrupted by a crash", "record", r.Record, "restored", r.Restored, "removed", r.Removed, "moved back", r.Moved, "kept", r.Kept)
		}
	}
	if err != nil {
		log.Error("cannot finish a commit interrupted by a crash; its files may hold a mix of old and new content until it is repaired", "err", err)
	}
}

// Close releases the plugins, the sandbox and the journal. Calls still
// running fail. Closing again does nothing and returns the first
// Close's error.
func (h *Host) Close(ctx context.Context) error {
	h.closeOnce.Do(func() {
		h.closeSaves()
		err := errors.Join(h.ext.Close(ctx), h.rt.Close(ctx))
		h.sb.Close()
		h.closeErr = errors.Join(err, h.closeJournal(), h.commands.close())
	})
	return h.closeErr
}

// closeSaves stops what runs in the background: the jobs (killed),
// the pruner and the saver.
func (h *Host) closeSaves() {
	if err := h.jobs.Close(); err != nil {
		h.log.Error("background jobs outlived the host's close; the next start kills what is recorded of them", "err", err)
	}
	h.prune.close()
	if h.saves != nil {
		h.saves.close()
	}
}

// Tools returns the manifests a model is offered under the configured
// mode and policy (FR-MODE-01/02), sorted by name.
func (h *Host) Tools() []abi.Manifest { return h.eng.Advertised() }

// Installed returns the manifest of every loaded plugin, offered or not.
func (h *Host) Installed() []abi.Manifest {
	var ms []abi.Manifest
	for _, t := range h.reg.Tools() {
		ms = append(ms, t.Manifest)
	}
	return ms
}

// Formats lists the definition formats Definitions takes.
func Formats() []string { return registry.Formats() }

// Definitions renders manifests as tool definitions in a format of
// Formats: toolhost's own ("json") or a model provider's.
func Definitions(ms []abi.Manifest, format string) (any, error) {
	return registry.Definitions(ms, format)
}

// BatchOptions are one batch's inputs beyond its calls.
type BatchOptions struct {
	// Approver decides the calls that need confirmation; nil denies them
	// ("no approver is connected"), and so does an error from it.
	Approver Approver
	// Events receives the batch's events; nil drops them. A consumer
	// that does not keep up loses events (counted in Event.Dropped),
	// never holds a call past its deadline.
	Events EventSink
	// AvailableCapacityBytes is the caller's estimate of the room left in
	// the model's context for results (FR-REG-04b); 0 keeps the
	// configured fallback.
	AvailableCapacityBytes int64
	// Narrowing restricts the configured policy for this batch (a
	// transport's profile: fewer tools, approval forced, no parallel
	// calls); it can never widen it.
	Narrowing Narrowing
}

// Process runs one batch through the tool loop (plan, approve, run) and
// returns the plan and exactly one result per call, in call order.
func (h *Host) Process(ctx context.Context, b Batch, opts BatchOptions) (*Plan, []Result) {
	p, results := h.eng.Process(ctx, b, opts.Approver, engine.RunOptions{
		Events: opts.Events, AvailableCapacityBytes: opts.AvailableCapacityBytes, Narrowing: opts.Narrowing,
	})
	h.saveSoon(b.Conversation)
	return p, results
}

// Plan decides every call of a batch under the configured policy
// narrowed by n, running nothing and asking nobody: the first half of
// Process, for a caller that holds the plan for a decision made
// elsewhere (the HTTP batch API). Pass the plan to Run once decided.
func (h *Host) Plan(ctx context.Context, b Batch, n Narrowing) *Plan {
	return h.eng.Plan(ctx, b, n)
}

// Run runs a plan Plan made under d and returns exactly one result per
// call, in call order; it saves the conversation's read cache as Process
// does. opts.Approver is not used (d is the decision) and the plan's own
// narrowing applies.
func (h *Host) Run(ctx context.Context, p *Plan, d Decision, opts BatchOptions) []Result {
	results := h.eng.Run(ctx, p, d, engine.RunOptions{
		Events: opts.Events, AvailableCapacityBytes: opts.AvailableCapacityBytes, Narrowing: opts.Narrowing,
	})
	h.saveSoon(p.Batch.Conversation)
	return results
}

// Abandon ends a plan that will never run (cancelled before it ran) in
// the journal, with the results its caller gave its calls.
func (h *Host) Abandon(ctx context.Context, p *Plan, results []Result) {
	h.eng.Abandon(ctx, p, results)
}

// readCache returns a conversation's read cache, loaded from the state
// directory on first use.
func (h *Host) readCache(conversation string) *readcache.Cache {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.clock++
	if c, ok := h.caches[conversation]; ok {
		c.lastUsed = h.clock
		return c.reads
	}
	if len(h.caches) >= maxCachedConversations {
		h.evictLocked()
	}
	reads := readcache.New()
	if h.journal != nil {
		stored, err := h.journal.ListReads(context.Background(), conversation)
		if err != nil {
			h.log.Error("cannot load the read cache from the journal; files this conversation read count as unread", "conversation", conversation, "err", err)
		}
		entries := make([]readcache.Entry, len(stored))
		for i, r := range stored {
			entries[i] = readcache.Entry{Path: r.Path, SHA256: r.SHA256, ReadAt: r.ReadAt}
		}
		reads.Merge(entries)
		reads.OnRecord(func() { h.saveSoon(conversation) })
	}
	h.caches[conversation] = &conversationCache{reads: reads, lastUsed: h.clock}
	return reads
}

// evictLocked saves and drops the least recently used read cache.
func (h *Host) evictLocked() {
	var oldest string
	var min uint64
	for conv, c := range h.caches {
		if oldest == "" || c.lastUsed < min {
			oldest, min = conv, c.lastUsed
		}
	}
	h.saveLocked(oldest)
	delete(h.caches, oldest)
}

// saveSoon has the saver write a conversation's read cache back.
func (h *Host) saveSoon(conversation string) {
	if h.saves != nil {
		h.saves.soon(conversation)
	}
}

// save writes what a conversation's read cache recorded since its last
// save to the journal.
func (h *Host) save(conversation string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.saveLocked(conversation)
}

func (h *Host) saveLocked(conversation string) {
	c, ok := h.caches[conversation]
	if !ok || h.journal == nil {
		return
	}
	entries, mark := c.reads.Unsaved()
	reads := make([]journal.Read, len(entries))
	for i, e := range entries {
		reads[i] = journal.Read{Path: e.Path, SHA256: e.SHA256, ReadAt: e.ReadAt}
	}
	if err := h.journal.SaveReads(context.Background(), conversation, reads); err != nil {
		h.log.Error("cannot save the read cache in the journal; the next call may refuse to overwrite what this one read", "conversation", conversation, "err", err)
		return
	}
	c.reads.Saved(mark)
}

// DefaultCacheDir is toolhost's directory under the user cache directory.
func DefaultCacheDir() string { return runtime.DefaultCacheDir() }

// PackPlugin returns wasm with its manifest (from its describe export)
// stored in a custom section, so hosts list the tool without compiling it.
func PackPlugin(ctx context.Context, wasm []byte) ([]byte, error) {
	return runtime.Pack(ctx, wasm)
}

func absolute(dirs ...string) []string {
	var out []string
	for _, d := range dirs {
		if d == "" {
			continue
		}
		if abs, err := filepath.Abs(d); err == nil {
			out = append(out, abs)
		}
	}
	return out
}

// closeJournal closes the journal, if any.
func (h *Host) closeJournal() error {
	if h.journal == nil {
		return nil
	}
	if err := h.journal.Close(); err != nil {
		return fmt.Errorf("closing the journal: %w", err)
	}
	return nil
}

// Inside hands toolhost's own programs (its command line, server,
// conformance harness and tests) the engine and the journal h assembled.
// Its argument's type is internal to toolhost, so no other program can
// call it: everything an embedder needs is in Host's other methods.
func (h *Host) Inside(inside.Key) inside.Parts {
	return inside.Parts{Engine: h.eng, Journal: h.journal, Jobs: h.jobs}
}
