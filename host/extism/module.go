package extism

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"strings"
	"sync"
	"time"

	extism "github.com/extism/go-sdk"
	"github.com/tetratelabs/wazero"

	"github.com/toolhost/toolhost/host/internal/hostfn"
)

// Module is one loaded Extism module: its compiled code and idle
// instances. An instance runs one call at a time; one that timed out,
// trapped or reported an error is closed, never reused.
type Module struct {
	path, name string
	kind       Kind
	compiled   *extism.CompiledPlugin
	grant      Grant
	hosts      hostPatterns
	log        *slog.Logger
	loader     *Loader

	mu     sync.Mutex
	idle   []*extism.Plugin
	closed bool
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
func (m *Module) instance(ctx context.Context) (*extism.Plugin, error) {
	m.mu.Lock()
	if m.closed {
		m.mu.Unlock()
		return nil, errClosed
	}
	if n := len(m.idle); n > 0 {
		p := m.idle[n-1]
		m.idle = m.idle[:n-1]
		m.mu.Unlock()
		return p, nil
	}
	m.mu.Unlock()
	// go-sdk reads the variable when it instantiates; it must not be set
	// then, whoever set it.
	if _, set := os.LookupEnv(wasiOutput); set {
		os.Unsetenv(wasiOutput)
		m.log.Warn("removed " + wasiOutput + " from toolhost's environment: Extism plugins' output must not reach toolhost's own")
	}
	p, err := m.compiled.Instance(ctx, extism.PluginInstanceConfig{ModuleConfig: instanceConfig()})
	if err != nil {
		return nil, fmt.Errorf("plugin %s: instantiate: %w", m.path, err)
	}
	p.SetLogger(func(level extism.LogLevel, msg string) {
		m.log.Debug("plugin log", "plugin", m.path, "level", level.String(), "message", cut(msg, maxNotification))
	})
	return p, nil
}

// instanceConfig gives a guest WASI with nothing behind it: no
// preopened directories, no environment, no arguments, no stdin, stdout
// and stderr discarded. Clocks are real (a plugin signing requests needs
// the time) and so is randomness; sleeping is a no-op.
func instanceConfig() wazero.ModuleConfig {
	return wazero.NewModuleConfig().WithSysWalltime().WithSysNanotime().WithRandSource(rand.Reader)
}

// release returns a healthy instance to the pool, or closes it.
func (m *Module) release(ctx context.Context, p *extism.Plugin, healthy bool) {
	m.mu.Lock()
	if healthy && !m.closed && len(m.idle) < maxIdle {
		m.idle = append(m.idle, p)
		m.mu.Unlock()
		return
	}
	m.mu.Unlock()
	p.Close(context.WithoutCancel(ctx))
}

// warm readies up to n idle instances.
func (m *Module) warm(ctx context.Context, n int) error {
	m.mu.Lock()
	need := min(n, maxIdle) - len(m.idle)
	m.mu.Unlock()
	for range need {
		p, err := m.instance(ctx)
		if err != nil {
			return err
		}
		m.release(ctx, p, true)
	}
	return nil
}

// run calls export with input on an instance of its own, under ctx. An
// error is go-sdk's: a trap, the deadline, a refused request, or the
// guest's own error (pdk.SetError); the instance is then discarded.
func (m *Module) run(ctx context.Context, env *hostfn.Env, export string, input []byte) ([]byte, error) {
	p, err := m.instance(ctx)
	if err != nil {
		return nil, err
	}
	ctx = context.WithValue(ctx, callKey{}, &callState{mod: m, env: env})
	rc, out, err := p.CallWithContext(ctx, export, input)
	if err == nil && rc != 0 {
		err = fmt.Errorf("%s returned %d without an error message", export, rc)
	}
	m.release(ctx, p, err == nil && ctx.Err() == nil)
	return out, err
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
	m.mu.Lock()
	if m.closed {
		m.mu.Unlock()
		return nil
	}
	m.closed = true
	idle := m.idle
	m.idle = nil
	m.mu.Unlock()
	for _, p := range idle {
		p.Close(ctx)
	}
	return m.compiled.Close(ctx)
}

func firstLine(s string) string {
	line, _, _ := strings.Cut(s, "\n")
	return line
}
