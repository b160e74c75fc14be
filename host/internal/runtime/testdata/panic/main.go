// Command panic is a test plugin whose handler panics, traps outside the
// SDK's recover when asked to exit, or allocates until it is stopped.
package main

import (
	"os"

	"github.com/toolhost/toolhost/abi"
	"github.com/toolhost/toolhost/sdk"
)

type args struct {
	Message  string `json:"message"`
	Exit     bool   `json:"exit"`
	AllocMiB int    `json:"alloc_mib"`
}

var hoard [][]byte

func init() {
	sdk.Register(sdk.Tool[args]{
		Manifest: abi.Manifest{
			Name: "panic", Version: "0.0.1", Description: "Panics with the given message.",
			Parameters: []byte(`{"type":"object","properties":{"message":{"type":"string"},"exit":{"type":"boolean"},"alloc_mib":{"type":"integer"}}}`),
			RiskLevel:  abi.RiskLow,
		},
		Handle: func(_ *sdk.Call, a args) (string, error) {
			for range a.AllocMiB {
				hoard = append(hoard, make([]byte, 1<<20))
			}
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
