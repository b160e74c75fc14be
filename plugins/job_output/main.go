// Command job_output is the job_output tool: the output of a background
// job of the conversation (run_command's background), or the whole kept
// output of a finished command by its output_id, from a byte offset. By
// default each call continues where the previous one stopped, so polling
// a dev server's log returns only what is new.
package main

import (
	"strconv"

	"github.com/toolhost/toolhost/abi"
	"github.com/toolhost/toolhost/internal/jobtext"
	"github.com/toolhost/toolhost/sdk"
)

type args struct {
	ID        string `json:"id"`
	SinceByte *int64 `json:"since_byte"`
	MaxBytes  int64  `json:"max_bytes"`
	WaitMS    int64  `json:"wait_ms"`
}

// maxWaitMS keeps a wait within the tool's default deadline.
const maxWaitMS = 25000

const schema = `{
  "type": "object",
  "properties": {
    "id": {"type": "string", "minLength": 1, "maxLength": 64, "description": "A job id from run_command's background start, or the output_id of a finished command whose output was cut."},
    "since_byte": {"type": "integer", "minimum": 0, "description": "Byte offset to read from. Default: where this conversation's previous job_output of this id stopped (0 the first time), so repeated calls return only new output."},
    "max_bytes": {"type": "integer", "minimum": 1, "description": "Most bytes returned. Default and maximum: the output limit."},
    "wait_ms": {"type": "integer", "minimum": 0, "maximum": 25000, "default": 0, "description": "Wait up to this long for new output or for the job to end, e.g. for a server to print that it is listening. Default 0: return at once."}
  },
  "required": ["id"],
  "additionalProperties": false
}`

func init() {
	sdk.Register(sdk.Tool[args]{
		Manifest: abi.Manifest{
			Name:             "job_output",
			Version:          "1.0.0",
			Description:      "Read a background job's output (or a finished command's whole output by its output_id) from a byte offset: by default only what is new since the last job_output of that id. Ends with whether the job is running, its exit code once it ended, and the next_byte to continue from. Can wait (wait_ms) for new output.",
			Parameters:       []byte(schema),
			RiskLevel:        abi.RiskLow,
			TimeoutClass:     abi.TimeoutDefault,
			Nondeterministic: true,
			Capabilities:     []abi.Capability{abi.CapProcJobs},
		},
		Summary: func(a args) (string, error) { return "Read the output of " + a.ID, nil },
		Handle:  handle,
	})
}

func main() {}

func handle(c *sdk.Call, a args) (string, error) {
	if a.WaitMS > maxWaitMS {
		return "", sdk.BadArgs("wait_ms %d is more than %d; poll again instead", a.WaitMS, maxWaitMS)
	}
	limit := c.Limits.OutputLimit()
	if limit <= 0 {
		limit = 100 << 10
	}
	// Room for the status line that follows the output.
	room := max(limit-jobtext.StatusRoom, 1)
	if a.MaxBytes <= 0 || a.MaxBytes > room {
		a.MaxBytes = room
	}
	r, err := sdk.Job(abi.JobRequest{Op: abi.JobOutputOp, ID: a.ID, SinceByte: a.SinceByte, MaxBytes: a.MaxBytes, WaitMS: a.WaitMS})
	if err != nil {
		return "", err
	}
	if r.Job == nil {
		return "", sdk.Failed("job_output %s: the host returned no job", a.ID)
	}
	j := *r.Job
	c.SelfLimited()
	c.SetStructured(jobtext.Object(j))
	out := j.Output
	if out != "" && out[len(out)-1] != '\n' {
		out += "\n"
	}
	if j.SkippedBytes > 0 {
		out = "[... " + strconv.FormatInt(j.SkippedBytes, 10) + " earlier bytes are no longer kept ...]\n" + out
	}
	return out + jobtext.Status(j) + "\n", nil
}
