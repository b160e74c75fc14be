// Command good is the control beside the deliberately broken plugins:
// a tiny correct plugin that counts the lines of the
// file its path argument names. toolhost test must pass it.
package main

import (
	"bytes"
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
			Name: "count_lines", Version: "0.0.1",
			Description: "Counts the lines of the text file at path.",
			Parameters:  []byte(`{"type":"object","properties":{"path":{"type":"string","minLength":1,"description":"File path, relative to the workspace root."}},"required":["path"],"additionalProperties":false}`),
			RiskLevel:   abi.RiskLow, TimeoutClass: abi.TimeoutFile,
			PathArgs: []string{"path"}, Capabilities: []abi.Capability{abi.CapFSRead},
		},
		Summary: func(a args) (string, error) { return "Count the lines of " + a.Path, nil },
		Handle: func(c *sdk.Call, a args) (string, error) {
			limit := c.Limits.ReadLimit()
			info, data, err := sdk.Read(a.Path, 0, limit, 0)
			if err != nil {
				return "", err
			}
			if info.Flags&abi.ReadEOF == 0 {
				return "", sdk.Failed("%s is %d bytes, more than the %d-byte read limit", a.Path, info.FileSize, limit)
			}
			n := bytes.Count(data, []byte("\n"))
			if len(data) > 0 && data[len(data)-1] != '\n' {
				n++
			}
			return strconv.Itoa(n), nil
		},
	})
}

func main() {}
