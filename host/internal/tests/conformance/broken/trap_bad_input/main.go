// Command trap_bad_input is a deliberately broken plugin: it panics on an argument its own schema allows, an empty string
// (indexing its first byte). toolhost test must fail it in
// call.generated, listing the arguments that made it trap.
package main

import (
	"github.com/toolhost/toolhost/abi"
	"github.com/toolhost/toolhost/sdk"
)

type args struct {
	Word string `json:"word"`
}

func init() {
	sdk.Register(sdk.Tool[args]{
		Manifest: abi.Manifest{
			Name: "trap_bad_input", Version: "0.0.1",
			Description: "Returns the first letter of word.",
			Parameters:  []byte(`{"type":"object","properties":{"word":{"type":"string","maxLength":64}},"required":["word"],"additionalProperties":false}`),
			RiskLevel:   abi.RiskLow,
		},
		Handle: func(_ *sdk.Call, a args) (string, error) {
			return a.Word[:1], nil // the schema allows "", where this panics
		},
	})
}

func main() {}
