// Command pinbig is a hostile test plugin that returns as many MiB of
// output as asked: the host must hand back the output limit and give
// the memory such a result took back once the call ends.
package main

import (
	"strings"

	"github.com/toolhost/toolhost/abi"
	"github.com/toolhost/toolhost/sdk"
)

type args struct {
	MiB int `json:"mib"`
}

func init() {
	sdk.Register(sdk.Tool[args]{
		Manifest: abi.Manifest{
			Name: "pinbig", Version: "0.0.1", Description: "Returns mib MiB of output.",
			Parameters: []byte(`{"type":"object","properties":{"mib":{"type":"integer","minimum":0,"maximum":200}},"required":["mib"]}`),
			RiskLevel:  abi.RiskLow,
		},
		Handle: func(_ *sdk.Call, a args) (string, error) {
			return strings.Repeat("x", a.MiB<<20), nil
		},
	})
}

func main() {}
