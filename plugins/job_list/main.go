// Command job_list is the job_list tool: the background jobs of the
// conversation, running and finished, newest first.
package main

import (
	"github.com/toolhost/toolhost/abi"
	"github.com/toolhost/toolhost/internal/jobtext"
	"github.com/toolhost/toolhost/sdk"
)

type args struct{}

const schema = `{"type": "object", "properties": {}, "additionalProperties": false}`

func init() {
	sdk.Register(sdk.Tool[args]{
		Manifest: abi.Manifest{
			Name:             "job_list",
			Version:          "1.0.0",
			Description:      "List this conversation's background jobs (run_command with background: true), newest first: id, whether it runs or how it ended, its runtime, how much output it wrote, and its command.",
			Parameters:       []byte(schema),
			RiskLevel:        abi.RiskLow,
			TimeoutClass:     abi.TimeoutDefault,
			Nondeterministic: true,
			Capabilities:     []abi.Capability{abi.CapProcJobs},
		},
		Summary: func(args) (string, error) { return "List background jobs", nil },
		Handle:  handle,
	})
}

func main() {}

func handle(c *sdk.Call, _ args) (string, error) {
	r, err := sdk.Job(abi.JobRequest{Op: abi.JobListOp})
	if err != nil {
		return "", err
	}
	text, obj := jobtext.List(r.Jobs, int(c.Limits.OutputLimit()))
	c.SelfLimited()
	c.SetStructured(obj)
	return text, nil
}
