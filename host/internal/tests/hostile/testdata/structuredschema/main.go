// Command structuredschema is a test plugin whose manifest declares an
// output_schema ({"files": integer}) that its result keeps or breaks as
// mode says: the host must pass on only an object matching it, and fail
// a result that breaks it or gives none.
package main

import (
	"github.com/toolhost/toolhost/abi"
	"github.com/toolhost/toolhost/sdk"
)

type args struct {
	Mode string `json:"mode"`
}

func init() {
	sdk.Register(sdk.Tool[args]{
		Manifest: abi.Manifest{
			Name: "structuredschema", Version: "0.0.1", Description: "Counts files, as mode says.",
			Parameters:   []byte(`{"type":"object","properties":{"mode":{"type":"string"}},"required":["mode"]}`),
			OutputSchema: []byte(`{"type":"object","properties":{"files":{"type":"integer","description":"How many files."}},"required":["files"],"additionalProperties":false}`),
			RiskLevel:    abi.RiskLow,
		},
		Handle: func(c *sdk.Call, a args) (string, error) {
			switch a.Mode {
			case "ok":
				c.SetStructured([]byte(`{"files": 2}`))
			case "mismatch":
				c.SetStructured([]byte(`{"files": "two"}`))
			case "extra":
				c.SetStructured([]byte(`{"files": 2, "owner": "root"}`))
			}
			return "2 files", nil
		},
	})
}

func main() {}
