// Command edit_file is the edit_file tool: replace a string in a file the
// conversation read, found exactly or through the normalizations models
// need (line endings, trailing whitespace, indentation, line-number
// prefixes, typographic punctuation; package textedit), writing back
// only what changed.
package main

import (
	"github.com/toolhost/toolhost/abi"
	"github.com/toolhost/toolhost/internal/fileedit"
	"github.com/toolhost/toolhost/sdk"
)

type args struct {
	Path       string `json:"path"`
	OldString  string `json:"old_string"`
	NewString  string `json:"new_string"`
	ReplaceAll bool   `json:"replace_all"`
	DryRun     bool   `json:"dry_run"`
}

const schema = `{
  "type": "object",
  "properties": {
    "path": {"type": "string", "minLength": 1, "description": "File path, relative to the workspace root. Read the file with read_file first in this conversation."},
    "old_string": {"type": "string", "description": "The text to replace, copied from the file. It must occur once unless replace_all; include lines around it to make it unique. Line endings, trailing whitespace, indentation, read_file's line-number prefixes and curly quotes are forgiven, in that order, when the exact text is not found."},
    "new_string": {"type": "string", "description": "The replacement text; empty deletes old_string."},
    "replace_all": {"type": "boolean", "default": false, "description": "Replace every occurrence instead of requiring exactly one."},
    "dry_run": {"type": "boolean", "default": false, "description": "Return the unified diff of the edit and write nothing."}
  },
  "required": ["path", "old_string", "new_string"],
  "additionalProperties": false
}`

const description = "Replace old_string with new_string in a file read earlier in this conversation, writing back only what changed (line endings, byte order mark and final newline kept). " +
	"old_string must occur exactly once unless replace_all. The result says which lines changed and shows the diff; on failure it shows the closest lines with tabs, carriage returns and trailing spaces made visible. " +
	"To create a file use write_file; to replace lines by number use edit_region; for several edits at once use multi_edit."

func init() {
	sdk.Register(sdk.Tool[args]{
		Manifest: abi.Manifest{
			Name:          "edit_file",
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
			if a.ReplaceAll {
				return "Edit " + a.Path + " (replace every occurrence)", nil
			}
			return "Edit " + a.Path, nil
		},
		Handle: handle,
	})
}

func main() {}

func handle(c *sdk.Call, a args) (string, error) {
	e := fileedit.Edit{Path: a.Path, OldString: &a.OldString, NewString: &a.NewString, ReplaceAll: a.ReplaceAll}
	if err := e.Check(); err != nil {
		return "", err
	}
	return fileedit.Run(c, e, a.DryRun, "written in the file's line endings and indentation, new_string is what was there; the file is unchanged")
}
