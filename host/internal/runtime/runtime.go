package runtime

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/imports/wasi_snapshot_preview1"

	"github.com/toolhost/toolhost/abi"
	"github.com/toolhost/toolhost/host/internal/loopguard"
	"github.com/toolhost/toolhost/host/internal/pool"
	"github.com/toolhost/toolhost/host/internal/reclaim"
	"github.com/toolhost/toolhost/host/internal/wasmbin"
)

// Config configures a Runtime whose host functions act on a call's state
// of type S. The zero value is usable.
type Config[S any] struct {
	// CacheDir holds compiled code and manifests between processes.
	// Empty disables both caches.
	CacheDir string
	// MemoryLimitPages caps each instance's linear memory, in 64 KiB pages.
	// Zero means DefaultMemoryLimitPages.
	MemoryLimitPages uint32
	// PoolSize is how many idle instances each plugin keeps. Zero means 4.
	PoolSize int
	// IdleMemoryBytes bounds the linear memory of an instance kept warm:
	// one whose memory grew past it during a call (a large result, a
	// large file) is closed after the call instead of pooled, so what it
	// grew to is given back rather than held by every idle instance.
	// Zero means DefaultIdleMemoryBytes.
	IdleMemoryBytes uint64
	// Interpreter uses wazero's interpreter instead of its compiler: no
	// native code generation, so modules start at once but run slower.
	Interpreter bool
	// StartupTimeout bounds a plugin's start-up: its _initialize (for a
	// Go plugin, the runtime and every init function) and describe. Zero
	// means DefaultStartupTimeout. A call's own deadline, when earlier,
	// applies to the start-up it waits for.
	StartupTimeout time.Duration
	// HostFunctions are what plugins may import from abi.HostModule, each
	// linked only for plugins whose manifest grants it. The runtime
	// provides abi.FnResponseTake itself.
	HostFunctions []HostFunction[S]
	// Verify, when set, vets a plugin module's bytes before the runtime
	// uses them: at Load, on the whole file, and again on exactly the
	// bytes the first compile reads, so a file replaced after Load is
	// refused rather than run. Its error is returned as is, so it names
	// the plugin (a lock of trusted modules' hashes).
	Verify func(path string, data []byte) error
	Logger *slog.Logger
}

// DefaultMemoryLimitPages is 256 MiB.
const DefaultMemoryLimitPages = 4096

// DefaultIdleMemoryBytes is eight times what a Go plugin's warm
// instance holds after returning a result of the output limit (4 MiB,
// measured), so only an instance a call inflated is closed; starting a
// new one costs 7–8 ms.
const DefaultIdleMemoryBytes = 32 << 20

// DefaultStartupTimeout is far above what a healthy plugin needs: a Go
// plugin starts in 4–25 ms compiled, and Pack, in the interpreter,
// compiles, starts and describes one in 0.2–0.3 s.
const DefaultStartupTimeout = 10 * time.Second

// DefaultCacheDir is toolhost's directory under the user cache directory.
func DefaultCacheDir() string {
	dir, err := os.UserCacheDir()
	if err != nil {
		return ""
	}
	return filepath.Join(dir, "toolhost")
}

// Runtime compiles and runs plugins, whose host functions act on the
// *S each call is given (Plugin.Call). It is safe for concurrent use.
type Runtime[S any] struct {
	rt        wazero.Runtime
	cfg       Config[S]
	log       *slog.Logger
	cache     wazero.CompilationCache
	hostFuncs map[string]HostFunction[S]

	// checked runs modules loopguard cannot instrument, and every
	// module in the interpreter, with wazero's per-iteration context
	// checks; created on first need.
	checkedMu     sync.Mutex
	checkedClosed bool
	checked       wazero.Runtime

	mu      sync.Mutex
	plugins map[*Plugin[S]]struct{} // loaded and not closed
	closed  bool

	reclaim reclaim.Reclaimer // gives inflated instances' memory back
}

