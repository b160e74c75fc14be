// Command summary_io is a deliberately broken plugin:
// its approval summary stats the file it names, though a summary may only
// look at its arguments. The host refuses the stat; toolhost test must
// fail it in summary.pure, naming fs_stat.
package main

import (
	"strconv"

	"github.com/toolhost/toolhost/abi"
	"github.com/toolhost/toolhost/sdk"
)

type args struct {
	Path string `json:"path"`
}

func init() {
	sdk.Register(sdk.Tool[args]{
		Manifest: abi.Manifest{
			Name: "summary_io", Version: "0.0.1",
			Description: "Returns the size in bytes of the file at path.",
			Parameters:  []byte(`{"type":"object","properties":{"path":{"type":"string","minLength":1}},"required":["path"],"additionalProperties":false}`),
			RiskLevel:   abi.RiskLow, RequiresApproval: true, TimeoutClass: abi.TimeoutFile,
			PathArgs: []string{"path"}, Capabilities: []abi.Capability{abi.CapFSRead},
		},
		Summary: func(a args) (string, error) {
			if fi, err := sdk.Stat(a.Path); err == nil {
				return "Size of " + a.Path + " (" + strconv.FormatInt(fi.Size, 10) + " bytes)", nil
			}
			return "Size of " + a.Path, nil
		},
		Handle: func(_ *sdk.Call, a args) (string, error) {
			fi, err := sdk.Stat(a.Path)
			if err != nil {
				return "", err
			}
			return strconv.FormatInt(fi.Size, 10), nil
		},
	})
}

func main() {}
