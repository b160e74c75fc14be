// Command read_file is the read_file tool (SRD FR-TOOL-READ-01): UTF-8 text,
// optionally a 1-based inclusive line range, each line optionally prefixed
// with its number, or base64 for binary files.
package main

import (
	"fmt"

	"github.com/toolhost/toolhost/abi"
	"github.com/toolhost/toolhost/internal/fileread"
	"github.com/toolhost/toolhost/sdk"
)

type args struct {
	Path        string  `json:"path"`
	StartLine   *uint32 `json:"start_line"`
	EndLine     *uint32 `json:"end_line"`
	LineNumbers bool    `json:"line_numbers"`
}

const schema = `{
  "type": "object",
  "properties": {
    "path": {"type": "string", "minLength": 1, "description": "File path, relative to the workspace root."},
    "start_line": {"type": "integer", "minimum": 1, "maximum": 4294967295, "description": "First line to return, 1-based, inclusive."},
    "end_line": {"type": "integer", "minimum": 1, "maximum": 4294967295, "description": "Last line to return, 1-based, inclusive; past the end of the file reads through the end."},
    "line_numbers": {"type": "boolean", "default": false, "description": "Prefix every line with its line number in the file and an arrow, no padding: 12→text. The prefix is not part of the file; edit_file accepts old_string with it and strips it."}
  },
  "required": ["path"],
  "additionalProperties": false
}`

func init() {
	sdk.Register(sdk.Tool[args]{
		Manifest: abi.Manifest{
			Name:         "read_file",
			Version:      "1.1.0",
			Description:  "Read a file in the workspace. Returns UTF-8 text, or for binary files a [binary:base64] header and base64 data. Use start_line/end_line to read part of a large file, line_numbers to see each line's number.",
			Parameters:   []byte(schema),
			RiskLevel:    abi.RiskLow,
			TimeoutClass: abi.TimeoutFile,
			PathArgs:     []string{"path"},
			Capabilities: []abi.Capability{abi.CapFSRead},
		},
		Summary: summary,
		Handle:  handle,
	})
}

func main() {}

func summary(a args) (string, error) {
	switch {
	case a.StartLine != nil || a.EndLine != nil:
		return fmt.Sprintf("Read %s lines %s-%s", a.Path, bound(a.StartLine, "1"), bound(a.EndLine, "end")), nil
	}
	return "Read " + a.Path, nil
}

func bound(n *uint32, def string) string {
	if n == nil {
		return def
	}
	return fmt.Sprint(*n)
}

func handle(c *sdk.Call, a args) (string, error) {
	// Text past the output limit (line numbers make a file longer) is
	// cut at a whole line with a note saying where to read on, within
	// the limit, rather than cut anywhere by the host.
	note := int64(len(a.Path) + fileread.MaxNote)
	r, err := fileread.Read(c, a.Path, fileread.Options{
		StartLine:   a.StartLine,
		EndLine:     a.EndLine,
		LineNumbers: a.LineNumbers,
		Room:        c.Limits.OutputLimit() - note,
		Slack:       note,
		Cut:         true,
	})
	if err != nil {
		return "", err
	}
	if r.Binary || r.Cut {
		c.SelfLimited()
	}
	return r.Text, nil
}
