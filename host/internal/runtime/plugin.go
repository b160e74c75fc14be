package runtime

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	goruntime "runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"unicode/utf8"

	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/api"
	"github.com/tetratelabs/wazero/experimental"
	"github.com/tetratelabs/wazero/imports/wasi_snapshot_preview1"

	"github.com/toolhost/toolhost/abi"
	"github.com/toolhost/toolhost/host/internal/loopguard"
	"github.com/toolhost/toolhost/host/internal/pool"
)

// Plugin is a loaded plugin module. Its manifest is available at once; the
// module compiles on first use.
type Plugin[S any] struct {
	rt       *Runtime[S]
	path     string
	identity string // of the module file, for caches
	imports  [][2]string
	packed   bool

	wasmOnce sync.Once // the module's bytes, read only when needed
	wasm     []byte
	wasmErr  error

	manifest     abi.Manifest
	manifestJSON []byte

	compileMu sync.Mutex
	compiled  *compiled
	verified  atomic.Bool

	idle *pool.Pool[*instance[S]] // warm instances, at most Config.PoolSize

	mu     sync.Mutex
	busy   int // operations using the compiled module (calls, compiles)
	closed bool
}

type compiled struct {
	engine wazero.Runtime
	module wazero.CompiledModule
	host   api.Module
	// guarded says the module has loopguard's interrupt flag; otherwise
	// it runs on the engine with per-iteration context checks.
	guarded bool
}

// module returns the module's bytes, reading the file on first need and
// vetting what it read (Config.Verify). A failure stays: a module refused
// once is not read again in this process.
func (p *Plugin[S]) module() ([]byte, error) {
	p.wasmOnce.Do(func() {
		data, err := os.ReadFile(p.path)
		if err != nil {
			p.wasmErr = fmt.Errorf("plugin %s: %w", p.path, err)
			return
		}
		p.wasm, p.wasmErr = p.vet(data)
	})
	return p.wasm, p.wasmErr
}

// vet passes data, the module's bytes, to Config.Verify.
func (p *Plugin[S]) vet(data []byte) ([]byte, error) {
	if verify := p.rt.cfg.Verify; verify != nil {
		if err := verify(p.path, data); err != nil {
			return nil, err
		}
	}
	return data, nil
}

func (p *Plugin[S]) instrument() ([]byte, error) {
	wasm, err := p.module()
	if err != nil {
		return nil, err
	}
	return loopguard.Instrument(wasm)
}

// Manifest returns the plugin's manifest.
func (p *Plugin[S]) Manifest() abi.Manifest { return p.manifest }

// Path returns the file the plugin was loaded from.
func (p *Plugin[S]) Path() string { return p.path }

func (p *Plugin[S]) name() string {
	if p.manifest.Name != "" {
		return p.manifest.Name
	}
	return p.path
}

// Compile compiles the module if it is not compiled yet, checks that it
// imports only host functions its manifest grants, and links them. It is
// safe to call concurrently and cheap once done; a failure is retried on
// the next call.
func (p *Plugin[S]) Compile(ctx context.Context) error {
	if err := p.enter(); err != nil {
		return err
	}
	defer p.leave()
	_, err := p.compile(ctx)
	return err
}

func (p *Plugin[S]) compile(ctx context.Context) (*compiled, error) {
	p.compileMu.Lock()
	defer p.compileMu.Unlock()
	if p.compiled != nil {
		return p.compiled, nil
	}
	start := time.Now()
	engine, code, guarded, err := p.code(ctx)
	if err != nil {
		return nil, err
	}
	instrumented := time.Now()
	module, err := engine.CompileModule(experimental.WithCompilationWorkers(ctx, compileWorkers(ctx)), code)
	if err != nil {
		return nil, fmt.Errorf("plugin %s: compile: %w", p.name(), err)
	}
	p.rt.log.Debug("compiled plugin", "plugin", p.name(), "instrument", instrumented.Sub(start), "compile", time.Since(instrumented))
	granted, err := Granted(p.manifest.Capabilities)
	if err != nil {
		module.Close(context.WithoutCancel(ctx))
		return nil, fmt.Errorf("plugin %s: %w", p.name(), err)
	}
	if err := checkImports(p.name(), module, granted); err != nil {
		module.Close(context.WithoutCancel(ctx))
		return nil, err
	}
	host, err := p.rt.link(ctx, engine, hostImports(module))
	if err != nil {
		module.Close(context.WithoutCancel(ctx))
		return nil, fmt.Errorf("plugin %s: link host functions: %w", p.name(), err)
	}
	p.compiled = &compiled{engine: engine, module: module, host: host, guarded: guarded}
	return p.compiled, nil
}

