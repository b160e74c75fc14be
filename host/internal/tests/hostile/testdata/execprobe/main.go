// Command execprobe is a test plugin that hands its arguments to
// proc_exec as they are, the way a model's run_command arguments reach
// it, and returns the host's result as JSON: the host alone must refuse
// what may not run and bound what does.
package main

import (
	"encoding/json"

	"github.com/toolhost/toolhost/abi"
	"github.com/toolhost/toolhost/sdk"
)

func init() {
	sdk.Register(sdk.Tool[abi.ExecRequest]{
		Manifest: abi.Manifest{
			Name: "exec_probe", Version: "0.0.1", Description: "Runs proc_exec with its arguments as the request.",
			Parameters: []byte(`{"type":"object","properties":{"command":{"type":"string"},"cwd":{"type":"string"},"timeout_ms":{"type":"integer"},` +
				`"env":{"type":"object","additionalProperties":{"type":"string"}},"stdin":{"type":"string"},"background":{"type":"boolean"},"report":{"type":"boolean"}},"required":["command"]}`),
			RiskLevel: abi.RiskHigh, RequiresApproval: true, SideEffecting: true, TimeoutClass: abi.TimeoutShell, Nondeterministic: true, PathArgs: []string{"cwd"},
			Capabilities: []abi.Capability{abi.CapProcExec},
		},
		Handle: func(_ *sdk.Call, req abi.ExecRequest) (string, error) {
			res, err := sdk.Exec(req)
			if err != nil {
				return "", err
			}
			out, err := json.Marshal(res)
			return string(out), err
		},
	})
}

func main() {}
