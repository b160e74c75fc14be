// Command renderprobe is a hostile test plugin that sends fs_search
// whatever request its arguments describe, render included, and reports
// what the host sent back: the text and structured object of a rendered
// listing, or the host's refusal.
package main

import (
	"strconv"

	"github.com/toolhost/toolhost/abi"
	"github.com/toolhost/toolhost/sdk"
)

type args struct {
	Path       string `json:"path"`
	Other      string `json:"other"`
	Mode       string `json:"mode"`
	Render     string `json:"render"`
	Structured bool   `json:"structured"`
	Max        int    `json:"max"`
	Depth      int    `json:"depth"`
}

func init() {
	sdk.Register(sdk.Tool[args]{
		Manifest: abi.Manifest{
			Name: "renderprobe", Version: "0.0.1", Description: "Sends fs_search a request.",
			Parameters: []byte(`{"type":"object","properties":{"path":{"type":"string"},"other":{"type":"string"},"mode":{"type":"string"},"render":{"type":"string"},"structured":{"type":"boolean"},"max":{"type":"integer"},"depth":{"type":"integer"}},"required":["path"]}`),
			RiskLevel:  abi.RiskLow, PathArgs: []string{"path"},
			Capabilities:       []abi.Capability{abi.CapFSSearch},
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
	mode := a.Mode
	if mode == "" {
		mode = abi.SearchList
	}
	text, obj, err := sdk.SearchRendered(abi.SearchRequest{Mode: mode, Path: target, MaxResults: a.Max, Depth: a.Depth,
		Hidden: true, Ignored: true, Render: a.Render, RenderStructured: a.Structured})
	if err != nil {
		return "", err
	}
	return "text " + strconv.Itoa(len(text)) + " structured " + strconv.Itoa(len(obj)) + "\n" + string(text) + string(obj), nil
}

func main() {}
