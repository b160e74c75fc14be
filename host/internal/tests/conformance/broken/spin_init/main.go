// Command spin_init is a deliberately broken plugin:
// an init function spins forever, so its start-up (_initialize) never
// returns. toolhost test must fail it in start.spin, naming the stage.
//
// Its describe can never run, so the test packs manifest.json (the same
// manifest as below) into the module's toolhost.manifest section, as
// `toolhost plugin pack` would for a plugin that starts.
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
			Name: "spin_init", Version: "0.0.1",
			Description: "Never finishes starting.",
			Parameters:  []byte(`{"type":"object","properties":{},"additionalProperties":false}`),
			RiskLevel:   abi.RiskLow,
		},
		Handle: func(*sdk.Call, args) (string, error) { return "started", nil },
	})
}

func init() {
	n := 0
	for spin {
		n++
	}
	_ = n
}

func main() {}
