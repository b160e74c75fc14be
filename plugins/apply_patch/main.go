// Command apply_patch is the apply_patch tool: apply an LP1 patch to one
// or more files, all or nothing (SRD 3.6.9).
//
// The plugin parses and applies the patch; the host supplies each file's
// content only if the conversation read it and it is unchanged, and
// commits every changed file in one transaction.
package main

import (
	"errors"
	"fmt"
	"path"
	"strconv"
	"strings"
	"unsafe"

	"github.com/toolhost/toolhost/abi"
	"github.com/toolhost/toolhost/lp1"
	"github.com/toolhost/toolhost/sdk"
)

type args struct {
	Patch  string `json:"patch"`
	DryRun bool   `json:"dry_run"`
}

const schema = `{
  "type": "object",
  "properties": {
    "patch": {"type": "string", "minLength": 1, "description": "An LP1 patch: a line LP1, then for each file a line 'F <path>' followed by operations, then a line END. Operations: 'R' find-block replace-block, 'I' find-block insert-after-block, 'P' find-block insert-before-block, 'E' find-block (delete), 'T' block (append), 'B' block (prepend), 'N +' / 'N -' (add / remove the final newline). A block is lines ending with a line holding only '.'; a content line starting with '.' gets an extra '.'. A find block must match whole lines exactly once, or give an occurrence number: 'R 2'. T or B on a missing file creates it."},
    "dry_run": {"type": "boolean", "default": false, "description": "Return unified diffs of the changes and write nothing."}
  },
  "required": ["patch"],
  "additionalProperties": false
}`

const description = "Edit files with an LP1 patch, all or nothing: if any operation on any file fails, no file changes. " +
	"Every existing file must have been read with read_file in this conversation and be unchanged since. " +
	"Example: LP1\\nF src/a.go\\nR\\nold line\\n.\\nnew line\\n.\\nEND"

func init() {
	sdk.Register(sdk.Tool[args]{
		Manifest: abi.Manifest{
			Name:          "apply_patch",
			Version:       "1.0.0",
			Description:   description,
			Parameters:    []byte(schema),
			SideEffecting: true,
			RiskLevel:     abi.RiskMedium,
			TimeoutClass:  abi.TimeoutFile,
			// The files it writes are named in the patch, not by an argument.
			WritesUnnamedPaths: true,
			Capabilities:       []abi.Capability{abi.CapFSRead, abi.CapFSWrite},
		},
		Summary: summary,
		Handle:  handle,
	})
}

func main() {}

// summary is the approval text of SRD 3.4: "Apply patch to <n> file(s):
// <file1>, <file2>...".
func summary(a args) (string, error) {
	p, err := lp1.Parse(a.Patch)
	if err != nil {
		return "", patchFailed("", err)
	}
	paths := p.Paths()
	return fmt.Sprintf("Apply patch to %d file(s): %s", len(paths), strings.Join(paths, ", ")), nil
}

func handle(c *sdk.Call, a args) (string, error) {
	if limit := c.Limits.MaxPatchBytes; limit > 0 && int64(len(a.Patch)) > limit {
		return "", sdk.BadArgs("patch is %d bytes, more than max_patch_bytes (%d); split the change into several smaller patches", len(a.Patch), limit)
	}
	p, err := lp1.Parse(a.Patch)
	if err != nil {
		return "", patchFailed("", err)
	}
	w := &workspace{byKey: map[string]*file{}}
	if err := lp1.Apply(p, w.load); err != nil {
		var ae *lp1.ApplyError
		if errors.As(err, &ae) {
			return "", patchFailed(ae.Path, err)
		}
		return "", err
	}
	changes := w.changes()
	if len(changes) == 0 {
		return "No changes applied.", nil
	}
	if a.DryRun {
		diff, err := sdk.CommitDiff(changes)
		if err != nil {
			return "", err
		}
		return "dry run: nothing was written\n" + diff, nil
	}
	infos, err := sdk.Commit(changes)
	if err != nil {
		return "", err
	}
	var out strings.Builder
	for _, info := range infos {
		verb := "modified"
		if info.Flags&abi.WriteCreated != 0 {
			verb = "created"
		}
		out.WriteString(verb + ": " + info.Path + "\n")
	}
	return strings.TrimSuffix(out.String(), "\n"), nil
}

