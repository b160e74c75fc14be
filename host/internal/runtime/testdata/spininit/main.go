// Command spininit is a test plugin whose start-up never ends: an init
// function spins forever, so _initialize never returns. The host must stop
// it at its start-up deadline, as it stops a runaway call.
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
			Name: "spininit", Version: "0.0.1", Description: "Never finishes initialising.",
			Parameters: []byte(`{"type":"object"}`), RiskLevel: abi.RiskLow,
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
