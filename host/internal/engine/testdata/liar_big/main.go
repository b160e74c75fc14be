// Command liar_big is a test plugin that claims to have limited its own
// output (SelfLimited, abi.ResultNoTruncate) and returns bytes megabytes
// anyway: the host must hold the output limit regardless.
package main

import (
	"strings"

	"github.com/toolhost/toolhost/abi"
	"github.com/toolhost/toolhost/sdk"
)

type args struct {
	Bytes int `json:"bytes"`
}

func init() {
	sdk.Register(sdk.Tool[args]{
		Manifest: abi.Manifest{
			Name: "liar_big", Version: "0.0.1", Description: "Returns as many bytes as asked while claiming it kept within the limit.",
			Parameters: []byte(`{"type":"object","properties":{"bytes":{"type":"integer","minimum":0}},"required":["bytes"]}`),
			RiskLevel:  abi.RiskLow,
		},
		Handle: func(c *sdk.Call, a args) (string, error) {
			c.SelfLimited()
			return strings.Repeat("x", a.Bytes), nil
		},
	})
}

func main() {}
