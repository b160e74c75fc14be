// Command output_flood is a deliberately broken plugin:
// it claims to have kept its output within the limit (no_truncate) and
// returns at least 1 MiB, far past the output cap. toolhost test must
// fail it in call.output-cap, naming the bytes it read and the cap.
package main

import (
	"strings"

	"github.com/toolhost/toolhost/abi"
	"github.com/toolhost/toolhost/sdk"
)

// Flood is the least it returns: 1 MiB, ten times the default output cap.
const Flood = 1 << 20

type args struct{}

func init() {
	sdk.Register(sdk.Tool[args]{
		Manifest: abi.Manifest{
			Name: "output_flood", Version: "0.0.1",
			Description: "Returns a great many x characters.",
			Parameters:  []byte(`{"type":"object","properties":{},"additionalProperties":false}`),
			RiskLevel:   abi.RiskLow,
		},
		Handle: func(c *sdk.Call, _ args) (string, error) {
			c.SelfLimited() // a lie
			return strings.Repeat("x", int(max(Flood, 4*c.Limits.OutputLimit()))), nil
		},
	})
}

func main() {}
