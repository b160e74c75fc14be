package hostfn

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"

	"github.com/tetratelabs/wazero/api"

	"github.com/toolhost/toolhost/abi"
	"github.com/toolhost/toolhost/host/internal/confine"
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
func procRun(ctx context.Context, c *Call, cmds *Commands, mem api.Memory, stack []uint64) ([]byte, error) {
	if err := c.dryRunRefusal("run a command"); err != nil {
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
	dir, err := c.workDir(cwd)
	if err != nil {
		return nil, err
	}
	run, err := cmds.confine(ctx, c, dir, cmds.Environ)
	if err != nil {
		return nil, err
	}
	defer run.Close()
	// The model never sees more than the output limit of either stream.
	capture := int(c.outputLimit())
	spec := proc.Spec{Command: command, Dir: dir, Env: cmds.Environ, MaxCapture: capture, TailCapture: capture}
	if l := run.Launch(); l != nil {
		spec.Launcher = l
	}
	if c.Emit != nil {
		// proc passes the call's ctx on: a consumer that stops reading
		// costs the call at most its own deadline.
		spec.Sink = func(ctx context.Context, s proc.Stream, chunk []byte) error {
			return c.Emit(ctx, Event{CallID: c.CallID, Kind: uint32(s), Data: chunk})
		}
	}
	if c.Journal != nil {
		spec.Started = c.Journal.ProcessStarted
	}
	res, err := proc.Run(ctx, spec)
	var notRun *proc.NotRunError
	if !errors.As(err, &notRun) {
		cmds.recordConfinement(run.Applied())
	}
	if err != nil {
		// A call stopped while its sandbox was being set up was stopped,
		// not refused: the deadline or the user's cancellation says so.
		if stop := interrupted(err, "the command ran past its deadline; its processes were killed"); stop != nil {
			return nil, stop
		}
		if notRun != nil {
			return nil, fail(abi.StatusDenied, abi.KindExecutionFailed, "call %s: the command did not run: its sandbox could not be set up: %v", c.CallID, notRun.Err)
		}
		return nil, fail(abi.StatusIO, abi.KindExecutionFailed, "cannot start the command: %v", err)
	}
	if hint := run.Hint(res.Stderr, res.StderrTail); hint != "" {
		var added int
		res.Stderr, res.StderrTail, added = appendHint(res.Stderr, res.StderrTail, capture, hint)
		res.StderrBytes += int64(added)
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
func (c *Call) workDir(cwd string) (string, error) {
	if cwd == "" {
		cwd = "."
	}
	p, err := c.resolve(cwd)
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

// confine prepares the confinement of a command that runs in dir with
// environ (a confined command gets its environment from the
// confinement, not from proc.Spec.Env). It fails closed: without a confiner, or when the configured confinement
// cannot be had, the command does not run and the error says why and how
// to fix it.
func (cmds *Commands) confine(ctx context.Context, c *Call, dir string, environ []string) (*confine.Run, error) {
	if cmds.Confiner == nil {
		return nil, fail(abi.StatusDenied, abi.KindExecutionFailed, "call %s: the command did not run: this host has no sandbox for commands; open it with host.Options.Launcher (a binary whose main calls host.RunLauncher, as toolhost's does), or set [tools.run_command] sandbox = \"off\" in the operator's configuration", c.CallID)
	}
	roots := c.Sandbox.Roots()
	for i, r := range roots {
		roots[i] = filepath.Clean(r)
	}
	run, err := cmds.Confiner.Prepare(ctx, confine.Call{ID: c.CallID, Roots: roots, Dir: dir, Environ: environ})
	if err != nil {
		if stop := interrupted(err, "the call ran past its deadline while its command's sandbox was prepared; the command did not run"); stop != nil {
			return nil, stop
		}
		return nil, fail(abi.StatusDenied, abi.KindExecutionFailed, "call %s: the command did not run: %v", c.CallID, err)
	}
	return run, nil
}

// recordConfinement keeps what confinement a command ran under, for the
// call's result.
func (cmds *Commands) recordConfinement(a confine.Applied) {
	cmds.mu.Lock()
	defer cmds.mu.Unlock()
	cmds.confinement = append(cmds.confinement, a)
}

// Confinement is the confinement each command of the call ran under, in
// order.
func (cmds *Commands) Confinement() []confine.Applied {
	cmds.mu.Lock()
	defer cmds.mu.Unlock()
	return append([]confine.Applied(nil), cmds.confinement...)
}

// appendHint adds the sandbox's hint as the last line of stderr, within
// the room the stream is kept in: in the tail when there is one, so the
// model reads it after the error it explains.
func appendHint(head, tail []byte, room int, hint string) (newHead, newTail []byte, added int) {
	line := []byte(fmt.Sprintf("\n%s\n", hint))
	if len(tail) > 0 || len(head)+len(line) > room {
		keep := max(0, min(len(tail), room-len(line)))
		return head, append(append([]byte(nil), tail[len(tail)-keep:]...), line...), len(line)
	}
	return append(append([]byte(nil), head...), line...), tail, len(line)
}
