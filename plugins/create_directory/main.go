// Command create_directory is the create_directory tool: create a
// directory and its missing parents. A directory already there is
// success, so calling it twice is harmless.
//
// It only adds, and the host holds it to that (its manifest is
// additive), so it is low risk and creating a new directory needs no
// prompt.
package main

import (
	"fmt"

	"github.com/toolhost/toolhost/abi"
	"github.com/toolhost/toolhost/sdk"
)

type args struct {
	Path   string `json:"path"`
	DryRun bool   `json:"dry_run"`
}

const schema = `{
  "type": "object",
  "properties": {
    "path": {"type": "string", "minLength": 1, "description": "The directory to create, relative to the workspace root; missing parents are created too."},
    "dry_run": {"type": "boolean", "default": false, "description": "Say which directories would be created and create nothing."}
  },
  "required": ["path"],
  "additionalProperties": false
}`

func init() {
	sdk.Register(sdk.Tool[args]{
		Manifest: abi.Manifest{
			Name:          "create_directory",
			Version:       "1.0.0",
			Description:   "Create a directory and any missing parent directories. A directory that already exists is success.",
			Parameters:    []byte(schema),
			SideEffecting: true,
			RiskLevel:     abi.RiskLow,
			TimeoutClass:  abi.TimeoutFile,
			Additive:      true,
			Idempotent:    true,
			PathArgs:      []string{"path"},
			CreateArgs:    []string{"path"},
			Capabilities:  []abi.Capability{abi.CapFSWrite},
		},
		Summary: func(a args) (string, error) { return "Create directory " + a.Path, nil },
		Handle:  handle,
	})
}

func main() {}

func handle(_ *sdk.Call, a args) (string, error) {
	op := []abi.CommitFile{sdk.Mkdir(a.Path)}
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
		return "", fmt.Errorf("create_directory: the host reported %d directories for one", len(infos))
	}
	if infos[0].Flags&abi.WriteCreated == 0 {
		return "exists: " + infos[0].Path + " (already a directory; nothing changed)", nil
	}
	return "created: " + infos[0].Path, nil
}
