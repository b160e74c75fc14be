package hostfn

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"

	"github.com/tetratelabs/wazero/api"

	"github.com/toolhost/toolhost/abi"
	"github.com/toolhost/toolhost/host/internal/jobs"
)

// maxJobRequestBytes bounds a proc_job request before it is read: an
// operation, an id, three numbers and a signal name fit well within it.
const maxJobRequestBytes = 4096

// procJob reads, signals or lists the jobs of the call's conversation
// for a plugin holding proc.jobs (abi.JobRequest). Another
// conversation's job or output is answered as one that does not exist.
func procJob(ctx context.Context, c *Call, cmds *Commands, mem api.Memory, stack []uint64) ([]byte, error) {
	if n := uint32(stack[1]); n > maxJobRequestBytes {
		return nil, fail(abi.StatusTooLarge, abi.KindBadArgs, "proc_job: a request of %d bytes is more than the %d one may have; send one abi.JobRequest", n, maxJobRequestBytes)
	}
	raw, err := guestBytes(mem, uint32(stack[0]), uint32(stack[1]))
	if err != nil {
		return nil, err
	}
	var req abi.JobRequest
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&req); err != nil {
		return nil, fail(abi.StatusInvalid, abi.KindBadArgs, "proc_job: the request is not a job request (%v); send an abi.JobRequest as JSON", err)
	}
	if dec.More() {
		return nil, fail(abi.StatusInvalid, abi.KindBadArgs, "proc_job: the request has more after its JSON object; send one abi.JobRequest")
	}
	if cmds.Jobs == nil {
		return nil, fail(abi.StatusInvalid, abi.KindExecutionFailed, "call %s: this host keeps no background jobs or command outputs (it was opened without them), so there is nothing to read, kill or list", c.CallID)
	}
	switch req.Op {
	case abi.JobOutputOp, abi.JobKillOp:
		if req.ID == "" {
			return nil, fail(abi.StatusInvalid, abi.KindBadArgs, "id is required: a job id from run_command with background: true, or a finished command's output_id; job_list shows the jobs")
		}
	case abi.JobListOp:
	default:
		return nil, fail(abi.StatusInvalid, abi.KindBadArgs, "proc_job: op %q is not one of %q, %q and %q", req.Op, abi.JobOutputOp, abi.JobKillOp, abi.JobListOp)
	}
	if req.Op == abi.JobKillOp {
		if err := c.dryRunRefusal("signal a job"); err != nil {
			return nil, err
		}
	}
	// The model never gets more than the call's output limit at once.
	if limit := c.outputLimit(); req.MaxBytes == 0 || req.MaxBytes > limit {
		req.MaxBytes = limit
	}
	res, err := cmds.Jobs.Do(ctx, c.Conversation, req)
	switch {
	case errors.Is(err, jobs.ErrUnknown):
		return nil, fail(abi.StatusNotFound, abi.KindBadArgs, "no job or output %q in this conversation; job_list shows them", req.ID)
	case err != nil:
		return nil, fail(abi.StatusInvalid, abi.KindBadArgs, "%v", err)
	}
	return json.Marshal(res)
}