// backgroundKey marks a context whose compiles are a warm-up's.
type backgroundKey struct{}

// Background returns ctx marked as a warm-up's: a compile under it
// generates code on one core, so that calls keep the others; a compile
// a call waits for uses every core. Compiling from the compilation cache
// generates no code and costs the same either way.
func Background(ctx context.Context) context.Context {
	return context.WithValue(ctx, backgroundKey{}, true)
}

// compileWorkers is how many goroutines generate a module's code under ctx.
func compileWorkers(ctx context.Context) int {
	if background, _ := ctx.Value(backgroundKey{}).(bool); background {
		return 1
	}
	return goruntime.GOMAXPROCS(0)
}

// code returns the engine and the module bytes to compile: the module with
// loop guards on the fast engine, or, for a module loopguard cannot make
// preemptible (no sched_yield import), the module as is on the engine with
// per-iteration context checks — slower, but still stoppable.
func (p *Plugin[S]) code(ctx context.Context) (wazero.Runtime, []byte, bool, error) {
	if p.rt.cfg.Interpreter {
		// The interpreter reads globals without synchronisation, so a flag
		// set from another goroutine would be a data race; it checks the
		// context itself instead, at a cost that matters little at its
		// speed.
		return p.unguarded(ctx)
	}
	guarded, err := p.rt.guarded(p)
	if err == nil {
		return p.rt.rt, guarded, true, nil
	}
	if !errors.Is(err, loopguard.ErrNoYield) {
		return nil, nil, false, fmt.Errorf("plugin %s: instrument loops: %w", p.name(), err)
	}
	p.rt.log.Info("plugin cannot be instrumented; running it with per-iteration context checks", "plugin", p.name(), "reason", err)
	return p.unguarded(ctx)
}

// unguarded returns the engine with per-iteration context checks and the
// module as it is.
func (p *Plugin[S]) unguarded(ctx context.Context) (wazero.Runtime, []byte, bool, error) {
	wasm, err := p.module()
	if err != nil {
		return nil, nil, false, err
	}
	engine, err := p.rt.checkedEngine(ctx)
	return engine, wasm, false, err
}

// ImportError reports a module that imports something the host does not
// grant it.
type ImportError struct {
	Plugin, Module, Function string
	Granted                  []string
}

func (e *ImportError) Error() string {
	if e.Module != abi.HostModule {
		return fmt.Sprintf("plugin %s imports %s.%s; plugins may import only %s and %s functions",
			e.Plugin, e.Module, e.Function, abi.HostModule, wasi_snapshot_preview1.ModuleName)
	}
	return fmt.Sprintf("plugin %s imports host function %s.%s, which its manifest's capabilities do not grant (granted: %s); declare the capability in the manifest",
		e.Plugin, e.Module, e.Function, strings.Join(e.Granted, ", "))
}

// checkImports refuses a compiled module that imports an ungranted host
// function, before anything is instantiated. Load has already checked the
// raw import section; this repeats it on what wazero actually parsed.
func checkImports(plugin string, m wazero.CompiledModule, granted []string) error {
	for _, f := range m.ImportedFunctions() {
		module, name, _ := f.Import()
		if err := checkImport(plugin, module, name, granted); err != nil {
			return err
		}
	}
	if len(m.ImportedMemories()) > 0 {
		return fmt.Errorf("plugin %s imports a memory; plugins must define their own", plugin)
	}
	return nil
}

// hostImports returns the host functions m imports.
func hostImports(m wazero.CompiledModule) []string {
	var names []string
	for _, f := range m.ImportedFunctions() {
		if module, name, _ := f.Import(); module == abi.HostModule {
			names = append(names, name)
		}
	}
	return names
}

func checkImport(plugin, module, name string, granted []string) error {
	switch {
	case module == wasi_snapshot_preview1.ModuleName:
	case module == abi.HostModule && slices.Contains(granted, name):
	default:
		return &ImportError{Plugin: plugin, Module: module, Function: name, Granted: granted}
	}
	return nil
}

// TrapError is a guest that trapped, panicked or exited during a call.
type TrapError struct {
	Plugin  string
	Message string // guest output and runtime error, unsanitized
}

func (e *TrapError) Error() string { return "plugin " + e.Plugin + " trapped: " + e.Message }

// InterruptedError is a call stopped because its context ended.
type InterruptedError struct {
	Plugin string
	Cause  error // context.DeadlineExceeded or context.Canceled
	// Startup says the call was still waiting for a new instance to start.
	Startup bool
}

