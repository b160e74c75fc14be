package hostfn

import (
	"context"

	"github.com/tetratelabs/wazero/api"

	"github.com/toolhost/toolhost/abi"
)

// procJob reads, signals or lists the jobs of the call's conversation
// for a plugin holding proc.jobs (abi.JobRequest).
func procJob(ctx context.Context, c *Call, cmds *Commands, mem api.Memory, stack []uint64) ([]byte, error) {
	return nil, fail(abi.StatusInvalid, abi.KindExecutionFailed, "proc_job is not implemented yet")
}
