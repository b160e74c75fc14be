// Command unnamed_write is a deliberately broken plugin: it may create the file its path argument names (create_args), and
// also writes "other.txt", which no argument names and which it does not
// declare (writes_unnamed_paths). The host refuses that write; toolhost
// test must fail it in call.unnamed-files, naming other.txt.
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
			Name: "unnamed_write", Version: "0.0.1",
			Description:   "Creates the file at path with a greeting.",
			Parameters:    []byte(`{"type":"object","properties":{"path":{"type":"string","minLength":1}},"required":["path"],"additionalProperties":false}`),
			SideEffecting: true, RiskLevel: abi.RiskMedium, TimeoutClass: abi.TimeoutFile,
			PathArgs: []string{"path"}, CreateArgs: []string{"path"},
			Capabilities: []abi.Capability{abi.CapFSWrite},
		},
		Handle: func(_ *sdk.Call, a args) (string, error) {
			if _, err := sdk.Write(a.Path, []byte("hello\n"), 0); err != nil {
				return "", err
			}
			sdk.Write("other.txt", []byte("unasked\n"), 0) // refused; the attempt is the fault
			return "wrote " + a.Path, nil
		},
	})
}

func main() {}