func (e *InterruptedError) Error() string {
	switch {
	case e.Startup && errors.Is(e.Cause, context.DeadlineExceeded):
		return fmt.Sprintf("plugin %s: start-up ran past the deadline of its caller (%v)", e.Plugin, e.Cause)
	case e.Startup:
		return fmt.Sprintf("plugin %s stopped during start-up: %v", e.Plugin, e.Cause)
	}
	return fmt.Sprintf("plugin %s stopped: %v", e.Plugin, e.Cause)
}

func (e *InterruptedError) Unwrap() error { return e.Cause }

// Call runs the plugin's call export on a warm instance. state is what its
// host functions act on (HostFunction.Func); they refuse when it is nil.
// Build a fresh one for every call (SRD FR-REG-04a).
func (p *Plugin[S]) Call(ctx context.Context, state *S, req abi.Request) (abi.Result, error) {
	return p.invoke(ctx, callState[S]{state: state}, abi.ExportCall, abi.AppendRequest(nil, req), readBound(req.Limits))
}

// Summary runs the plugin's summary export with every host function
// refused, so a summary can never perform I/O (SRD FR-REG-01a).
func (p *Plugin[S]) Summary(ctx context.Context, args []byte) (abi.Result, error) {
	return p.invoke(ctx, callState[S]{refusal: refuseSummary}, abi.ExportSummary, args, readBound(abi.Limits{}))
}

// readBound is how much of a result's content the host copies out of
// the guest: twice the output limit and a little more, so that what
// sanitizing removes still leaves the engine more than the limit to cut
// with its marker (FR-OUT-04). The rest is never copied: a plugin
// returning 60 MiB costs the host this much, not 60 MiB more.
func readBound(l abi.Limits) int { return int(2*l.WithDefaults().OutputLimit()) + 4096 }

func (p *Plugin[S]) invoke(ctx context.Context, call callState[S], export string, in []byte, bound int) (abi.Result, error) {
	if err := ctx.Err(); err != nil {
		return abi.Result{}, &InterruptedError{Plugin: p.name(), Cause: err}
	}
	inst, err := p.acquire(ctx)
	if err != nil {
		return abi.Result{}, err
	}
	defer p.leave()
	w := inst.watch(ctx)
	inst.call = call
	res, err := inst.invoke(withCall(ctx, &inst.call), export, in, bound)
	inst.call = callState[S]{} // the state is the caller's: do not keep it alive
	fired := w.end()
	switch {
	case err != nil && fired:
		p.discard(inst)
		return abi.Result{}, &InterruptedError{Plugin: p.name(), Cause: context.Cause(ctx)}
	case err != nil && p.isClosed():
		p.discard(inst)
		return abi.Result{}, fmt.Errorf("plugin %s was %w while the call ran (%v)", p.name(), ErrClosed, err)
	case err != nil:
		msg := inst.failure(err)
		p.discard(inst)
		return abi.Result{}, &TrapError{Plugin: p.name(), Message: msg}
	case fired, res.Kind == abi.KindPanicked:
		// The guest returned a result, so its work is done and reported
		// even though the deadline fired meanwhile (a timeout here would make a model retry a write that happened).
		// Its flag may be set, or a panic have left it broken: it is not
		// pooled.
		p.discard(inst)
	default:
		p.release(inst)
	}
	return res, nil
}

// watcher interrupts a guest when a context ends.
type watcher struct {
	stop        func() bool
	interrupted chan struct{}
}

// watch sets the instance's interrupt flag when ctx ends, so a guarded
// guest traps at its next loop iteration (on the checked engine, wazero
// watches ctx itself).
func (i *instance[S]) watch(ctx context.Context) watcher {
	w := watcher{interrupted: make(chan struct{})}
	w.stop = context.AfterFunc(ctx, func() {
		if i.flag != nil {
			i.flag.Set(1)
		}
		close(w.interrupted)
	})
	return w
}

// end stops watching and reports whether ctx ended meanwhile; it then
// waits until the flag is set, so an instance that may see it is never
// used again.
func (w watcher) end() bool {
	if w.stop() {
		return false
	}
	<-w.interrupted
	return true
}

// instance is one instantiated module. It serves one call at a time.
type instance[S any] struct {
	mod     api.Module
	alloc   api.Function
	exports map[string]api.Function // looked up so far
	flag    api.MutableGlobal
	stderr  *tailBuffer
	call    callState[S] // of the call in progress
}

