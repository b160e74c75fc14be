// Command edit_region is the edit_region tool: replace, insert or delete
// whole lines of a file the conversation read, by line number, writing
// back only what changed (package textedit).
package main

import (
	"github.com/toolhost/toolhost/abi"
	"github.com/toolhost/toolhost/internal/fileedit"
	"github.com/toolhost/toolhost/sdk"
)

type args struct {
	Path       string  `json:"path"`
	StartLine  int     `json:"start_line"`
	EndLine    int     `json:"end_line"`
	NewContent string  `json:"new_content"`
	Expected   *string `json:"expected"`
	DryRun     bool    `json:"dry_run"`
}

const schema = `{
  "type": "object",
  "properties": {
    "path": {"type": "string", "minLength": 1, "description": "File path, relative to the workspace root. Read the file with read_file first in this conversation."},
    "start_line": {"type": "integer", "minimum": 1, "description": "First line to replace, 1-based."},
    "end_line": {"type": "integer", "minimum": 0, "description": "Last line to replace, inclusive; start_line - 1 inserts new_content before start_line without replacing anything."},
    "new_content": {"type": "string", "description": "The lines to put there, whole lines (a final line break is added if missing); empty deletes the lines."},
    "expected": {"type": "string", "description": "The lines start_line..end_line as you expect them now; if they differ (line endings aside) nothing changes and the result shows the difference."},
    "dry_run": {"type": "boolean", "default": false, "description": "Return the unified diff of the edit and write nothing."}
  },
  "required": ["path", "start_line", "end_line", "new_content"],
  "additionalProperties": false
}`

const description = "Replace lines start_line..end_line (1-based, inclusive) of a file read earlier in this conversation with new_content; end_line = start_line - 1 inserts before start_line, empty new_content deletes. " +
	"new_content is written in the file's line-ending style; the byte order mark and final newline are kept. Give expected (the current lines) to make sure the lines are the ones you mean. " +
	"read_file with line_numbers shows the numbers. The result shows the diff."

func init() {
	sdk.Register(sdk.Tool[args]{
		Manifest: abi.Manifest{
			Name:          "edit_region",
			Version:       "1.0.0",
			Description:   description,
			Parameters:    []byte(schema),
			SideEffecting: true,
			RiskLevel:     abi.RiskMedium,
			TimeoutClass:  abi.TimeoutFile,
			PathArgs:      []string{"path"},
			Capabilities:  []abi.Capability{abi.CapFSRead, abi.CapFSWrite},
		},
		Summary: func(a args) (string, error) {
			if a.EndLine < a.StartLine {
				return "Insert lines into " + a.Path + " before " + fileedit.Lines(a.StartLine, a.StartLine), nil
			}
			return "Replace " + fileedit.Lines(a.StartLine, a.EndLine) + " of " + a.Path, nil
		},
		Handle: handle,
	})
}

func main() {}

func handle(c *sdk.Call, a args) (string, error) {
	e := fileedit.Edit{Path: a.Path, StartLine: &a.StartLine, EndLine: &a.EndLine, NewContent: &a.NewContent, Expected: a.Expected}
	return fileedit.Run(c, e, a.DryRun, "the lines already were new_content; the file is unchanged")
}
