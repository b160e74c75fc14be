// Command multi_edit is the multi_edit tool: several edits, of text
// (like edit_file) or of line ranges (like edit_region), over one or many
// files the conversation read, applied in order and committed together,
// all or nothing.
package main

import (
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/toolhost/toolhost/abi"
	"github.com/toolhost/toolhost/internal/fileedit"
	"github.com/toolhost/toolhost/sdk"
	"github.com/toolhost/toolhost/textedit"
)

type args struct {
	Edits       []fileedit.Edit `json:"edits"`
	DryRun      bool            `json:"dry_run"`
	StopOnError *bool           `json:"stop_on_error"`
}

const schema = `{
  "type": "object",
  "properties": {
    "edits": {
      "type": "array", "minItems": 1, "maxItems": 200,
      "description": "The edits, applied in order; each sees the files as the edits before it left them. Each is {path, old_string, new_string, replace_all?} (as edit_file) or {path, start_line, end_line, new_content, expected?} (as edit_region).",
      "items": {
        "type": "object",
        "properties": {
          "path": {"type": "string", "minLength": 1, "description": "File path, relative to the workspace root; read it with read_file first in this conversation."},
          "old_string": {"type": "string", "description": "Text edit: the text to replace, once unless replace_all."},
          "new_string": {"type": "string", "description": "Text edit: the replacement; empty deletes."},
          "replace_all": {"type": "boolean", "description": "Text edit: replace every occurrence."},
          "start_line": {"type": "integer", "minimum": 1, "description": "Line edit: first line to replace, 1-based, counted in the file as the edits before left it."},
          "end_line": {"type": "integer", "minimum": 0, "description": "Line edit: last line, inclusive; start_line - 1 inserts before start_line."},
          "new_content": {"type": "string", "description": "Line edit: the new lines; empty deletes."},
          "expected": {"type": "string", "description": "Line edit: the lines as you expect them now; the edit fails if they differ."}
        },
        "required": ["path"],
        "additionalProperties": false
      }
    },
    "dry_run": {"type": "boolean", "default": false, "description": "Return the combined diff and each edit's outcome and write nothing."},
    "stop_on_error": {"type": "boolean", "default": true, "description": "true: any failed edit changes no file. false: write every file whose edits all succeeded, leave the others unchanged, and report each failure."}
  },
  "required": ["edits"],
  "additionalProperties": false
}`

const description = "Make several edits over one or many files read earlier in this conversation, in order, and write them together: if one fails, no file changes (unless stop_on_error is false: then the files whose edits all succeeded are written and the others left as they were). " +
	"Each edit is {path, old_string, new_string, replace_all?} like edit_file or {path, start_line, end_line, new_content, expected?} like edit_region. The result lists each edit's lines and how it matched, and the diff."

func init() {
	sdk.Register(sdk.Tool[args]{
		Manifest: abi.Manifest{
			Name:          "multi_edit",
			Version:       "1.0.0",
			Description:   description,
			Parameters:    []byte(schema),
			SideEffecting: true,
			RiskLevel:     abi.RiskMedium,
			TimeoutClass:  abi.TimeoutFile,
			PathArgs:      []string{"edits/*/path"},
			Capabilities:  []abi.Capability{abi.CapFSRead, abi.CapFSWrite},
		},
		Summary: summary,
		Handle:  handle,
	})
}

func main() {}

func summary(a args) (string, error) {
	var paths []string
	seen := map[string]bool{}
	for _, e := range a.Edits {
		if k := fileedit.Key(e.Path); !seen[k] {
			seen[k] = true
			paths = append(paths, e.Path)
		}
	}
	return fmt.Sprintf("Make %d edit(s) to %d file(s): %s", len(a.Edits), len(paths), strings.Join(paths, ", ")), nil
}

// outcome is what became of one edit.
type outcome struct {
	res     textedit.Result
	err     error
	skipped bool // an earlier edit of the same file failed
}

// target is one file the edits touch.
type target struct {
	f      *fileedit.File
	failed bool
}