// export returns the named exported function, or nil. It is looked up once
// per instance: each lookup makes wazero allocate a call stack, which
// cost more than the rest of a trivial call.
func (i *instance[S]) export(name string) api.Function {
	if fn, ok := i.exports[name]; ok {
		return fn
	}
	fn := i.mod.ExportedFunction(name)
	if i.exports == nil {
		i.exports = make(map[string]api.Function, 2)
	}
	i.exports[name] = fn
	return fn
}

func (i *instance[S]) invoke(ctx context.Context, export string, in []byte, bound int) (abi.Result, error) {
	fn := i.export(export)
	if fn == nil {
		return abi.Result{}, fmt.Errorf("module does not export %s", export)
	}
	i.stderr.Reset()
	stack := []uint64{uint64(len(in)), 0}
	if err := i.alloc.CallWithStack(ctx, stack); err != nil {
		return abi.Result{}, err
	}
	ptr := uint32(stack[0])
	if len(in) > 0 && !i.mod.Memory().Write(ptr, in) {
		return abi.Result{}, fmt.Errorf("%s returned an out-of-bounds buffer", abi.ExportAlloc)
	}
	stack[0], stack[1] = uint64(ptr), uint64(len(in))
	if err := fn.CallWithStack(ctx, stack); err != nil {
		return abi.Result{}, err
	}
	res, err := i.result(stack[0], bound)
	if err != nil {
		return abi.Result{}, fmt.Errorf("%s: %w", export, err)
	}
	return res, nil
}

// result decodes the packed (ptr, len) result envelope in guest memory
// where it lies, copying out at most bound bytes of its content (cut at
// a character's start) and of its structured object (cut, it is over the
// limit and never parsed: the engine leaves it out), and its details
// only when they fit in bound (cut, JSON would not parse).
func (i *instance[S]) result(packed uint64, bound int) (abi.Result, error) {
	ptr, n := abi.Unpack(packed)
	view, ok := i.mod.Memory().Read(ptr, n)
	if !ok {
		return abi.Result{}, fmt.Errorf("guest returned an out-of-bounds result (%d bytes at %#x)", n, ptr)
	}
	res, err := abi.DecodeResult(view)
	if err != nil {
		return abi.Result{}, err
	}
	if len(res.Content) > bound {
		end := bound
		for end > 0 && !utf8.RuneStart(res.Content[end]) {
			end--
		}
		res.Content = res.Content[:end]
	}
	res.Content = bytes.Clone(res.Content)
	if len(res.Details) > bound {
		res.Details = nil
	}
	res.Details = bytes.Clone(res.Details)
	res.Structured = bytes.Clone(res.Structured[:min(len(res.Structured), bound)])
	return res, nil
}

// read copies a packed (ptr, len) region out of guest memory.
func (i *instance[S]) read(packed uint64) ([]byte, error) {
	ptr, n := abi.Unpack(packed)
	b, ok := i.mod.Memory().Read(ptr, n)
	if !ok {
		return nil, fmt.Errorf("guest returned an out-of-bounds result (%d bytes at %#x)", n, ptr)
	}
	return bytes.Clone(b), nil
}

// failure describes a trap, with what the guest wrote to stderr (a Go
// guest prints its panic there before exiting).
func (i *instance[S]) failure(err error) string {
	msg := err.Error()
	if out := strings.TrimSpace(i.stderr.String()); out != "" {
		msg = out + " (" + msg + ")"
	}
	return msg
}

func (i *instance[S]) close(ctx context.Context) { i.mod.Close(ctx) }

// discard closes an instance that must not serve another call, and has
// its memory given back when the call inflated it.
func (p *Plugin[S]) discard(inst *instance[S]) {
	inflated := false
	if mem := inst.mod.Memory(); mem != nil {
		inflated = uint64(mem.Size()) > p.rt.cfg.IdleMemoryBytes
	}
	inst.close(context.Background())
	if inflated {
		p.rt.reclaim.Request()
	}
}

// tailBuffer keeps the first max bytes written to it: a Go guest's panic
// message comes first, its goroutine dump after.
type tailBuffer struct {
	mu  sync.Mutex
	buf []byte
	max int
}

func (t *tailBuffer) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if room := t.max - len(t.buf); room > 0 {
		t.buf = append(t.buf, p[:min(room, len(p))]...)
	}
	return len(p), nil
}

func (t *tailBuffer) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return string(t.buf)
}

func (t *tailBuffer) Reset() {
	t.mu.Lock()
	t.buf = t.buf[:0]
	t.mu.Unlock()
}
