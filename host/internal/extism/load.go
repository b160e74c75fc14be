package extism

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"time"

	extism "github.com/extism/go-sdk"
	"github.com/tetratelabs/wazero"

	"github.com/toolhost/toolhost/host/internal/pool"
	"github.com/toolhost/toolhost/host/internal/reclaim"
)

// Grant is what toolhost's configuration gives one plugin
// ([extism.<name>]). Nothing the plugin or its folder says adds to it.
type Grant struct {
	// AllowedHosts are the hosts (or go-sdk glob patterns) the plugin's
	// HTTP requests may reach; none means no network.
	AllowedHosts []string
	// Config are the values the plugin reads with config_get.
	Config map[string]string
	// MaxMemoryMiB caps each instance's memory (and, since the output
	// lives in Extism's memory under the same cap, its output); 0 means
	// DefaultMaxMemoryMiB.
	MaxMemoryMiB int
}

// DefaultMaxMemoryMiB is enough for a Go-built plugin (which traps after
// hundreds of calls below ~200 pages, 12.5 MiB) with room for its output.
const DefaultMaxMemoryMiB = 64

// maxHTTPResponseBytes bounds a response body a plugin receives; go-sdk's
// own default is 50 MiB.
const maxHTTPResponseBytes = 4 << 20

// maxVarBytes bounds Extism variables (go-sdk's default).
const maxVarBytes = 1 << 20

// DefaultLoadTimeout bounds listing a module's tools at load: its start-up
// code and list_tools or describe.
const DefaultLoadTimeout = 10 * time.Second

// Options configure a Loader.
type Options struct {
	// CacheDir is toolhost's cache directory: compiled code is kept in
	// its "compiled" subdirectory, shared with native plugins. "" compiles
	// every module anew in each process.
	CacheDir string
	// Grants are the configuration's [extism.<name>] tables, by plugin
	// name: a module's file stem, or its folder's name.
	Grants map[string]Grant
	// Verify, when set, is called with each module's path and the exact
	// bytes about to be compiled, before anything runs (the lock file's
	// check); an error refuses the module.
	Verify func(path string, data []byte) error
	// LoadTimeout bounds listing a module's tools; 0 means
	// DefaultLoadTimeout.
	LoadTimeout time.Duration
	Logger      *slog.Logger
}

// Loader loads Extism modules and owns what they hold: compiled code,
// instances and the compilation cache. Close releases them all.
type Loader struct {
	opts  Options
	log   *slog.Logger
	cache wazero.CompilationCache

	mu      sync.Mutex
	modules []*Module
	used    map[string]bool // plugin names loaded, for unused grants
	closed  bool

	reclaim reclaim.Reclaimer // gives inflated instances' memory back
}

// NewLoader prepares to load modules and installs Guard.
func NewLoader(opts Options) (*Loader, error) {
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	if opts.LoadTimeout <= 0 {
		opts.LoadTimeout = DefaultLoadTimeout
	}
	l := &Loader{opts: opts, log: opts.Logger, used: map[string]bool{}}
	if opts.CacheDir != "" {
		cache, err := wazero.NewCompilationCacheWithDir(filepath.Join(opts.CacheDir, "compiled"))
		if err != nil {
			return nil, fmt.Errorf("compilation cache in %s: %w", opts.CacheDir, err)
		}
		l.cache = cache
	} else {
		l.cache = wazero.NewCompilationCache()
	}
	Guard()
	return l, nil
}

// PluginName is the name a module's configuration goes by: the folder's
// name for DIR/name/plugin.wasm (pass dir), else the file's stem.
func PluginName(path, dir string) string {
	if dir != "" {
		return filepath.Base(dir)
	}
	return trimExt(filepath.Base(path))
}

func trimExt(name string) string { return name[:len(name)-len(filepath.Ext(name))] }

