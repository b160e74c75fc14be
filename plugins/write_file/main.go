// Command write_file is the write_file tool: create or replace a file
// atomically, or append to it. Replacing or appending to an existing file
// requires that the conversation read it and that it has not changed since
// (checked by the host).
package main

import (
	"errors"
	"fmt"

	"github.com/toolhost/toolhost/abi"
	"github.com/toolhost/toolhost/sdk"
)

type args struct {
	Path            string `json:"path"`
	Content         string `json:"content"`
	CreateDirs      *bool  `json:"create_dirs"`
	Append          bool   `json:"append"`
	CreateIfMissing *bool  `json:"create_if_missing"`
	DryRun          bool   `json:"dry_run"`
}

const schema = `{
  "type": "object",
  "properties": {
    "path": {"type": "string", "minLength": 1, "description": "File path, relative to the workspace root."},
    "content": {"type": "string", "description": "The complete new content of the file; with append, the text to add at its end."},
    "create_dirs": {"type": "boolean", "default": true, "description": "Create missing parent directories."},
    "append": {"type": "boolean", "default": false, "description": "Add content at the end of the file instead of replacing it; nothing is added between, so end the file's last line first if it needs one. The file must have been read in this conversation, like any overwrite."},
    "create_if_missing": {"type": "boolean", "default": true, "description": "Create the file when it does not exist; false refuses a missing file instead."},
    "dry_run": {"type": "boolean", "default": false, "description": "Return a unified diff of the change and write nothing."}
  },
  "required": ["path", "content"],
  "additionalProperties": false
}`

func init() {
	sdk.Register(sdk.Tool[args]{
		Manifest: abi.Manifest{
			Name:          "write_file",
			Version:       "1.1.0",
			Description:   "Create a file or replace its whole content, atomically; append adds content at its end instead. To replace or append to an existing file, read it with read_file first in this conversation. create_if_missing false refuses a file that does not exist. dry_run returns a unified diff and writes nothing.",
			Parameters:    []byte(schema),
			SideEffecting: true,
			RiskLevel:     abi.RiskMedium,
			TimeoutClass:  abi.TimeoutFile,
			PathArgs:      []string{"path"},
			CreateArgs:    []string{"path"},
			Capabilities:  []abi.Capability{abi.CapFSRead, abi.CapFSWrite},
		},
		Summary: func(a args) (string, error) {
			if a.Append {
				return fmt.Sprintf("Append %d bytes to %s", len(a.Content), a.Path), nil
			}
			return fmt.Sprintf("Write %d bytes to %s", len(a.Content), a.Path), nil
		},
		Handle: handle,
	})
}

func main() {}

func handle(_ *sdk.Call, a args) (string, error) {
	exists, err := exists(a.Path)
	if err != nil {
		return "", err
	}
	if !exists && a.CreateIfMissing != nil && !*a.CreateIfMissing {
		return "", sdk.Failed("%s does not exist and create_if_missing is false, so nothing was written; check the path (list_directory shows what is there), or leave create_if_missing out to create it", a.Path)
	}
	if a.Append && exists {
		return appendTo(a)
	}
	return write(a)
}

// exists reports whether something is at path; only a missing file is
// not an error.
func exists(path string) (bool, error) {
	_, err := sdk.Stat(path)
	var he *sdk.HostError
	switch {
	case err == nil:
		return true, nil
	case errors.As(err, &he) && he.Status == abi.StatusNotFound:
		return false, nil
	}
	return false, err
}

// write creates path or replaces it whole.
func write(a args) (string, error) {
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
	switch {
	case info.Flags&abi.WriteCreated == 0:
		return fmt.Sprintf("modified: %s (%d bytes)", info.Path, info.Size), nil
	case a.Append:
		return fmt.Sprintf("created: %s (%d bytes; there was no file to append to)", info.Path, info.Size), nil
	}
	return fmt.Sprintf("created: %s (%d bytes)", info.Path, info.Size), nil
}

// appendTo adds content at the end of an existing file. The file is read
// for update, so the host refuses (StaleFile) a file this conversation did
// not read or that changed since, as for any overwrite, and the commit
// replaces exactly the bytes that were read plus the new ones.
func appendTo(a args) (string, error) {
	_, old, err := sdk.Read(a.Path, 0, -1, abi.ReadForUpdate)
	if err != nil {
		return "", err
	}
	if a.Content == "" {
		return "nothing to append: content is empty; " + a.Path + " is unchanged", nil
	}
	data := make([]byte, 0, len(old)+len(a.Content))
	data = append(append(data, old...), a.Content...)
	files := []abi.CommitFile{{Path: a.Path, Data: data}}
	if a.DryRun {
		diff, err := sdk.CommitDiff(files)
		if err != nil {
			return "", err
		}
		return "dry run: nothing was written\n" + diff, nil
	}
	infos, err := sdk.Commit(files)
	if err != nil {
		return "", err
	}
	path := a.Path
	if len(infos) == 1 {
		path = infos[0].Path
	}
	return fmt.Sprintf("appended: %s (%d bytes added, %d in all)", path, len(a.Content), len(data)), nil
}
