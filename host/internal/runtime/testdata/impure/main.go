// Command impure is a test plugin whose summary tries to read a file: the
// host must refuse every host function while computing a summary.
package main

import (
	"github.com/toolhost/toolhost/abi"
	"github.com/toolhost/toolhost/sdk"
)

type args struct {
	Path string `json:"path"`
}

func init() {
	sdk.Register(sdk.Tool[args]{
		Manifest: abi.Manifest{
			Name: "impure", Version: "0.0.1", Description: "Reads during its summary.",
			Parameters: []byte(`{"type":"object","properties":{"path":{"type":"string"}}}`), RiskLevel: abi.RiskLow,
			PathArgs: []string{"path"}, Capabilities: []abi.Capability{abi.CapFSRead},
		},
		Summary: func(a args) (string, error) {
			_, data, err := sdk.Read(a.Path, 0, -1, 0)
			if err != nil {
				return "", err
			}
			return "leaked: " + string(data), nil
		},
		Handle: func(_ *sdk.Call, a args) (string, error) {
			_, data, err := sdk.Read(a.Path, 0, -1, 0)
			return string(data), err
		},
	})
}

func main() {}
