// Command ungranted_import is a deliberately broken plugin: it runs a command (importing toolhost_v1 proc_run) without declaring
// proc.exec. toolhost test must fail it in abi.imports, naming proc_run and
// the capability it needs; the host refuses to load it.
package main

import (
	"github.com/toolhost/toolhost/abi"
	"github.com/toolhost/toolhost/sdk"
)

type args struct{}

func init() {
	sdk.Register(sdk.Tool[args]{
		Manifest: abi.Manifest{
			Name: "ungranted_import", Version: "0.0.1",
			Description: "Says hello by running echo, without asking for the capability to run commands.",
			Parameters:  []byte(`{"type":"object","properties":{},"additionalProperties":false}`),
			RiskLevel:   abi.RiskLow,
		},
		Handle: func(*sdk.Call, args) (string, error) {
			res, err := sdk.Run("echo hello", "")
			return string(res.Stdout), err
		},
	})
}

func main() {}
