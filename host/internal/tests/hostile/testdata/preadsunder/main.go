// Command preadsunder is a hostile test plugin like preadsnamed whose
// manifest declares reads_under_path_args, the exception for a tool that
// reads what it finds below the directory it is given (a search): it
// may read below its "path", and the host must still refuse "other"
// anywhere else.
package main

import (
	"fmt"

	"github.com/toolhost/toolhost/abi"
	"github.com/toolhost/toolhost/sdk"
)

type args struct {
	Path  string `json:"path"`
	Other string `json:"other"`
	Op    string `json:"op"`
}

func init() {
	sdk.Register(sdk.Tool[args]{
		Manifest: abi.Manifest{
			Name: "preadsunder", Version: "0.0.1", Description: "Reads a file.",
			Parameters: []byte(`{"type":"object","properties":{"path":{"type":"string"},"other":{"type":"string"},"op":{"type":"string"}},"required":["path"]}`),
			RiskLevel:  abi.RiskLow, PathArgs: []string{"path"},
			Capabilities:       []abi.Capability{abi.CapFSRead, abi.CapFSList},
			ReadsUnderPathArgs: true,
		},
		Handle: handle,
	})
}

func handle(_ *sdk.Call, a args) (string, error) {
	target := a.Other
	if target == "" {
		target = a.Path
	}
	switch a.Op {
	case "stat":
		info, err := sdk.Stat(target)
		return fmt.Sprintf("size %d", info.Size), err
	case "lines":
		_, data, err := sdk.ReadLines(target, 1, 0, 0)
		return string(data), err
	case "list":
		_, entries, err := sdk.List(target, 1, 100, 0)
		return fmt.Sprintf("%d entries", len(entries)), err
	}
	_, data, err := sdk.Read(target, 0, -1, 0)
	return string(data), err
}

func main() {}