// New creates a runtime and instantiates WASI for plugins (no preopens, no
// environment, no arguments: plugins reach the world only through host
// functions).
func New[S any](ctx context.Context, cfg Config[S]) (*Runtime[S], error) {
	if cfg.MemoryLimitPages == 0 {
		cfg.MemoryLimitPages = DefaultMemoryLimitPages
	}
	if cfg.PoolSize <= 0 {
		cfg.PoolSize = 4
	}
	if cfg.IdleMemoryBytes == 0 {
		cfg.IdleMemoryBytes = DefaultIdleMemoryBytes
	}
	if cfg.StartupTimeout <= 0 {
		cfg.StartupTimeout = DefaultStartupTimeout
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	r := &Runtime[S]{cfg: cfg, log: cfg.Logger, hostFuncs: make(map[string]HostFunction[S], len(cfg.HostFunctions)),
		plugins: map[*Plugin[S]]struct{}{}}
	for _, fn := range cfg.HostFunctions {
		if _, dup := r.hostFuncs[fn.Name]; dup || fn.Name == abi.FnResponseTake || fn.Func == nil {
			return nil, fmt.Errorf("runtime: host function %q is configured twice, is built in, or has no Func", fn.Name)
		}
		r.hostFuncs[fn.Name] = fn
	}
	if cfg.CacheDir != "" {
		cache, err := wazero.NewCompilationCacheWithDir(filepath.Join(cfg.CacheDir, "compiled"))
		if err != nil {
			return nil, fmt.Errorf("compilation cache in %s: %w", cfg.CacheDir, err)
		}
		r.cache = cache
	}
	rt, err := r.newEngine(ctx, false)
	if err != nil {
		if r.cache != nil {
			r.cache.Close(ctx)
		}
		return nil, err
	}
	r.rt = rt
	return r, nil
}

func (r *Runtime[S]) newEngine(ctx context.Context, checkContext bool) (wazero.Runtime, error) {
	rc := wazero.NewRuntimeConfigCompiler()
	if r.cfg.Interpreter {
		rc = wazero.NewRuntimeConfigInterpreter()
	}
	rc = rc.WithMemoryLimitPages(r.cfg.MemoryLimitPages).WithCloseOnContextDone(checkContext)
	if r.cache != nil {
		rc = rc.WithCompilationCache(r.cache)
	}
	rt := wazero.NewRuntimeWithConfig(ctx, rc)
	if _, err := wasi_snapshot_preview1.Instantiate(ctx, rt); err != nil {
		rt.Close(ctx)
		return nil, fmt.Errorf("instantiate WASI: %w", err)
	}
	return rt, nil
}

// checkedEngine returns the runtime with per-iteration context checks.
func (r *Runtime[S]) checkedEngine(ctx context.Context) (wazero.Runtime, error) {
	r.checkedMu.Lock()
	defer r.checkedMu.Unlock()
	if r.checkedClosed {
		// A Load or compile still running as Close ran: an engine made
		// now would never be closed.
		return nil, fmt.Errorf("runtime: %w", ErrClosed)
	}
	if r.checked == nil {
		rt, err := r.newEngine(ctx, true)
		if err != nil {
			return nil, err
		}
		r.checked = rt
	}
	return r.checked, nil
}

// Close closes every plugin loaded and not yet closed (see Plugin.Close),
// both engines and the compilation cache: it releases every compiled
// module and instance, their memory and their code. Calls still running
// fail. Close is safe to call more than once.
func (r *Runtime[S]) Close(ctx context.Context) error {
	r.mu.Lock()
	if r.closed {
		r.mu.Unlock()
		return nil
	}
	r.closed = true
	plugins := make([]*Plugin[S], 0, len(r.plugins))
	for p := range r.plugins {
		plugins = append(plugins, p)
	}
	r.mu.Unlock()
	for _, p := range plugins {
		p.Close(ctx)
	}
	r.checkedMu.Lock()
	r.checkedClosed = true
	if r.checked != nil {
		r.checked.Close(ctx)
	}
	r.checkedMu.Unlock()
	err := r.rt.Close(ctx)
	// The engines (and the compiled code they hold) belong to the cache,
	// not to the runtimes using it.
	if r.cache != nil {
		err = errors.Join(err, r.cache.Close(ctx))
	}
	return err
}

// adopt records a loaded plugin, for Close.
func (r *Runtime[S]) adopt(p *Plugin[S]) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closed {
		return fmt.Errorf("runtime is %w", ErrClosed)
	}
	r.plugins[p] = struct{}{}
	return nil
}

// forget drops a closed plugin.
func (r *Runtime[S]) forget(p *Plugin[S]) {
	r.mu.Lock()
	delete(r.plugins, p)
	r.mu.Unlock()
}

