// Command job_kill is the job_kill tool: stop a background job of the
// conversation with a signal (TERM by default, then KILL if it does not
// end), and say how it ended.
package main

import (
	"github.com/toolhost/toolhost/abi"
	"github.com/toolhost/toolhost/internal/jobtext"
	"github.com/toolhost/toolhost/sdk"
)

type args struct {
	ID     string `json:"id"`
	Signal string `json:"signal"`
}

const schema = `{
  "type": "object",
  "properties": {
    "id": {"type": "string", "minLength": 1, "maxLength": 64, "description": "The job id run_command's background start returned."},
    "signal": {"enum": ["TERM", "INT", "HUP", "KILL"], "default": "TERM", "description": "Signal to send. TERM (default) asks the job to stop and is followed by KILL if it has not ended after a grace; KILL stops it at once."}
  },
  "required": ["id"],
  "additionalProperties": false
}`

func init() {
	sdk.Register(sdk.Tool[args]{
		Manifest: abi.Manifest{
			Name:             "job_kill",
			Version:          "1.0.0",
			Description:      "Stop a background job of this conversation (started by run_command with background: true): every process it started is killed. Returns how it ended and the end of its output.",
			Parameters:       []byte(schema),
			SideEffecting:    true,
			RiskLevel:        abi.RiskLow,
			TimeoutClass:     abi.TimeoutDefault,
			Nondeterministic: true,
			Capabilities:     []abi.Capability{abi.CapProcJobs},
		},
		Summary: func(a args) (string, error) {
			s := "Stop job " + a.ID
			if a.Signal != "" {
				s += " with SIG" + a.Signal
			}
			return s, nil
		},
		Handle: handle,
	})
}

func main() {}

func handle(c *sdk.Call, a args) (string, error) {
	r, err := sdk.Job(abi.JobRequest{Op: abi.JobKillOp, ID: a.ID, Signal: a.Signal})
	if err != nil {
		return "", err
	}
	if r.Job == nil {
		return "", sdk.Failed("job_kill %s: the host returned no job", a.ID)
	}
	c.SetStructured(jobtext.Object(*r.Job))
	return jobtext.Status(*r.Job) + "\n", nil
}