func handle(c *sdk.Call, a args) (string, error) {
	stop := a.StopOnError == nil || *a.StopOnError
	for i, e := range a.Edits {
		if err := e.Check(); err != nil {
			return "", prefix(err, fmt.Sprintf("edit %d (%s): ", i+1, e.Path))
		}
	}
	files := map[string]*target{}
	var order []*target
	outcomes := make([]outcome, len(a.Edits))
	for i, e := range a.Edits {
		k := fileedit.Key(e.Path)
		t, ok := files[k]
		if !ok {
			t = &target{}
			t.f, outcomes[i].err = fileedit.Load(e.Path)
			if outcomes[i].err != nil {
				t.failed = true
			}
			files[k] = t
			order = append(order, t)
			if t.failed {
				if stop {
					return "", prefix(outcomes[i].err, fmt.Sprintf("multi_edit changed no file: edit %d (%s) failed: ", i+1, e.Path))
				}
				continue
			}
		}
		if t.failed {
			outcomes[i].skipped = true
			continue
		}
		// A failed edit leaves t.f's text as it was, but the edits of
		// this file before it stay applied in it: the file is not
		// written at all, so that does not matter.
		outcomes[i].res, outcomes[i].err = t.f.Apply(e)
		if outcomes[i].err != nil {
			t.failed = true
			if stop {
				return "", prefix(outcomes[i].err, fmt.Sprintf("multi_edit changed no file: edit %d failed: ", i+1))
			}
		}
	}
	var commit []abi.CommitFile
	var written []*fileedit.File
	for _, t := range order {
		if !t.failed && t.f.Changed() {
			commit = append(commit, t.f.Commit())
			written = append(written, t.f)
		}
	}
	applied, failed := 0, 0
	for i, o := range outcomes {
		switch {
		case o.err != nil:
			failed++
		case !o.skipped && !files[fileedit.Key(a.Edits[i].Path)].failed:
			applied++
		}
	}
	if len(commit) == 0 && failed > 0 {
		return "", sdk.Failed("multi_edit changed no file: every file had a failed edit\n%s", report(a, outcomes, files))
	}
	var diff string
	var err error
	switch {
	case len(commit) == 0:
	case a.DryRun:
		if diff, err = sdk.CommitDiff(commit); err != nil {
			return "", err
		}
	default:
		if _, err = sdk.Commit(commit); err != nil {
			return "", err
		}
		var b strings.Builder
		for _, f := range written {
			b.WriteString(f.Diff())
		}
		diff = b.String()
	}
	head := fmt.Sprintf("%d of %d edits applied; %d file(s) written", applied, len(a.Edits), len(commit))
	if a.DryRun {
		head = fmt.Sprintf("dry run, nothing was written: %d of %d edits would apply to %d file(s)", applied, len(a.Edits), len(commit))
	}
	if failed > 0 {
		head += fmt.Sprintf("; %d failed, and the files they were for are unchanged", failed)
	}
	c.SetStructured(structured(a, outcomes, files, diff))
	return head + "\n" + report(a, outcomes, files) + "\n" + diff, nil
}

// report is a line per edit: applied, where and how, or why not.
func report(a args, outcomes []outcome, files map[string]*target) string {
	var b strings.Builder
	for i, o := range outcomes {
		e := a.Edits[i]
		fmt.Fprintf(&b, "%d. %s: ", i+1, e.Path)
		switch {
		case o.skipped:
			b.WriteString("not tried: an earlier edit of this file failed, so the file is left unchanged")
		case o.err != nil:
			b.WriteString("failed: " + message(o.err))
		case files[fileedit.Key(e.Path)].failed:
			b.WriteString("matched, but not written: a later edit of this file failed, so the file is left unchanged")
		case e.OldString != nil:
			fmt.Fprintf(&b, "applied at %s (%d replacement(s), %s)", fileedit.Lines(o.res.Start, o.res.End), o.res.Replacements, o.res.Layer.Phrase())
		default:
			fmt.Fprintf(&b, "applied, the new lines at %s", fileedit.Lines(o.res.Start, o.res.End))
		}
		if o.err == nil && !o.skipped && o.res.BOM {
			b.WriteString("; " + fileedit.BOMNote)
		}
		b.WriteByte('\n')
	}
	return strings.TrimSuffix(b.String(), "\n")
}

// structured is the call's JSON result: {edits: [{path, applied,
// replacements?, lines?, layer?, error?}], dry_run, diff}; applied is
// whether the edit is in the files written.
func structured(a args, outcomes []outcome, files map[string]*target, diff string) []byte {
	b := []byte(`{"edits":[`)
	for i, o := range outcomes {
		if i > 0 {
			b = append(b, ',')
		}
		e := a.Edits[i]
		b = append(b, `{"path":`...)
		b = sdk.AppendJSONString(b, e.Path)
		ok := o.err == nil && !o.skipped && !files[fileedit.Key(e.Path)].failed
		if o.err == nil && !o.skipped {
			b = append(b, `,"replacements":`...)
			b = strconv.AppendInt(b, int64(o.res.Replacements), 10)
			b = append(b, `,"lines":[`...)
			b = strconv.AppendInt(b, int64(o.res.Start), 10)
			b = append(b, ',')
			b = strconv.AppendInt(b, int64(max(o.res.End, o.res.Start)), 10)
			b = append(b, `],"layer":`...)
			b = sdk.AppendJSONString(b, fileedit.Layer(o.res))
		}
		b = append(b, `,"applied":`...)
		b = strconv.AppendBool(b, ok)
		switch {
		case o.skipped:
			b = append(b, `,"error":"not tried: an earlier edit of this file failed"`...)
		case o.err != nil:
			b = append(b, `,"error":`...)
			b = sdk.AppendJSONString(b, message(o.err))
		}
		b = append(b, '}')
	}
	b = append(b, `],"dry_run":`...)
	b = strconv.AppendBool(b, a.DryRun)
	b = append(b, `,"diff":`...)
	b = sdk.AppendJSONString(b, diff)
	return append(b, '}')
}

// message is an error's text without the kind the sdk puts in front.
func message(err error) string {
	var se *sdk.Error
	if errors.As(err, &se) {
		return se.Message
	}
	return err.Error()
}

// prefix puts p before err's message, keeping its kind: a host's
// StaleFile stays StaleFile.
func prefix(err error, p string) error {
	var se *sdk.Error
	if errors.As(err, &se) {
		return &sdk.Error{Kind: se.Kind, Message: p + se.Message, Details: se.Details}
	}
	var he *sdk.HostError
	if errors.As(err, &he) {
		h := *he
		h.Message = p + h.Message
		return &h
	}
	return fmt.Errorf("%s%w", p, err)
}