// Load reads a plugin's manifest and import list, without compiling it and
// without reading its code: only section headers, the import section and
// the manifest section are read — unless Config.Verify is set, which needs
// the whole module to vet (a packed module's bytes are then dropped, and
// read and vetted again by its first compile).
func (r *Runtime[S]) Load(ctx context.Context, path string) (*Plugin[S], error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("load plugin: %w", err)
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil, fmt.Errorf("load plugin: %w", err)
	}
	p := &Plugin[S]{rt: r, path: path, identity: fileIdentity(path, st), idle: pool.New[*instance[S]](r.cfg.PoolSize)}
	var file io.ReaderAt = f
	size := st.Size()
	var vetted []byte
	if r.cfg.Verify != nil {
		var buf bytes.Buffer
		buf.Grow(int(st.Size()) + bytes.MinRead)
		if _, err := buf.ReadFrom(f); err != nil {
			return nil, fmt.Errorf("plugin %s: %w", path, err)
		}
		if vetted, err = p.vet(buf.Bytes()); err != nil {
			return nil, err
		}
		// The manifest and imports are read from the bytes vetted, not
		// from the file, which may change meanwhile.
		file, size = bytes.NewReader(vetted), int64(len(vetted))
	}
	headers, err := wasmbin.ScanFile(file, size)
	if err != nil {
		return nil, fmt.Errorf("plugin %s: %w", path, err)
	}
	var raw []byte
	for _, h := range headers {
		switch {
		case h.ID == wasmbin.SectionCustom && h.Name == abi.ManifestSection && raw == nil:
			if raw, err = h.Read(file); err != nil {
				return nil, fmt.Errorf("plugin %s: %w", path, err)
			}
			p.packed = true
		case h.ID == wasmbin.SectionImport:
			if p.imports, err = functionImports(file, h); err != nil {
				return nil, fmt.Errorf("plugin %s: %w", path, err)
			}
		case h.ID == wasmbin.SectionStart:
			return nil, fmt.Errorf("plugin %s: %w", path, errStartSection)
		}
	}
	if raw == nil {
		if vetted != nil {
			// describe compiles the module now: the bytes vetted.
			p.wasmOnce.Do(func() { p.wasm = vetted })
		}
		if raw, err = r.manifest(ctx, p); err != nil {
			return nil, err // naming the plugin
		}
	}
	if err := json.Unmarshal(raw, &p.manifest); err != nil {
		return nil, fmt.Errorf("plugin %s: manifest is not valid JSON: %w", path, err)
	}
	if p.manifest.ABI != abi.Version {
		return nil, fmt.Errorf("plugin %s: manifest ABI %q, this host speaks %q", path, p.manifest.ABI, abi.Version)
	}
	p.manifestJSON = raw
	if err := checkDeclaredImports(p); err != nil {
		return nil, err
	}
	if err := r.adopt(p); err != nil {
		return nil, fmt.Errorf("plugin %s: %w", path, err)
	}
	return p, nil
}

// functionImports lists the module and name of each function import.
func functionImports(f io.ReaderAt, h wasmbin.SectionHeader) ([][2]string, error) {
	body, err := h.Read(f)
	if err != nil {
		return nil, err
	}
	imports, err := wasmbin.Imports(wasmbin.Section{ID: h.ID, Offset: int(h.Offset), Body: body})
	if err != nil {
		return nil, err
	}
	var out [][2]string
	for _, imp := range imports {
		if imp.Kind == wasmbin.KindFunc {
			out = append(out, [2]string{imp.Module, imp.Name})
		}
	}
	return out, nil
}

// checkDeclaredImports refuses, at load time and without compiling, a
// module importing a host function its manifest does not grant.
func checkDeclaredImports[S any](p *Plugin[S]) error {
	granted, err := Granted(p.manifest.Capabilities)
	if err != nil {
		return fmt.Errorf("plugin %s: %w", p.name(), err)
	}
	for _, imp := range p.imports {
		if err := checkImport(p.name(), imp[0], imp[1], granted); err != nil {
			return err
		}
	}
	return nil
}

