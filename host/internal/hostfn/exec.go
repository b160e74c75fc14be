package hostfn

import (
	"context"

	"github.com/tetratelabs/wazero/api"

	"github.com/toolhost/toolhost/abi"
)

// procExec runs one command for a plugin holding proc.exec, as an
// abi.ExecRequest: timeout, environment, stdin, background.
func procExec(ctx context.Context, c *Call, cmds *Commands, mem api.Memory, stack []uint64) ([]byte, error) {
	return nil, fail(abi.StatusInvalid, abi.KindExecutionFailed, "proc_exec is not implemented yet")
}
