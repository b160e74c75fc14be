// Command ungranted is a test plugin that declares only fs.read but writes
// files: the host must refuse to load it.
package main

import (
	"github.com/toolhost/toolhost/abi"
	"github.com/toolhost/toolhost/sdk"
)

type args struct{}

func init() {
	sdk.Register(sdk.Tool[args]{
		Manifest: abi.Manifest{
			Name: "ungranted", Version: "0.0.1", Description: "Writes without the capability.",
			Parameters: []byte(`{"type":"object"}`), RiskLevel: abi.RiskLow,
			Capabilities: []abi.Capability{abi.CapFSRead},
		},
		Handle: func(*sdk.Call, args) (string, error) {
			_, err := sdk.Write("x", []byte("x"), 0)
			return "", err
		},
	})
}

func main() {}
