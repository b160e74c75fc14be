package hostfn

import (
	"context"
	"sort"

	"github.com/tetratelabs/wazero/api"

	"github.com/toolhost/toolhost/abi"
	"github.com/toolhost/toolhost/host/internal/runtime"
)

// function is one host function: its wasm signature and its
// implementation. run returns the response to stage for the guest, or an
// error.
type function struct {
	params []api.ValueType
	run    run
}

// run is a host function given its call's whole Env. Only the table
// below makes one: each host function is written against the parts it
// uses, and onCall, onFiles and onCommands hand it those.
type run func(ctx context.Context, env *Env, mem api.Memory, stack []uint64) ([]byte, error)

// onCall runs a host function that needs only its Call.
func onCall(fn func(context.Context, *Call, api.Memory, []uint64) ([]byte, error)) run {
	return func(ctx context.Context, env *Env, mem api.Memory, stack []uint64) ([]byte, error) {
		return fn(ctx, &env.Call, mem, stack)
	}
}

// onFiles runs a host function that needs its Call and the call's Files.
func onFiles(fn func(context.Context, *Call, *Files, api.Memory, []uint64) ([]byte, error)) run {
	return func(ctx context.Context, env *Env, mem api.Memory, stack []uint64) ([]byte, error) {
		return fn(ctx, &env.Call, &env.Files, mem, stack)
	}
}

// onCommands runs a host function that needs its Call and the call's
// Commands.
func onCommands(fn func(context.Context, *Call, *Commands, api.Memory, []uint64) ([]byte, error)) run {
	return func(ctx context.Context, env *Env, mem api.Memory, stack []uint64) ([]byte, error) {
		return fn(ctx, &env.Call, &env.Commands, mem, stack)
	}
}

var (
	i32 = api.ValueTypeI32
	i64 = api.ValueTypeI64
)

// functions is the table of the toolhost/v1 host functions, each with
// the part of its call's Env it acts on.
func functions() map[string]function {
	return map[string]function{
		abi.FnEventEmit:   {[]api.ValueType{i32, i32, i32}, onCall(eventEmit)},
		abi.FnFSStat:      {[]api.ValueType{i32, i32}, onCall(fsStat)},
		abi.FnFSLstat:     {[]api.ValueType{i32, i32}, onCall(fsLstat)},
		abi.FnFSRead:      {[]api.ValueType{i32, i32, i64, i64, i32}, onFiles(fsRead)},
		abi.FnFSReadLines: {[]api.ValueType{i32, i32, i32, i32, i32}, onFiles(fsReadLines)},
		abi.FnFSList:      {[]api.ValueType{i32, i32, i32, i32, i32}, onCall(fsList)},
		abi.FnFSWrite:     {[]api.ValueType{i32, i32, i32, i32, i32}, onFiles(fsWrite)},
		abi.FnFSDiff:      {[]api.ValueType{i32, i32, i32, i32}, onCall(fsDiff)},
		abi.FnFSCommit:    {[]api.ValueType{i32, i32, i32}, onFiles(fsCommit)},
		abi.FnProcRun:     {[]api.ValueType{i32, i32, i32, i32, i32}, onCommands(procRun)},
		abi.FnFSSearch:    {[]api.ValueType{i32, i32, i32}, onCall(fsSearch)},
		abi.FnProcExec:    {[]api.ValueType{i32, i32, i32}, onCommands(procExec)},
		abi.FnProcJob:     {[]api.ValueType{i32, i32, i32}, onCommands(procJob)},
	}
}

// Granted returns the host function names a set of capabilities grants,
// sorted. Unknown capabilities are an error naming them.
func Granted(caps []abi.Capability) ([]string, error) { return runtime.Granted(caps) }

// Functions returns every toolhost/v1 host function for
// runtime.Config[Env].HostFunctions (response_take is the runtime's own).
// Each acts on its parts of the *Env its call was given
// (runtime.Plugin.Call); during a summary the runtime refuses them before
// they run.
func Functions() []runtime.HostFunction[Env] {
	table := functions()
	names := make([]string, 0, len(table))
	for name := range table {
		names = append(names, name)
	}
	sort.Strings(names)
	out := make([]runtime.HostFunction[Env], 0, len(names))
	for _, name := range names {
		out = append(out, runtime.HostFunction[Env]{Name: name, Params: table[name].params, Func: adapt(name, table[name]), Refused: refused(name)})
	}
	return out
}

// adapt turns fn's error into the status and staged HostError the ABI
// returns. env is never nil: without one (a summary, a start-up, a call
// given none) the runtime refuses the function itself.
func adapt(name string, fn function) func(context.Context, *Env, api.Memory, []uint64) (abi.Status, []byte) {
	return func(ctx context.Context, env *Env, mem api.Memory, params []uint64) (abi.Status, []byte) {
		resp, err := fn.run(ctx, env, mem, params)
		if err != nil {
			he := classify("", err)
			env.Call.report(name, mem, params, he)
			return he.Status, he.encode()
		}
		env.Call.report(name, mem, params, nil)
		return abi.StatusOK, resp
	}
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
