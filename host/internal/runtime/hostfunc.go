package runtime

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"sort"
	"strings"

	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/api"

	"github.com/toolhost/toolhost/abi"
)

// HostFunction is a function plugins import from abi.HostModule, acting
// on a call's state of type S. The runtime knows only its signature: what
// it does, and what S holds, belong to whoever configures the runtime
// (package hostfn, whose S is hostfn.Env, for toolhost's own functions).
// The runtime passes the state through typed, so it never asserts or
// imports the type of its caller's state.
//
// Every toolhost/v1 host function returns an i64 and hands its response
// over through the staged-response protocol, which the runtime implements
// (abi.FnResponseTake is built in): Func returns a status and the bytes
// to stage, an abi.HostError JSON object when the status is a failure.
type HostFunction[S any] struct {
	Name   string
	Params []api.ValueType
	// Func runs the function for a call: state is the one given to
	// Plugin.Call, never nil (the runtime refuses every host function
	// itself while there is none, as during a summary); params are the
	// guest's arguments; mem is the guest's memory, whose views are
	// valid only until Func returns.
	Func func(ctx context.Context, state *S, mem api.Memory, params []uint64) (abi.Status, []byte)
	// Refused, when set, is told of each call the runtime refused itself
	// for want of state: summary says it was during a summary, why is the
	// refusal's reason. It lets a caller observe what a summary attempted;
	// it cannot change the refusal.
	Refused func(ctx context.Context, summary bool, why string, mem api.Memory, params []uint64)
}

// Granted returns the host function names a set of capabilities grants,
// sorted. Unknown capabilities are an error naming them.
func Granted(caps []abi.Capability) ([]string, error) {
	byCap := abi.CapabilityFunctions()
	names := abi.UngatedFunctions()
	for _, c := range caps {
		fns, ok := byCap[c]
		if !ok {
			known := make([]string, 0, len(byCap))
			for k := range byCap {
				known = append(known, string(k))
			}
			sort.Strings(known)
			return nil, fmt.Errorf("unknown capability %q (known: %s)", c, strings.Join(known, ", "))
		}
		names = append(names, fns...)
	}
	sort.Strings(names)
	return slices.Compact(names), nil
}

// callState is what the host functions of one export call share: the
// caller's state and the staged response. An instance serves one call at
// a time, so it keeps one and reuses it.
type callState[S any] struct {
	state *S
	// refusal says why host functions are unavailable when state is nil.
	refusal string
	staged  []byte
}

type callKey struct{}

// Why host functions refuse when there is no state.
const (
	refuseSummary = "while computing an approval summary: summaries must not do I/O"
	refuseStartup = "during the plugin's start-up or describe: they serve calls only"
	refuseNoState = "to a call given no state"
)

// withCall returns ctx carrying c for the host functions.
func withCall[S any](ctx context.Context, c *callState[S]) context.Context {
	return context.WithValue(ctx, callKey{}, c)
}

// stage keeps resp for response_take and returns what the host function
// returns to the guest.
func (c *callState[S]) stage(status abi.Status, resp []byte) uint64 {
	c.staged = resp
	if status != abi.StatusOK {
		return uint64(abi.EncodeFailure(status, uint32(len(resp))))
	}
	return uint64(len(resp))
}

// refuse stages a refusal of the host function name.
func (c *callState[S]) refuse(name string) uint64 {
	why := c.refusal
	if why == "" {
		why = refuseNoState
	}
	msg, _ := json.Marshal(abi.HostError{Kind: abi.KindExecutionFailed,
		Message: fmt.Sprintf("host function %s is not available %s", name, why)})
	return c.stage(abi.StatusNotGranted, msg)
}

// take copies the staged response into guest memory (response_take).
func (c *callState[S]) take(mem api.Memory, ptr, n uint32) uint64 {
	n = min(n, uint32(len(c.staged)))
	if !mem.Write(ptr, c.staged[:n]) {
		return uint64(abi.EncodeFailure(abi.StatusInvalid, 0))
	}
	c.staged = nil
	return uint64(n)
}

