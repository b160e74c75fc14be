package extism

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"regexp"
	"strings"
	"sync"
	"time"

	extism "github.com/extism/go-sdk"
	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/sys"

	"github.com/toolhost/toolhost/host/internal/hostfn"
	"github.com/toolhost/toolhost/host/internal/pool"
)

// Module is one loaded Extism module: its compiled code and idle
// instances. An instance runs one call at a time; one that timed out,
// trapped or reported an error is closed, never reused.
type Module struct {
	path, name string
	kind       Kind
	compiled   *extism.CompiledPlugin
	grant      Grant
	net        *netPolicy // its allow-list and HTTP transport
	log        *slog.Logger
	loader     *Loader

	idle *pool.Pool[*instance] // at most maxIdle
}

// instance is one instance of the module and the end of what its guest
// wrote to stderr: a Go guest's panic message is there, and nowhere else.
type instance struct {
	p      *extism.Plugin
	stderr *tail
}

// tail keeps the last bytes written to it.
type tail struct {
	mu  sync.Mutex
	buf []byte
}

// maxTail is how much of a guest's stderr a call keeps.
const maxTail = 4 << 10

func (t *tail) Write(b []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.buf = append(t.buf, b...)
	if len(t.buf) > maxTail {
		t.buf = append(t.buf[:0], t.buf[len(t.buf)-maxTail:]...)
	}
	return len(b), nil
}

func (t *tail) take() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	s := string(t.buf)
	t.buf = t.buf[:0]
	return s
}

// maxIdle is how many warm instances a module keeps.
const maxIdle = 4

// maxTools bounds the tools one module may describe.
const maxTools = 256

// errClosed reports a call on a module toolhost has closed.
var errClosed = errors.New("the plugin is closed")

// wasiOutput is go-sdk's switch that sends a guest's stdout and stderr to
// toolhost's own: on `serve --stdio` that would corrupt the MCP stream.
const wasiOutput = "EXTISM_ENABLE_WASI_OUTPUT"

// instance takes an idle instance or makes one.
func (m *Module) instance(ctx context.Context) (*instance, error) {
	in, ok, err := m.idle.Get()
	if err != nil {
		return nil, errClosed
	}
	if ok {
		return in, nil
	}
	// go-sdk reads the variable when it instantiates; it must not be set
	// then, whoever set it.
	if _, set := os.LookupEnv(wasiOutput); set {
		os.Unsetenv(wasiOutput)
		m.log.Warn("removed " + wasiOutput + " from toolhost's environment: Extism plugins' output must not reach toolhost's own")
	}
	stderr := &tail{}
	p, err := m.compiled.Instance(ctx, extism.PluginInstanceConfig{ModuleConfig: instanceConfig().WithStderr(stderr)})
	if err != nil {
		return nil, fmt.Errorf("plugin %s: instantiate: %w", m.path, err)
	}
	p.SetLogger(func(level extism.LogLevel, msg string) {
		m.log.Debug("plugin log", "plugin", m.path, "level", level.String(), "message", cut(msg, maxNotification))
	})
	return &instance{p: p, stderr: stderr}, nil
}

// instanceConfig gives a guest WASI with nothing behind it: no
// preopened directories, no environment, no arguments, no stdin, stdout
// and stdout discarded (stderr is kept, a little, by instance). Clocks are real (a plugin signing requests needs
// the time) and so is randomness; sleeping is a no-op.
func instanceConfig() wazero.ModuleConfig {
	return wazero.NewModuleConfig().WithSysWalltime().WithSysNanotime().WithRandSource(rand.Reader)
}

// release returns a healthy instance to the pool, or closes it. One
// whose memory (go-sdk's, where input and output are kept) grew past
// maxIdleMemory is closed, and the memory given back: pooled, it would
// hold what one call's output grew it to for good.
func (m *Module) release(ctx context.Context, in *instance, healthy bool) {
	inflated := false
	if mem := in.p.Memory(); mem != nil {
		inflated = uint64(mem.Size()) > maxIdleMemory
	}
	if !healthy || inflated || !m.idle.Put(in) {
		in.p.Close(context.WithoutCancel(ctx))
	}
	if inflated {
		m.loader.reclaim.Request()
	}
}

// maxIdleMemory bounds the memory of an instance kept warm, as
// runtime.DefaultIdleMemoryBytes does for toolhost/v1 plugins.
const maxIdleMemory = 32 << 20

