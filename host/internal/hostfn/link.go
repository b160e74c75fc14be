package hostfn

import (
	"context"
	"fmt"
	"slices"
	"sort"

	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/api"

	"github.com/toolhost/toolhost/abi"
)

// function is one host function: its wasm signature and its implementation.
// run returns the response to stage for the guest, or an error.
type function struct {
	params []api.ValueType
	run    func(ctx context.Context, env *Env, mem api.Memory, stack []uint64) ([]byte, error)
}

var (
	i32 = api.ValueTypeI32
	i64 = api.ValueTypeI64
)

// functions is the table of every toolhost/v1 host function.
func functions() map[string]function {
	return map[string]function{
		abi.FnResponseTake: {[]api.ValueType{i32, i32}, nil}, // special-cased in wrap
		abi.FnEventEmit:    {[]api.ValueType{i32, i32, i32}, eventEmit},
		abi.FnFSStat:       {[]api.ValueType{i32, i32}, fsStat},
		abi.FnFSRead:       {[]api.ValueType{i32, i32, i64, i64, i32}, fsRead},
		abi.FnFSReadLines:  {[]api.ValueType{i32, i32, i32, i32, i32}, fsReadLines},
		abi.FnFSList:       {[]api.ValueType{i32, i32, i32, i32, i32}, fsList},
		abi.FnFSWrite:      {[]api.ValueType{i32, i32, i32, i32, i32}, fsWrite},
		abi.FnFSDiff:       {[]api.ValueType{i32, i32, i32, i32}, fsDiff},
		abi.FnFSCommit:     {[]api.ValueType{i32, i32, i32}, fsCommit},
		abi.FnProcRun:      {[]api.ValueType{i32, i32, i32, i32, i32}, procRun},
	}
}

// Granted returns the host function names a set of capabilities grants,
// sorted. Unknown capabilities are an error naming them.
func Granted(caps []abi.Capability) ([]string, error) {
	byCap := abi.CapabilityFunctions()
	names := abi.UngatedFunctions()
	for _, c := range caps {
		fns, ok := byCap[c]
		if !ok {
			return nil, fmt.Errorf("unknown capability %q (known: fs.read, fs.write, fs.list, proc.exec)", c)
		}
		names = append(names, fns...)
	}
	sort.Strings(names)
	return slices.Compact(names), nil
}

// Link instantiates an anonymous host module that holds only the given
// host functions, for a plugin's imports to resolve against. Its state lives
// in each call's context (WithEnv), so one module serves all instances of
// a plugin.
func Link(ctx context.Context, r wazero.Runtime, names []string) (api.Module, error) {
	table := functions()
	b := r.NewHostModuleBuilder(abi.HostModule)
	for _, name := range names {
		fn, ok := table[name]
		if !ok {
			return nil, fmt.Errorf("no host function %q", name)
		}
		b.NewFunctionBuilder().
			WithGoModuleFunction(wrap(name, fn), fn.params, []api.ValueType{i64}).
			Export(name)
	}
	compiled, err := b.Compile(ctx)
	if err != nil {
		return nil, fmt.Errorf("compile host module: %w", err)
	}
	return r.InstantiateModule(ctx, compiled, wazero.NewModuleConfig().WithName(""))
}

// wrap adapts a host function to wazero's stack calling convention and the
// ABI's staged-response protocol.
func wrap(name string, fn function) api.GoModuleFunc {
	return func(ctx context.Context, m api.Module, stack []uint64) {
		env := envFrom(ctx)
		if env == nil {
			stack[0] = uint64(abi.EncodeFailure(abi.StatusNotGranted, 0))
			return
		}
		if name == abi.FnResponseTake {
			stack[0] = uint64(env.take(m.Memory(), uint32(stack[0]), uint32(stack[1])))
			return
		}
		var resp []byte
		var err error
		if env.Pure {
			err = fail(abi.StatusNotGranted, abi.KindExecutionFailed, "host function %s is not available while computing an approval summary: summaries must not do I/O", name)
		} else {
			resp, err = fn.run(ctx, env, m.Memory(), stack)
		}
		if err != nil {
			he := classify("", err)
			env.staged = he.encode()
			stack[0] = uint64(abi.EncodeFailure(he.Status, uint32(len(env.staged))))
			return
		}
		env.staged = resp
		stack[0] = uint64(len(resp))
	}
}

// take copies the staged response into guest memory.
func (e *Env) take(mem api.Memory, ptr, n uint32) int64 {
	if int(n) > len(e.staged) {
		n = uint32(len(e.staged))
	}
	if !mem.Write(ptr, e.staged[:n]) {
		return abi.EncodeFailure(abi.StatusInvalid, 0)
	}
	e.staged = nil
	return int64(n)
}

// guestBytes returns a view of guest memory; the view is valid only until
// the guest runs again.
func guestBytes(mem api.Memory, ptr, n uint32) ([]byte, error) {
	if n == 0 {
		return nil, nil
	}
	b, ok := mem.Read(ptr, n)
	if !ok {
		return nil, fail(abi.StatusInvalid, abi.KindExecutionFailed, "plugin passed an out-of-bounds buffer (%d bytes at %#x)", n, ptr)
	}
	return b, nil
}

func guestString(mem api.Memory, ptr, n uint32) (string, error) {
	b, err := guestBytes(mem, ptr, n)
	return string(b), err
}
