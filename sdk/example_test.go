package sdk_test

import (
	"bytes"
	"fmt"

	"github.com/toolhost/toolhost/abi"
	"github.com/toolhost/toolhost/sdk"
)

// A complete read-only tool. In a plugin's main package this is the whole
// file, with sdk.Register(countLines) in an init function and an empty
// main; build it with GOOS=wasip1 GOARCH=wasm go build -buildmode=c-shared.
func ExampleRegister() {
	type args struct {
		Path string `json:"path"`
	}
	countLines := sdk.Tool[args]{
		Manifest: abi.Manifest{
			Name:         "count_lines",
			Version:      "1.0.0",
			Description:  "Count the lines of a text file in the workspace.",
			Parameters:   []byte(`{"type":"object","properties":{"path":{"type":"string"}},"required":["path"],"additionalProperties":false}`),
			RiskLevel:    abi.RiskLow,
			TimeoutClass: abi.TimeoutFile,
			PathArgs:     []string{"path"},                // checked by the sandbox before the call
			Capabilities: []abi.Capability{abi.CapFSRead}, // the host links only fs.read functions
		},
		Summary: func(a args) (string, error) { return "Count lines of " + a.Path, nil },
		Handle: func(c *sdk.Call, a args) (string, error) {
			info, data, err := sdk.Read(a.Path, 0, c.Limits.ReadLimit(), 0)
			if err != nil {
				return "", err // host errors keep their kind: SandboxViolation, ExecutionFailed, ...
			}
			if info.Flags&abi.ReadEOF == 0 {
				return "", sdk.Failed("%s is larger than %d bytes", a.Path, c.Limits.ReadLimit())
			}
			return fmt.Sprint(bytes.Count(data, []byte("\n"))), nil
		},
	}
	_ = countLines // sdk.Register(countLines)
}
