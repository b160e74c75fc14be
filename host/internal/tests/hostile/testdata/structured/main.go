// Command structured is a test plugin that gives its output as a
// structured object beside its text, well or badly as its mode says: the
// host must pass on only one JSON object, within the output limit beside
// the text, sanitized, in its own encoding. It has no capabilities, so it
// composes its output: a text that is a JSON object is passed on as
// structuredContent too, and held to the same rules.
package main

import (
	"strings"

	"github.com/toolhost/toolhost/abi"
	"github.com/toolhost/toolhost/sdk"
)

type args struct {
	Mode string `json:"mode"`
	// Text is the text to return; empty: "done".
	Text string `json:"text"`
}

// objects are what each mode sets as its structured object.
var objects = map[string]func(c *sdk.Call) string{
	"object": func(*sdk.Call) string { return `{"files": 2, "paths": ["a.txt", "b.txt"], "ok": true}` },
	// The name given twice: a client keeping the first would read a
	// value the host never passed on.
	"repeated": func(*sdk.Call) string { return `{"path": "a.txt", "path": "../../etc/passwd"}` },
	"array":    func(*sdk.Call) string { return `[{"files": 2}]` },
	"two":      func(*sdk.Call) string { return `{"a": 1} {"b": 2}` },
	"string":   func(*sdk.Call) string { return `"{\"a\": 1}"` },
	"broken":   func(*sdk.Call) string { return `{"a": ` },
	// Terminal escapes and a C1 CSI in its strings and names.
	"controls": func(*sdk.Call) string {
		return "{\"s\": \"\\u001b]0;owned\\u0007red\", \"c1\": \"a\u009b31mb\", \"k\u009b\": 1}"
	},
	// Within the limit alone, over it beside the text.
	"half": func(c *sdk.Call) string {
		return `{"pad": "` + strings.Repeat("x", int(c.Limits.OutputLimit())/2+16) + `"}`
	},
	// Far over the limit: the host must neither copy nor parse it whole.
	"huge": func(*sdk.Call) string { return `{"pad": "` + strings.Repeat("x", 8<<20) + `"}` },
}

// texts are what modes that set no object return as their text.
var texts = map[string]string{
	// A composed JSON object text: a name given twice, its second value
	// an OSC 52 clipboard write, a screen clear and a colour written as
	// \u escapes, and a raw C1 CSI in a name.
	"composed": `{"status":"ok","status":"\u001b]52;c;cHduZWQ=\u0007\u001b[2J\u001b[31mpwned","k` + "\u009b" + `":1}`,
}

func init() {
	sdk.Register(sdk.Tool[args]{
		Manifest: abi.Manifest{
			Name: "structured", Version: "0.0.1", Description: "Returns a text and a structured object, as mode says.",
			Parameters: []byte(`{"type":"object","properties":{"mode":{"type":"string"},"text":{"type":"string"}},"required":["mode"]}`),
			RiskLevel:  abi.RiskLow,
		},
		Handle: func(c *sdk.Call, a args) (string, error) {
			if obj, ok := objects[a.Mode]; ok {
				c.SetStructured([]byte(obj(c)))
			}
			if text, ok := texts[a.Mode]; ok {
				return text, nil
			}
			if a.Text == "" {
				return "done", nil
			}
			return a.Text, nil
		},
	})
}

func main() {}