// goFunc adapts fn to wazero's stack calling convention.
func goFunc[S any](fn HostFunction[S]) api.GoModuleFunc {
	return func(ctx context.Context, m api.Module, stack []uint64) {
		c, _ := ctx.Value(callKey{}).(*callState[S])
		switch {
		case c == nil: // cannot happen: every export runs withCall
			stack[0] = uint64(abi.EncodeFailure(abi.StatusNotGranted, 0))
		case c.state == nil:
			if fn.Refused != nil {
				fn.Refused(ctx, c.refusal == refuseSummary, c.refusal, m.Memory(), stack)
			}
			stack[0] = c.refuse(fn.Name)
		default:
			stack[0] = c.stage(fn.Func(ctx, c.state, m.Memory(), stack))
		}
	}
}

func responseTake[S any](ctx context.Context, m api.Module, stack []uint64) {
	c, _ := ctx.Value(callKey{}).(*callState[S])
	if c == nil {
		stack[0] = uint64(abi.EncodeFailure(abi.StatusInvalid, 0))
		return
	}
	stack[0] = c.take(m.Memory(), uint32(stack[0]), uint32(stack[1]))
}

var (
	i32 = api.ValueTypeI32
	i64 = api.ValueTypeI64
)

// link instantiates an anonymous host module holding the named host
// functions (those a plugin imports, all granted), for its imports to
// resolve against. State lives in each call's context, so one module
// serves all of a plugin's instances.
func (r *Runtime[S]) link(ctx context.Context, engine wazero.Runtime, names []string) (api.Module, error) {
	b := engine.NewHostModuleBuilder(abi.HostModule)
	for _, name := range names {
		if name == abi.FnResponseTake {
			b.NewFunctionBuilder().
				WithGoModuleFunction(api.GoModuleFunc(responseTake[S]), []api.ValueType{i32, i32}, []api.ValueType{i64}).
				Export(name)
			continue
		}
		fn, ok := r.hostFuncs[name]
		if !ok {
			return nil, fmt.Errorf("no host function %q is configured", name)
		}
		b.NewFunctionBuilder().WithGoModuleFunction(goFunc(fn), fn.Params, []api.ValueType{i64}).Export(name)
	}
	return instantiateHost(ctx, engine, b)
}

// linkRefusing instantiates a host module with every host function m
// imports, each refusing: describe runs before the manifest says what is
// granted, and needs no host function.
func linkRefusing[S any](ctx context.Context, engine wazero.Runtime, m wazero.CompiledModule) (api.Module, error) {
	b := engine.NewHostModuleBuilder(abi.HostModule)
	for _, f := range m.ImportedFunctions() {
		module, name, _ := f.Import()
		if module != abi.HostModule {
			continue
		}
		results := f.ResultTypes()
		refuse := func(ctx context.Context, m api.Module, stack []uint64) {
			if len(results) == 0 {
				return
			}
			if c, _ := ctx.Value(callKey{}).(*callState[S]); c != nil && len(results) == 1 && results[0] == i64 {
				stack[0] = c.refuse(name)
				return
			}
			clear(stack[:len(results)])
		}
		b.NewFunctionBuilder().
			WithGoModuleFunction(api.GoModuleFunc(refuse), f.ParamTypes(), results).
			Export(name)
	}
	return instantiateHost(ctx, engine, b)
}

func instantiateHost(ctx context.Context, engine wazero.Runtime, b wazero.HostModuleBuilder) (api.Module, error) {
	compiled, err := b.Compile(ctx)
	if err != nil {
		return nil, fmt.Errorf("compile host module: %w", err)
	}
	// The host module's compiled form is only needed to instantiate it.
	defer compiled.Close(ctx)
	return engine.InstantiateModule(ctx, compiled, wazero.NewModuleConfig().WithName(""))
}
