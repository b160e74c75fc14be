// Command delete_file is the delete_file tool: remove a file, a symbolic
// link (the link itself, never what it leads to) or, with recursive, a
// directory and everything below it.
//
// The host does the removal (an fs_commit operation): it refuses a tree
// holding anything no tool may write, journals everything removed so
// that toolhost undo can restore it, and describes the removal for the
// approval prompt.
package main

import (
	"fmt"

	"github.com/toolhost/toolhost/abi"
	"github.com/toolhost/toolhost/sdk"
)

type args struct {
	Path      string `json:"path"`
	Recursive bool   `json:"recursive"`
	DryRun    bool   `json:"dry_run"`
}

const schema = `{
  "type": "object",
  "properties": {
    "path": {"type": "string", "minLength": 1, "description": "The file, symbolic link or directory to delete, relative to the workspace root. A link is removed itself, never what it points to."},
    "recursive": {"type": "boolean", "default": false, "description": "Delete a directory and everything below it. Without it a directory is refused."},
    "dry_run": {"type": "boolean", "default": false, "description": "Describe what would be deleted (size, lines and first lines of a file; files and bytes of a directory) and delete nothing."}
  },
  "required": ["path"],
  "additionalProperties": false
}`

func init() {
	sdk.Register(sdk.Tool[args]{
		Manifest: abi.Manifest{
			Name:    "delete_file",
			Version: "1.0.0",
			Description: "Delete a file or symbolic link, or with recursive a directory and everything below it. " +
				"Needs no earlier read; a person is asked first. toolhost undo restores what was deleted. dry_run describes the deletion and deletes nothing.",
			Parameters: []byte(schema),
			// Deleting loses data if the journal cannot keep it: always
			// asked, high risk.
			SideEffecting:    true,
			RequiresApproval: true,
			RiskLevel:        abi.RiskHigh,
			TimeoutClass:     abi.TimeoutFile,
			PathArgs:         []string{"path"},
			Capabilities:     []abi.Capability{abi.CapFSDelete},
		},
		Summary: func(a args) (string, error) {
			if a.Recursive {
				return "Delete " + a.Path + " and, if it is a directory, everything below it", nil
			}
			return "Delete " + a.Path, nil
		},
		Handle: handle,
	})
}

func main() {}

func handle(_ *sdk.Call, a args) (string, error) {
	op := []abi.CommitFile{sdk.Remove(a.Path, a.Recursive)}
	if a.DryRun {
		desc, err := sdk.CommitDiff(op)
		if err != nil {
			return "", err
		}
		return "dry run: nothing was written\n" + desc, nil
	}
	infos, err := sdk.Commit(op)
	if err != nil {
		return "", err
	}
	if len(infos) != 1 {
		return "", fmt.Errorf("delete_file: the host reported %d removals for one", len(infos))
	}
	return fmt.Sprintf("deleted: %s (%d bytes); toolhost undo restores it", infos[0].Path, infos[0].Size), nil
}