// Load compiles the module at path (of kind, from Detect), named name for
// its configuration, lists its tools once, and returns one Tool for each.
// Every refusal names the file and what to do.
func (l *Loader) Load(ctx context.Context, path, name string, kind Kind) ([]*Tool, error) {
	if kind == NotExtism {
		return nil, fmt.Errorf("plugin %s is not an Extism MCP module", path)
	}
	// The module is read once: the lock vets it before anything else
	// looks at it (a changed module is refused as changed, not for what
	// it now imports), and the imports checked are those compiled.
	wasm, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("plugin %s: %w", path, err)
	}
	if l.opts.Verify != nil {
		if err := l.opts.Verify(path, wasm); err != nil {
			return nil, err
		}
	}
	s, err := shapeOf(path, bytes.NewReader(wasm), int64(len(wasm)))
	if err != nil {
		return nil, err
	}
	if s.kind() != kind {
		return nil, fmt.Errorf("plugin %s changed while it was loading (it no longer speaks %s); load it again", path, kind)
	}
	if err := checkImports(path, s.imports); err != nil {
		return nil, err
	}
	grant := l.opts.Grants[name]
	hosts, err := compileHosts(name, grant.AllowedHosts)
	if err != nil {
		return nil, fmt.Errorf("plugin %s: %w", path, err)
	}
	m, err := l.compile(ctx, path, name, kind, wasm, grant, hosts)
	if err != nil {
		return nil, err
	}
	tools, err := m.listTools(ctx, l.opts.LoadTimeout)
	if err != nil {
		m.Close(context.WithoutCancel(ctx))
		return nil, err
	}
	return tools, nil
}

func (l *Loader) compile(ctx context.Context, path, name string, kind Kind, wasm []byte, grant Grant, hosts hostPatterns) (*Module, error) {
	mib := grant.MaxMemoryMiB
	if mib <= 0 {
		mib = DefaultMaxMemoryMiB
	}
	pages := uint32(mib) * 16
	start := time.Now()
	// The runtime config sets the memory cap for every module go-sdk
	// instantiates (the guest and Extism's kernel, where input and output
	// live) and lets a call's deadline stop the guest anywhere.
	rc := wazero.NewRuntimeConfig().WithCompilationCache(l.cache).WithCloseOnContextDone(true).WithMemoryLimitPages(pages)
	cp, err := extism.NewCompiledPlugin(ctx, extism.Manifest{
		Wasm:         []extism.Wasm{extism.WasmData{Data: wasm, Name: "main"}},
		Memory:       &extism.ManifestMemory{MaxPages: pages, MaxHttpResponseBytes: maxHTTPResponseBytes, MaxVarBytes: maxVarBytes},
		Config:       copyConfig(grant.Config),
		AllowedHosts: lower(grant.AllowedHosts),
		// No AllowedPaths: wazero's directory mounts follow symlinks
		// out of their root. No Timeout: the engine's deadline applies.
	}, extism.PluginConfig{
		// Go-built guests need WASI for their start-up (_initialize);
		// instanceConfig gives it nothing to reach.
		EnableWasi:    true,
		RuntimeConfig: rc,
	}, userFunctions())
	if err != nil {
		return nil, fmt.Errorf("plugin %s: compile: %w", path, err)
	}
	l.log.Debug("compiled Extism plugin", "plugin", path, "kind", kind, "elapsed", time.Since(start))
	m := &Module{path: path, name: name, kind: kind, compiled: cp, grant: grant, net: newNetPolicy(name, hosts), log: l.log, loader: l, idle: pool.New[*instance](maxIdle)}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed {
		cp.Close(context.WithoutCancel(ctx))
		return nil, errors.New("extism: loader is closed")
	}
	l.modules = append(l.modules, m)
	l.used[name] = true
	return m, nil
}

// Unused lists the configured plugin names no loaded module goes by,
// sorted: most likely a misspelled table.
func (l *Loader) Unused() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []string
	for name := range l.opts.Grants {
		if !l.used[name] {
			out = append(out, name)
		}
	}
	sort.Strings(out)
	return out
}

// Close releases every module loaded and the compilation cache. Calls
// still running fail. It is safe to call more than once.
func (l *Loader) Close(ctx context.Context) error {
	l.mu.Lock()
	if l.closed {
		l.mu.Unlock()
		return nil
	}
	l.closed = true
	modules := l.modules
	l.modules = nil
	l.mu.Unlock()
	var errs []error
	for _, m := range modules {
		errs = append(errs, m.Close(ctx))
	}
	errs = append(errs, l.cache.Close(ctx))
	return errors.Join(errs...)
}

func copyConfig(c map[string]string) map[string]string {
	out := make(map[string]string, len(c))
	for k, v := range c {
		out[k] = v
	}
	return out
}

func lower(hosts []string) []string {
	out := make([]string, len(hosts))
	for i, h := range hosts {
		out[i] = strings.ToLower(h)
	}
	return out
}
