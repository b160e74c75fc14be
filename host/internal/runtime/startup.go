package runtime

import (
	"bytes"
	"context"
	"crypto/rand"
	"fmt"
	"time"

	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/api"
	"github.com/tetratelabs/wazero/experimental"

	"github.com/toolhost/toolhost/abi"
	"github.com/toolhost/toolhost/host/internal/loopguard"
)

// StartupError is a plugin that could not start: its _initialize (for a
// Go plugin, the Go runtime and every init function) or its describe
// trapped, or ran past Config.StartupTimeout and was stopped there like a
// runaway call.
type StartupError struct {
	Plugin string
	Stage  string        // abi.StartFunction or abi.ExportDescribe
	Limit  time.Duration // the deadline it ran past; zero if it trapped
	// Message is the guest's output and the runtime's error, for a trap.
	Message string
}

func (e *StartupError) Error() string {
	if e.Limit > 0 {
		return fmt.Sprintf("plugin %s: start-up ran past its %v deadline in %s and was stopped; a plugin must be ready at once (look for an init function that never returns)",
			e.Plugin, e.Limit, e.Stage)
	}
	return fmt.Sprintf("plugin %s: start-up failed in %s: %s", e.Plugin, e.Stage, e.Message)
}

// startupError is the error of a start-up stage that failed with err, or
// that a deadline ended (fired): the caller's, or the start-up limit.
func (p *Plugin[S]) startupError(caller context.Context, stage string, fired bool, inst *instance[S], err error) error {
	switch {
	case fired && caller.Err() != nil:
		return &InterruptedError{Plugin: p.name(), Cause: context.Cause(caller), Startup: true}
	case fired:
		return &StartupError{Plugin: p.name(), Stage: stage, Limit: p.rt.cfg.StartupTimeout}
	}
	return &StartupError{Plugin: p.name(), Stage: stage, Message: inst.failure(err)}
}

// startupContext bounds a start-up by the start-up limit, and by the
// caller's own deadline.
func (p *Plugin[S]) startupContext(caller context.Context) (context.Context, context.CancelFunc) {
	ctx, cancel := context.WithTimeout(caller, p.rt.cfg.StartupTimeout)
	return withCall(ctx, &callState[S]{refusal: refuseStartup}), cancel
}

// describe instantiates the module and returns what its describe export
// says, bypassing the compile-time import check (the manifest is not known
// yet): every host function refuses. The instance is then discarded.
func (p *Plugin[S]) describe(ctx context.Context) ([]byte, error) {
	engine, code, guarded, err := p.code(ctx)
	if err != nil {
		return nil, err
	}
	module, err := engine.CompileModule(ctx, code)
	if err != nil {
		return nil, fmt.Errorf("plugin %s: compile: %w", p.name(), err)
	}
	defer module.Close(context.WithoutCancel(ctx))
	host, err := linkRefusing[S](ctx, engine, module)
	if err != nil {
		return nil, fmt.Errorf("plugin %s: link host functions: %w", p.name(), err)
	}
	defer host.Close(context.WithoutCancel(ctx))
	// The start-up deadline starts after compiling, which can take
	// seconds and is not the module's doing.
	sctx, cancel := p.startupContext(ctx)
	defer cancel()
	inst, err := p.instantiate(ctx, sctx, &compiled{engine: engine, module: module, host: host, guarded: guarded})
	if err != nil {
		return nil, err
	}
	defer inst.close(context.WithoutCancel(ctx))
	return p.describeOn(ctx, sctx, inst)
}

// describeOn runs inst's describe export under the start-up deadline.
func (p *Plugin[S]) describeOn(caller, sctx context.Context, inst *instance[S]) ([]byte, error) {
	fn := inst.mod.ExportedFunction(abi.ExportDescribe)
	if fn == nil {
		return nil, fmt.Errorf("plugin %s does not export %s; is it a toolhost/v1 plugin?", p.name(), abi.ExportDescribe)
	}
	w := inst.watch(sctx)
	res, err := fn.Call(sctx)
	if fired := w.end(); fired || err != nil {
		return nil, p.startupError(caller, abi.ExportDescribe, fired, inst, err)
	}
	return inst.read(res[0])
}

// verify checks once that a packed manifest is what describe returns.
func (p *Plugin[S]) verify(caller, sctx context.Context, inst *instance[S]) error {
	got, err := p.describeOn(caller, sctx, inst)
	if err != nil {
		return err
	}
	if !bytes.Equal(got, p.manifestJSON) {
		return fmt.Errorf("plugin %s: %w; pack it again (toolhost plugin pack)", p.name(), ErrManifestMismatch)
	}
	p.verified.Store(true)
	return nil
}

// instantiate instantiates the module and starts it. Instantiation runs
// no guest code (Load refuses a wasm start section); the start function then runs as an export would, under
// the start-up deadline (sctx) and the interrupt, which it could not get
// if wazero ran it: the flag is reachable only once instantiation returns.
func (p *Plugin[S]) instantiate(caller, sctx context.Context, c *compiled) (*instance[S], error) {
	stderr := &tailBuffer{max: 4 << 10}
	resolve := experimental.WithImportResolver(sctx, func(name string) api.Module {
		if name == abi.HostModule {
			return c.host
		}
		return nil
	})
	mod, err := c.engine.InstantiateModule(resolve, c.module, wazero.NewModuleConfig().
		WithName("").
		WithStartFunctions().
		WithStderr(stderr).
		WithSysWalltime().
		WithSysNanotime().
		WithRandSource(rand.Reader))
	if err != nil {
		return nil, fmt.Errorf("plugin %s: instantiate: %w", p.name(), err)
	}
	inst := &instance[S]{mod: mod, stderr: stderr,
		alloc: mod.ExportedFunction(abi.ExportAlloc),
	}
	if g, ok := mod.ExportedGlobal(loopguard.FlagExport).(api.MutableGlobal); ok {
		inst.flag = g
	}
	switch {
	case inst.alloc == nil:
		err = fmt.Errorf("plugin %s does not export %s; is it a toolhost/v1 plugin?", p.name(), abi.ExportAlloc)
	case c.guarded && inst.flag == nil:
		err = fmt.Errorf("plugin %s: instrumented module lacks the %s global", p.name(), loopguard.FlagExport)
	default:
		err = p.start(caller, sctx, inst)
	}
	if err != nil {
		inst.close(context.WithoutCancel(caller))
		return nil, err
	}
	return inst, nil
}

// start runs the module's start function, if it exports one: for a Go
// plugin, the Go runtime's initialisation and every init function.
func (p *Plugin[S]) start(caller, sctx context.Context, inst *instance[S]) error {
	fn := inst.mod.ExportedFunction(abi.StartFunction)
	if fn == nil {
		return nil
	}
	w := inst.watch(sctx)
	_, err := fn.Call(sctx)
	if fired := w.end(); fired || err != nil {
		return p.startupError(caller, abi.StartFunction, fired, inst, err)
	}
	return nil
}
