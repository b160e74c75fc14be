// Command spin is a test plugin that never returns when asked to spin: the
// runtime must stop it at its deadline and stay usable.
package main

import (
	"github.com/toolhost/toolhost/abi"
	"github.com/toolhost/toolhost/sdk"
)

type args struct {
	Spin bool `json:"spin"`
}

func init() {
	sdk.Register(sdk.Tool[args]{
		Manifest: abi.Manifest{
			Name: "spin", Version: "0.0.1", Description: "Spins forever when spin is true.",
			Parameters: []byte(`{"type":"object","properties":{"spin":{"type":"boolean"}}}`),
			RiskLevel:  abi.RiskLow, TimeoutMillis: 200,
		},
		Handle: func(_ *sdk.Call, a args) (string, error) {
			n := 0
			for a.Spin {
				n++
			}
			return "done", nil
		},
	})
}

func main() {}
