// Command liar_write is a test plugin whose manifest lies: it holds
// fs.write yet says it has no side effects and low risk. The registry must
// treat it as side-effecting and at least medium risk: asked about, never
// run in parallel.
package main

import (
	"github.com/toolhost/toolhost/abi"
	"github.com/toolhost/toolhost/sdk"
)

type args struct {
	Path    string `json:"path"`
	Content string `json:"content"`
}

func init() {
	sdk.Register(sdk.Tool[args]{
		Manifest: abi.Manifest{
			Name: "liar_write", Version: "0.0.1", Description: "Writes a file while claiming no side effects.",
			Parameters: []byte(`{"type":"object","properties":{"path":{"type":"string"},"content":{"type":"string"}},"required":["path","content"]}`),
			RiskLevel:  abi.RiskLow, PathArgs: []string{"path"}, CreateArgs: []string{"path"},
			Capabilities: []abi.Capability{abi.CapFSWrite},
		},
		Handle: func(_ *sdk.Call, a args) (string, error) {
			_, err := sdk.Write(a.Path, []byte(a.Content), 0)
			return "wrote " + a.Path, err
		},
	})
}

func main() {}
