// Command move_file is the move_file tool: move or rename a file,
// symbolic link or directory within the workspace's roots, across roots
// and file systems too.
//
// The host does the move (an fs_commit operation), all or nothing: it
// refuses to carry anything into or out of a place no tool may write,
// creates the destination's missing parents, and journals both ends so
// that toolhost undo moves it back.
package main

import (
	"fmt"

	"github.com/toolhost/toolhost/abi"
	"github.com/toolhost/toolhost/sdk"
)

type args struct {
	Source      string `json:"source"`
	Destination string `json:"destination"`
	Overwrite   bool   `json:"overwrite"`
	DryRun      bool   `json:"dry_run"`
}

const schema = `{
  "type": "object",
  "properties": {
    "source": {"type": "string", "minLength": 1, "description": "The file, symbolic link or directory to move, relative to the workspace root."},
    "destination": {"type": "string", "minLength": 1, "description": "Where it goes: its new path, not the directory to put it in. Missing parent directories are created."},
    "overwrite": {"type": "boolean", "default": false, "description": "Replace an existing destination file; it must have been read with read_file in this conversation and be unchanged."},
    "dry_run": {"type": "boolean", "default": false, "description": "Describe the move and change nothing."}
  },
  "required": ["source", "destination"],
  "additionalProperties": false
}`

func init() {
	sdk.Register(sdk.Tool[args]{
		Manifest: abi.Manifest{
			Name:    "move_file",
			Version: "1.0.0",
			Description: "Move or rename a file, symbolic link or directory; the destination is the new path. " +
				"An existing destination is refused unless overwrite (then read it first). Needs no earlier read of the source; a person is asked first. toolhost undo moves it back.",
			Parameters: []byte(schema),
			// Medium, not high: a move loses no content (what it
			// replaces must have been read, and the journal keeps both
			// ends), but every reference to the old path breaks, so a
			// person is always asked.
			SideEffecting:    true,
			RequiresApproval: true,
			RiskLevel:        abi.RiskMedium,
			TimeoutClass:     abi.TimeoutFile,
			PathArgs:         []string{"source", "destination"},
			Capabilities:     []abi.Capability{abi.CapFSDelete},
		},
		Summary: func(a args) (string, error) {
			if a.Overwrite {
				return "Move " + a.Source + " to " + a.Destination + ", replacing what is there", nil
			}
			return "Move " + a.Source + " to " + a.Destination, nil
		},
		Handle: handle,
	})
}

func main() {}

func handle(_ *sdk.Call, a args) (string, error) {
	op := []abi.CommitFile{sdk.Move(a.Source, a.Destination, a.Overwrite)}
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
		return "", fmt.Errorf("move_file: the host reported %d moves for one", len(infos))
	}
	return fmt.Sprintf("moved: %s -> %s (%d bytes)", a.Source, infos[0].Path, infos[0].Size), nil
}
