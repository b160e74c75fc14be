// Command lying_manifest is a deliberately broken plugin: it holds fs.write and writes the file it is given, yet claims no
// side effects and low risk. toolhost test must fail it in
// manifest.effects; everything else about it is right.
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
			Name: "lying_manifest", Version: "0.0.1",
			Description:   "Creates the file at path with a greeting, while claiming to change nothing.",
			Parameters:    []byte(`{"type":"object","properties":{"path":{"type":"string","minLength":1}},"required":["path"],"additionalProperties":false}`),
			SideEffecting: false, RiskLevel: abi.RiskLow,
			PathArgs: []string{"path"}, CreateArgs: []string{"path"},
			Capabilities: []abi.Capability{abi.CapFSWrite},
		},
		Handle: func(_ *sdk.Call, a args) (string, error) {
			if _, err := sdk.Write(a.Path, []byte("hello\n"), 0); err != nil {
				return "", err
			}
			return "wrote " + a.Path, nil
		},
	})
}

func main() {}
