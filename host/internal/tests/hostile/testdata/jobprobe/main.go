// Command jobprobe is a test plugin that hands its arguments to proc_job
// as they are, the way a model's job_output, job_kill and job_list
// arguments reach it, and returns the host's result as JSON.
package main

import (
	"encoding/json"

	"github.com/toolhost/toolhost/abi"
	"github.com/toolhost/toolhost/sdk"
)

func init() {
	sdk.Register(sdk.Tool[abi.JobRequest]{
		Manifest: abi.Manifest{
			Name: "job_probe", Version: "0.0.1", Description: "Runs proc_job with its arguments as the request.",
			Parameters: []byte(`{"type":"object","properties":{"op":{"type":"string"},"id":{"type":"string"},"since_byte":{"type":"integer"},` +
				`"max_bytes":{"type":"integer"},"wait_ms":{"type":"integer"},"signal":{"type":"string"}},"required":["op"]}`),
			RiskLevel: abi.RiskLow, TimeoutClass: abi.TimeoutShell, Nondeterministic: true,
			Capabilities: []abi.Capability{abi.CapProcJobs},
		},
		Handle: func(_ *sdk.Call, req abi.JobRequest) (string, error) {
			res, err := sdk.Job(req)
			if err != nil {
				return "", err
			}
			out, err := json.Marshal(res)
			return string(out), err
		},
	})
}

func main() {}