// file is one file the patch touches, however many spellings name it.
type file struct {
	target   lp1.Target
	original string
	existed  bool
}

// workspace loads each file once, keyed by the host's display path, so
// "a.txt" and "./a.txt" edit the same content.
type workspace struct {
	byKey map[string]*file
	order []*file
}

func (w *workspace) load(name string) (*lp1.Target, error) {
	key, exists, err := identify(name)
	if err != nil {
		return nil, err
	}
	if f, ok := w.byKey[key]; ok {
		return &f.target, nil
	}
	f := &file{target: lp1.Target{Path: name}, existed: exists}
	if exists {
		info, data, err := sdk.Read(name, 0, -1, abi.ReadForUpdate)
		if err != nil {
			return nil, err
		}
		if info.Flags&abi.ReadIsBinary != 0 {
			return nil, patchFailed(name, errors.New("binary file (NUL bytes or invalid UTF-8); LP1 patches text files only"))
		}
		// data is never written again, so the string may share it: a copy
		// of a large file costs a millisecond in WebAssembly.
		f.original = unsafe.String(unsafe.SliceData(data), len(data))
		if f.target.File, err = lp1.ParseFile(f.original); err != nil {
			return nil, patchFailed(name, err)
		}
	}
	w.byKey[key] = f
	w.order = append(w.order, f)
	return &f.target, nil
}

// identify names a file the way the host displays it; a file that does not
// exist yet is named by its cleaned path.
func identify(name string) (key string, exists bool, err error) {
	info, err := sdk.Stat(name)
	var he *sdk.HostError
	switch {
	case errors.As(err, &he) && he.Status == abi.StatusNotFound:
		return "new:" + path.Clean(name), false, nil
	case err != nil:
		return "", false, err
	case info.Type == abi.TypeDir:
		return "", false, patchFailed(name, errors.New("is a directory; F lines name files"))
	}
	return info.Path, true, nil
}

// changes lists the files whose content the patch changed, in the order
// the patch first named them.
func (w *workspace) changes() []abi.CommitFile {
	var files []abi.CommitFile
	for _, f := range w.order {
		if f.target.File == nil {
			continue
		}
		content := f.target.File.Bytes()
		if f.existed && string(content) == f.original {
			continue
		}
		cf := abi.CommitFile{Path: f.target.Path, Data: content}
		if !f.existed {
			cf.Flags = abi.CommitNew | abi.CommitCreateDirs
		}
		files = append(files, cf)
	}
	return files
}

// patchFailed is SRD's PatchFailed { file, message }.
func patchFailed(file string, err error) error {
	msg := err.Error()
	if file != "" && !strings.Contains(msg, file) {
		msg = file + ": " + msg
	}
	msg += "; no file was changed"
	details := []byte(`{"file":`)
	details = sdk.AppendJSONString(details, file)
	var se *lp1.SyntaxError
	var ae *lp1.ApplyError
	switch {
	case errors.As(err, &se):
		details = append(details, `,"patch_line":`...)
		details = strconv.AppendInt(details, int64(se.Line), 10)
	case errors.As(err, &ae):
		details = append(details, `,"section":`...)
		details = strconv.AppendInt(details, int64(ae.Section), 10)
		details = append(details, `,"operation":`...)
		details = strconv.AppendInt(details, int64(ae.Op), 10)
		details = append(details, `,"patch_line":`...)
		details = strconv.AppendInt(details, int64(ae.Line), 10)
	}
	details = append(details, '}')
	return &sdk.Error{Kind: abi.KindPatchFailed, Message: msg, Details: details}
}