// warm readies up to n idle instances.
func (m *Module) warm(ctx context.Context, n int) error {
	for range min(n, maxIdle) - m.idle.Len() {
		in, err := m.instance(ctx)
		if err != nil {
			return err
		}
		m.release(ctx, in, true)
	}
	return nil
}

// run calls export with input on an instance of its own, under ctx. An
// error is go-sdk's: a trap, the deadline, a refused request, or the
// guest's own error (pdk.SetError); the instance is then discarded.
func (m *Module) run(ctx context.Context, call *hostfn.Call, export string, input []byte) ([]byte, error) {
	if len(m.grant.AllowedHosts) > 0 && !guarded() {
		return nil, fmt.Errorf("plugin %s: %w", m.path, errUnguarded)
	}
	in, err := m.instance(ctx)
	if err != nil {
		return nil, err
	}
	ctx = context.WithValue(ctx, callKey{}, &callState{mod: m, call: call})
	rc, out, err := in.p.CallWithContext(ctx, export, input)
	stderr := in.stderr.take()
	var exit *sys.ExitError
	switch {
	case errors.As(err, &exit):
		// A Go guest that panics or runs out of memory prints why and
		// exits.
		err = &ExitError{Code: exit.ExitCode(), Stderr: strings.TrimSpace(stderr)}
	case err != nil && trapped.MatchString(err.Error()):
		err = &TrapError{Err: err, Stderr: strings.TrimSpace(stderr)}
	case err == nil && rc != 0:
		err = fmt.Errorf("%s returned %d without an error message", export, rc)
	}
	m.release(ctx, in, err == nil && ctx.Err() == nil)
	return out, err
}

// trapped tells a guest that crashed (a trap: a Go panic, unreachable,
// a host function's refusal) from one that reported an error.
var trapped = regexp.MustCompile(`wasm stack trace|wasm error`)

// TrapError is a guest that trapped during a call, with the end of what
// it wrote to stderr (a Go guest's panic message).
type TrapError struct {
	Err    error
	Stderr string
}

func (e *TrapError) Error() string {
	if e.Stderr == "" {
		return firstLine(e.Err.Error())
	}
	return firstLine(e.Err.Error()) + "; the plugin wrote: " + e.Stderr
}

func (e *TrapError) Unwrap() error { return e.Err }

// ExitError is a guest that exited during a call: a Go guest's panic, or
// its running out of memory.
type ExitError struct {
	Code   uint32
	Stderr string // the end of what it wrote to stderr
}

func (e *ExitError) Error() string {
	if e.Stderr == "" {
		return fmt.Sprintf("the plugin exited with code %d", e.Code)
	}
	return fmt.Sprintf("the plugin exited with code %d: %s", e.Code, e.Stderr)
}

// listTools calls list_tools (or describe) once and makes the tools.
func (m *Module) listTools(ctx context.Context, timeout time.Duration) ([]*Tool, error) {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	export, input := "list_tools", []byte(`{"context":{"id":"toolhost-load","_meta":{}}}`)
	if m.kind == Servlet {
		export, input = "describe", nil
	}
	out, err := m.run(ctx, nil, export, input)
	if err != nil {
		if ctx.Err() != nil {
			return nil, fmt.Errorf("plugin %s: %s did not return within %s; the plugin's start-up or its %s spins", m.path, export, timeout, export)
		}
		return nil, fmt.Errorf("plugin %s: %s failed: %s", m.path, export, cut(firstLine(err.Error()), 512))
	}
	var listed struct {
		Tools []listedTool `json:"tools"`
	}
	if err := json.Unmarshal(out, &listed); err != nil {
		return nil, fmt.Errorf("plugin %s: %s returned no tool list ({\"tools\": [...]}): %w", m.path, export, err)
	}
	if len(listed.Tools) > maxTools {
		return nil, fmt.Errorf("plugin %s: %s lists %d tools, more than %d", m.path, export, len(listed.Tools), maxTools)
	}
	tools := make([]*Tool, 0, len(listed.Tools))
	for _, lt := range listed.Tools {
		mf, err := m.manifest(lt)
		if err != nil {
			return nil, err
		}
		tools = append(tools, &Tool{mod: m, manifest: mf})
	}
	return tools, nil
}

// Close closes the idle instances and the compiled module; calls still
// running fail. It is safe to call more than once.
func (m *Module) Close(ctx context.Context) error {
	idle, first := m.idle.Close()
	if !first {
		return nil
	}
	for _, in := range idle {
		in.p.Close(ctx)
	}
	m.net.close()
	return m.compiled.Close(ctx)
}

func firstLine(s string) string {
	line, _, _ := strings.Cut(s, "\n")
	return line
}
