package hostfn

import (
	"context"

	"github.com/tetratelabs/wazero/api"

	"github.com/toolhost/toolhost/abi"
	"github.com/toolhost/toolhost/host/internal/proc"
)

// maxCommandBytes is Linux's MAX_ARG_STRLEN: the kernel refuses a longer
// single argument to exec (sh -c COMMAND), so a longer command is refused
// before the host copies it.
const maxCommandBytes = 128 << 10

// procRun runs a shell command for a plugin holding proc.exec (SRD 3.6.10,
// FR-EXE-05/06). The guest blocks in this function while the command runs;
// output streams to the call's subscribers as it arrives, and the call's
// deadline or cancellation kills the whole process group.
func procRun(ctx context.Context, env *Env, mem api.Memory, stack []uint64) ([]byte, error) {
	if err := env.dryRunRefusal("run a command"); err != nil {
		return nil, err
	}
	if n := uint32(stack[1]); n > maxCommandBytes {
		return nil, fail(abi.StatusInvalid, abi.KindBadArgs, "a command of %d bytes is longer than the %d bytes a command may have; write a script file and run it", n, maxCommandBytes)
	}
	command, err := guestString(mem, uint32(stack[0]), uint32(stack[1]))
	if err != nil {
		return nil, err
	}
	cwd, err := guestPath(mem, uint32(stack[2]), uint32(stack[3]))
	if err != nil {
		return nil, err
	}
	dir, err := env.workDir(cwd)
	if err != nil {
		return nil, err
	}
	// The model never sees more than the output limit of either stream.
	capture := int(env.outputLimit())
	spec := proc.Spec{Command: command, Dir: dir, Env: env.Environ, MaxCapture: capture, TailCapture: capture}
	if env.Emit != nil {
		// proc passes the call's ctx on: a consumer that stops reading
		// costs the call at most its own deadline.
		spec.Sink = func(ctx context.Context, s proc.Stream, chunk []byte) error {
			return env.Emit(ctx, Event{CallID: env.CallID, Kind: uint32(s), Data: chunk})
		}
	}
	if env.Journal != nil {
		spec.Started = env.Journal.ProcessStarted
	}
	res, err := proc.Run(ctx, spec)
	if err != nil {
		if stop := interrupted(err, "the command ran past its deadline; its processes were killed"); stop != nil {
			return nil, stop
		}
		return nil, fail(abi.StatusIO, abi.KindExecutionFailed, "cannot start the command: %v", err)
	}
	out := abi.ProcResult{
		ExitCode: int32(res.ExitCode), StdoutBytes: res.StdoutBytes, StderrBytes: res.StderrBytes,
		Stdout: res.Stdout, Stderr: res.Stderr, StdoutTail: res.StdoutTail, StderrTail: res.StderrTail,
	}
	if int64(len(res.Stdout)+len(res.StdoutTail)) < res.StdoutBytes {
		out.Flags |= abi.ProcStdoutCut
	}
	if int64(len(res.Stderr)+len(res.StderrTail)) < res.StderrBytes {
		out.Flags |= abi.ProcStderrCut
	}
	return abi.AppendProcResult(nil, out), nil
}

// workDir is the directory a command runs in: cwd checked by the sandbox,
// or the working directory (the first root) when cwd is empty.
func (e *Env) workDir(cwd string) (string, error) {
	if cwd == "" {
		cwd = "."
	}
	p, err := e.resolve(cwd)
	if err != nil {
		return "", classify(cwd, err)
	}
	fi, err := p.Lstat()
	if err != nil {
		return "", classify(cwd, err)
	}
	if !fi.IsDir() {
		return "", fail(abi.StatusWrongType, abi.KindBadArgs, "cwd %s is not a directory", cwd)
	}
	return p.Abs, nil
}
