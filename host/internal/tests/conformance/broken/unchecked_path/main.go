// Command unchecked_path is a deliberately broken plugin: its schema has a "path" argument that it reads, but its manifest
// leaves path_args empty, so the host would not check that path against
// the sandbox before the call. toolhost test must fail it in
// manifest.path-args, naming "path".
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
			Name: "unchecked_path", Version: "0.0.1",
			Description: "Returns the first kilobyte of the file at path.",
			Parameters:  []byte(`{"type":"object","properties":{"path":{"type":"string","minLength":1}},"required":["path"],"additionalProperties":false}`),
			RiskLevel:   abi.RiskLow, TimeoutClass: abi.TimeoutFile,
			Capabilities: []abi.Capability{abi.CapFSRead},
		},
		Handle: func(_ *sdk.Call, a args) (string, error) {
			_, data, err := sdk.Read(a.Path, 0, 1024, 0)
			return string(data), err
		},
	})
}

func main() {}
