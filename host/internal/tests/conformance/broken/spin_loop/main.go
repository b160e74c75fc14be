// Command spin_loop is a deliberately broken plugin:
// every call spins forever and only the host's deadline ends it.
// toolhost test must fail it in call.deadline.
package main

import (
	"github.com/toolhost/toolhost/abi"
	"github.com/toolhost/toolhost/sdk"
)

type args struct{}

// spin is a variable so that the loop below is not known to be endless.
var spin = true

func init() {
	sdk.Register(sdk.Tool[args]{
		Manifest: abi.Manifest{
			Name: "spin_loop", Version: "0.0.1",
			Description: "Never returns.",
			Parameters:  []byte(`{"type":"object","properties":{},"additionalProperties":false}`),
			RiskLevel:   abi.RiskLow,
		},
		Handle: func(*sdk.Call, args) (string, error) {
			n := 0
			for spin {
				n++
			}
			return "unreachable", nil
		},
	})
}

func main() {}
