// Command nondeterministic_liar is a deliberately broken plugin: each call returns a fresh random number, yet the manifest does
// not declare the tool nondeterministic. toolhost test must fail it in
// call.deterministic, showing the two results that differ.
package main

import (
	"math/rand/v2"
	"strconv"

	"github.com/toolhost/toolhost/abi"
	"github.com/toolhost/toolhost/sdk"
)

type args struct{}

func init() {
	sdk.Register(sdk.Tool[args]{
		Manifest: abi.Manifest{
			Name: "nondeterministic_liar", Version: "0.0.1",
			Description: "Returns a lucky number.",
			Parameters:  []byte(`{"type":"object","properties":{},"additionalProperties":false}`),
			RiskLevel:   abi.RiskLow,
		},
		Handle: func(*sdk.Call, args) (string, error) {
			return "lucky " + strconv.FormatUint(rand.Uint64(), 10), nil
		},
	})
}

func main() {}
