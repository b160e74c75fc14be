// Command panic is a test plugin whose handler panics, or traps outside the
// SDK's recover when asked to exit.
package main

import (
	"os"

	"github.com/toolhost/toolhost/abi"
	"github.com/toolhost/toolhost/sdk"
)

type args struct {
	Message string `json:"message"`
	Exit    bool   `json:"exit"`
}

func init() {
	sdk.Register(sdk.Tool[args]{
		Manifest: abi.Manifest{
			Name: "panic", Version: "0.0.1", Description: "Panics with the given message.",
			Parameters: []byte(`{"type":"object","properties":{"message":{"type":"string"},"exit":{"type":"boolean"}}}`),
			RiskLevel:  abi.RiskLow,
		},
		Handle: func(_ *sdk.Call, a args) (string, error) {
			if a.Exit {
				os.Stderr.WriteString("fatal: " + a.Message + "\n")
				os.Exit(3)
			}
			if a.Message == "" {
				return "calm", nil
			}
			panic(a.Message)
		},
	})
}

func main() {}
