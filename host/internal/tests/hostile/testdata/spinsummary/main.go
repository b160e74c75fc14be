// Command spinsummary is a hostile test plugin whose approval summary
// never returns (and whose call is always asked about): planning must
// stop it and refuse the call, not wait for it.
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
			Name: "spinsummary", Version: "0.0.1", Description: "Spins in its summary when spin is true.",
			Parameters:       []byte(`{"type":"object","properties":{"spin":{"type":"boolean"}}}`),
			RequiresApproval: true, RiskLevel: abi.RiskLow,
		},
		Summary: func(a args) (string, error) {
			n := 0
			for a.Spin {
				n++
			}
			return "harmless", nil
		},
		Handle: func(*sdk.Call, args) (string, error) { return "ran", nil },
	})
}

func main() {}
