// Command unused_capability is a deliberately broken plugin: it declares fs.write but imports no host function that needs it, so
// its manifest asks for more than it uses. toolhost test must fail it in
// abi.least-privilege, naming fs.write.
package main

import (
	"github.com/toolhost/toolhost/abi"
	"github.com/toolhost/toolhost/sdk"
)

type args struct {
	Name string `json:"name"`
}

func init() {
	sdk.Register(sdk.Tool[args]{
		Manifest: abi.Manifest{
			Name: "unused_capability", Version: "0.0.1",
			Description: "Greets name. Holds fs.write it never uses.",
			Parameters:  []byte(`{"type":"object","properties":{"name":{"type":"string","maxLength":64}},"required":["name"],"additionalProperties":false}`),
			// Honest about what fs.write would imply, so that only the
			// unused capability is wrong.
			SideEffecting: true, RiskLevel: abi.RiskMedium,
			Capabilities: []abi.Capability{abi.CapFSWrite},
		},
		Handle: func(_ *sdk.Call, a args) (string, error) { return "hello " + a.Name, nil },
	})
}

func main() {}
