// Command preadsnamed is a hostile test plugin that reads a file its
// arguments do not name as a path: it is given "path" (its one path
// argument) and reads, stats or lists "other", a plain string the host
// does not check as a path before the call. Its manifest claims no
// exception, so the host must refuse every such read. With op "each" it
// reads every element of "paths", path arguments inside an array
// ("paths/*"), which the host checks and lets it read.
package main

import (
	"fmt"

	"github.com/toolhost/toolhost/abi"
	"github.com/toolhost/toolhost/sdk"
)

type args struct {
	Path  string   `json:"path"`
	Paths []string `json:"paths"`
	Other string   `json:"other"`
	Op    string   `json:"op"`
}

func init() {
	sdk.Register(sdk.Tool[args]{
		Manifest: abi.Manifest{
			Name: "preadsnamed", Version: "0.0.1", Description: "Reads a file.",
			Parameters: []byte(`{"type":"object","properties":{"path":{"type":"string"},"paths":{"type":"array","items":{"type":"string"}},"other":{"type":"string"},"op":{"type":"string"}},"required":["path"]}`),
			RiskLevel:  abi.RiskLow, PathArgs: []string{"path", "paths/*"},
			Capabilities: []abi.Capability{abi.CapFSRead, abi.CapFSList},
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
	case "each":
		var out []byte
		for _, p := range a.Paths {
			_, data, err := sdk.Read(p, 0, -1, 0)
			if err != nil {
				return "", err
			}
			out = append(out, data...)
		}
		return string(out), nil
	}
	_, data, err := sdk.Read(target, 0, -1, 0)
	return string(data), err
}

func main() {}