// manifest finds the manifest of a module without a manifest section: in
// the manifest cache, or — slowest — by compiling the module and calling
// describe.
func (r *Runtime[S]) manifest(ctx context.Context, p *Plugin[S]) ([]byte, error) {
	wasm, err := p.module()
	if err != nil {
		return nil, err
	}
	cached := r.manifestCachePath(sha256.Sum256(wasm))
	if cached != "" {
		if raw, err := os.ReadFile(cached); err == nil {
			return raw, nil
		}
	}
	raw, err := p.describe(ctx)
	if err != nil {
		return nil, err
	}
	if cached != "" {
		if err := writeFileAtomic(cached, raw); err != nil {
			r.log.Warn("cannot cache plugin manifest", "plugin", p.path, "err", err)
		}
	}
	return raw, nil
}

func (r *Runtime[S]) manifestCachePath(sum [32]byte) string {
	if r.cfg.CacheDir == "" {
		return ""
	}
	return filepath.Join(r.cfg.CacheDir, "manifests", hex.EncodeToString(sum[:])+".json")
}

// guarded returns the plugin's module with loop guards. Instrumenting a
// Go-built module costs 10–25 ms and reading it whole another 8, so the
// result is cached on disk beside the compiled code, keyed by the module
// file's identity (path, size, modification and change times, inode) and
// the rewriter's version: a warm start never reads the original module.
//
// A vetted module (Config.Verify) is read and vetted before each compile
// anyway, and what is compiled must derive from exactly those bytes: its
// cached rewrite is keyed by their hash instead.
func (r *Runtime[S]) guarded(p *Plugin[S]) ([]byte, error) {
	key := p.identity
	if r.cfg.Verify != nil {
		wasm, err := p.module()
		if err != nil {
			return nil, err
		}
		sum := sha256.Sum256(wasm)
		key = "sha256-" + hex.EncodeToString(sum[:])
	}
	if r.cfg.CacheDir == "" || key == "" {
		return p.instrument()
	}
	path := filepath.Join(r.cfg.CacheDir, "guarded", key+"-v"+loopguard.Version+".wasm")
	if b, err := os.ReadFile(path); err == nil {
		return b, nil
	}
	b, err := p.instrument()
	if err != nil {
		return nil, err
	}
	if err := writeFileAtomic(path, b); err != nil {
		r.log.Warn("cannot cache instrumented plugin", "plugin", p.path, "err", err)
	}
	return b, nil
}

func writeFileAtomic(path string, data []byte) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	tmp, err := os.CreateTemp(filepath.Dir(path), ".tmp-*")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name())
	if _, err := tmp.Write(data); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	return os.Rename(tmp.Name(), path)
}

// Pack returns wasm with its manifest (from describe) stored in the
// toolhost.manifest custom section, so hosts can list the tool without
// compiling it. It runs the module in wazero's interpreter, which starts
// without native compilation.
func Pack(ctx context.Context, wasm []byte) ([]byte, error) {
	return pack(ctx, wasm, Config[struct{}]{Interpreter: true})
}

// errStartSection refuses a module with a wasm start section: wazero runs
// that function inside instantiation, before any export exists, so no
// deadline or interrupt flag could stop it if it spins.
var errStartSection = errors.New("the module has a wasm start section, which runs while it is instantiated where no deadline can stop it; toolhost plugins start through an exported _initialize (build a WASI reactor)")

// pack is Pack in a runtime configured by cfg.
func pack[S any](ctx context.Context, wasm []byte, cfg Config[S]) ([]byte, error) {
	sections, err := wasmbin.Sections(wasm)
	if err != nil {
		return nil, err
	}
	for _, s := range sections {
		if s.ID == wasmbin.SectionStart {
			return nil, errStartSection
		}
	}
	r, err := New(ctx, cfg)
	if err != nil {
		return nil, err
	}
	defer r.Close(ctx)
	p := &Plugin[S]{rt: r, path: "(packing)", wasm: wasm, idle: pool.New[*instance[S]](0)}
	p.wasmOnce.Do(func() {}) // the bytes are given, not read from a file
	raw, err := p.describe(ctx)
	if err != nil {
		return nil, err
	}
	var m abi.Manifest
	if err := json.Unmarshal(raw, &m); err != nil {
		return nil, fmt.Errorf("describe returned invalid JSON: %w", err)
	}
	if m.ABI != abi.Version {
		return nil, fmt.Errorf("describe returned ABI %q, want %q", m.ABI, abi.Version)
	}
	return wasmbin.WithCustomSection(wasm, abi.ManifestSection, raw)
}

// ErrManifestMismatch reports a packed manifest that differs from what the
// module's describe export returns: the module was changed after packing.
var ErrManifestMismatch = errors.New("packed manifest differs from describe")
