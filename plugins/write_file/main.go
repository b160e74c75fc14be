// Command write_file is the write_file tool: create or replace a file
// atomically. Replacing an existing file requires that the conversation read
// it and that it has not changed since (checked by the host).
package main

import (
	"fmt"

	"github.com/toolhost/toolhost/abi"
	"github.com/toolhost/toolhost/sdk"
)

type args struct {
	Path       string `json:"path"`
	Content    string `json:"content"`
	CreateDirs *bool  `json:"create_dirs"`
	DryRun     bool   `json:"dry_run"`
}

const schema = `{
  "type": "object",
  "properties": {
    "path": {"type": "string", "minLength": 1, "description": "File path, relative to the workspace root."},
    "content": {"type": "string", "description": "The complete new content of the file."},
    "create_dirs": {"type": "boolean", "default": true, "description": "Create missing parent directories."},
    "dry_run": {"type": "boolean", "default": false, "description": "Return a unified diff of the change and write nothing."}
  },
  "required": ["path", "content"],
  "additionalProperties": false
}`

func init() {
	sdk.Register(sdk.Tool[args]{
		Manifest: abi.Manifest{
			Name:          "write_file",
			Version:       "1.0.0",
			Description:   "Create a file or replace its whole content, atomically. To replace an existing file, read it with read_file first in this conversation. dry_run returns a unified diff and writes nothing.",
			Parameters:    []byte(schema),
			SideEffecting: true,
			RiskLevel:     abi.RiskMedium,
			TimeoutClass:  abi.TimeoutFile,
			PathArgs:      []string{"path"},
			CreateArgs:    []string{"path"},
			Capabilities:  []abi.Capability{abi.CapFSWrite},
		},
		Summary: func(a args) (string, error) {
			return fmt.Sprintf("Write %d bytes to %s", len(a.Content), a.Path), nil
		},
		Handle: handle,
	})
}

func main() {}

func handle(_ *sdk.Call, a args) (string, error) {
	content := []byte(a.Content)
	if a.DryRun {
		diff, err := sdk.Diff(a.Path, content)
		if err != nil {
			return "", err
		}
		if diff == "" {
			return "dry run: " + a.Path + " already has this content; nothing would change", nil
		}
		return "dry run: nothing was written\n" + diff, nil
	}
	var flags uint32
	if a.CreateDirs == nil || *a.CreateDirs {
		flags |= abi.WriteCreateDirs
	}
	info, err := sdk.Write(a.Path, content, flags)
	if err != nil {
		return "", err
	}
	verb := "modified"
	if info.Flags&abi.WriteCreated != 0 {
		verb = "created"
	}
	return fmt.Sprintf("%s: %s (%d bytes)", verb, info.Path, info.Size), nil
}
