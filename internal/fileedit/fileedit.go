// Package fileedit is what the editing tools (edit_file, edit_region,
// multi_edit) share inside the plugin: loading a file for update, one
// edit of either shape applied through package textedit, and the result
// they report, as a sentence, a diff and a JSON object.
package fileedit

import (
	"errors"
	"fmt"
	"path"
	"strconv"
	"unsafe"

	"github.com/toolhost/toolhost/abi"
	"github.com/toolhost/toolhost/sdk"
	"github.com/toolhost/toolhost/textedit"
)

// Edit is one edit of either shape: text (OldString, NewString,
// ReplaceAll) or a line range (StartLine, EndLine, NewContent, Expected).
type Edit struct {
	Path       string  `json:"path"`
	OldString  *string `json:"old_string"`
	NewString  *string `json:"new_string"`
	ReplaceAll bool    `json:"replace_all"`
	StartLine  *int    `json:"start_line"`
	EndLine    *int    `json:"end_line"`
	NewContent *string `json:"new_content"`
	Expected   *string `json:"expected"`
}

// Check rejects an edit whose shape is neither, or both, before any file
// is read; old_string empty or equal to new_string too, since no file
// could make those work.
func (e Edit) Check() error {
	text := e.OldString != nil || e.NewString != nil || e.ReplaceAll
	region := e.StartLine != nil || e.EndLine != nil || e.NewContent != nil || e.Expected != nil
	switch {
	case text && region:
		return sdk.BadArgs("an edit is either {path, old_string, new_string, replace_all?} or {path, start_line, end_line, new_content, expected?}, not a mix of both; split it in two")
	case text && (e.OldString == nil || e.NewString == nil):
		return sdk.BadArgs("a text edit needs both old_string and new_string (new_string \"\" deletes old_string)")
	case region && (e.StartLine == nil || e.EndLine == nil || e.NewContent == nil):
		return sdk.BadArgs("a line edit needs start_line, end_line and new_content (new_content \"\" deletes the lines; end_line = start_line-1 inserts before start_line)")
	case !text && !region:
		return sdk.BadArgs("an edit needs old_string and new_string, or start_line, end_line and new_content")
	case text && *e.OldString == "":
		return sdk.Failed("old_string is empty, and an edit needs text to find; to create a file or replace its whole content, use write_file")
	case text && *e.OldString == *e.NewString:
		return sdk.Failed("old_string and new_string are the same, so there is nothing to do; the file is unchanged")
	}
	return nil
}

// File is a file being edited: its content when loaded and now.
type File struct {
	Path string // as the first edit named it
	Text *textedit.File
}

// Load reads path for update (the host refuses, StaleFile, a file this
// conversation did not read or that changed since) and parses it as UTF-8
// text.
func Load(p string) (*File, error) {
	info, data, err := sdk.Read(p, 0, -1, abi.ReadForUpdate)
	if err != nil {
		return nil, err
	}
	// data is never written to, so the strings may share it: a copy of
	// a large file costs a millisecond in WebAssembly.
	original := unsafe.String(unsafe.SliceData(data), len(data))
	t, err := textedit.ParseString(original)
	if err != nil {
		return nil, sdk.Failed("%s: %v", p, err)
	}
	if info.Flags&abi.ReadIsBinary != 0 {
		return nil, sdk.Failed("%s is binary (a NUL byte, or bytes that are not UTF-8); the editing tools change text files only, so nothing was changed; use write_file to replace it whole", p)
	}
	return &File{Path: p, Text: t}, nil
}

// Changed reports whether the file's content differs from what was read.
func (f *File) Changed() bool { return f.Text.Modified() }

// Commit is the commit operation that writes the file's content now.
func (f *File) Commit() abi.CommitFile {
	if f.Text.HasBOM() {
		return abi.CommitFile{Path: f.Path, Data: f.Text.Bytes()}
	}
	// The commit request copies Data, and nothing writes to it, so it
	// may share the text's bytes.
	text := f.Text.Content()
	return abi.CommitFile{Path: f.Path, Data: unsafe.Slice(unsafe.StringData(text), len(text))}
}

// Diff is the unified diff from the content read to the content now,
// without a byte order mark either side (the edit keeps it).
func (f *File) Diff() string { return f.Text.Diff(f.Path) }

// Apply makes one edit. A *textedit.Error becomes an ExecutionFailed
// error naming the path; the file is then unchanged.
func (f *File) Apply(e Edit) (textedit.Result, error) {
	var res textedit.Result
	var err error
	if e.OldString != nil {
		res, err = f.Text.Replace(*e.OldString, *e.NewString, e.ReplaceAll)
	} else {
		res, err = f.Text.ReplaceLines(*e.StartLine, *e.EndLine, *e.NewContent, e.Expected)
	}
	var te *textedit.Error
	if errors.As(err, &te) {
		return res, sdk.Failed("%s: %s", e.Path, te.Msg)
	}
	return res, err
}

// Key identifies a file however an edit spells its path ("a.go",
// "./a.go").
func Key(p string) string { return path.Clean(p) }

// Lines is "line 12" or "lines 12–14".
func Lines(start, end int) string {
	if end <= start {
		return "line " + strconv.Itoa(start)
	}
	return fmt.Sprintf("lines %d–%d", start, end)
}

// Layer names how an edit matched in structured results: a
// textedit.Layer's name, or "region" for a line edit.
func Layer(res textedit.Result) string {
	if res.Layer == 0 {
		return "region"
	}
	return res.Layer.Name()
}

// Sentence is the one line that says what an edit of path did.
func Sentence(p string, e Edit, res textedit.Result) string {
	s := sentence(p, e, res)
	if res.BOM {
		s += "; " + BOMNote
	}
	return s
}

// BOMNote says that an edit took a leading U+FEFF as the file's byte
// order mark (textedit.Result.BOM).
const BOMNote = "the U+FEFF at the start was taken as the file's byte order mark, which it keeps once (to remove the mark, rewrite the file with write_file)"

func sentence(p string, e Edit, res textedit.Result) string {
	if e.OldString == nil {
		switch {
		case *e.NewContent == "":
			return fmt.Sprintf("edited %s: removed %s", p, Lines(*e.StartLine, *e.EndLine))
		case *e.EndLine < *e.StartLine:
			return fmt.Sprintf("edited %s: inserted text now at %s", p, Lines(res.Start, res.End))
		}
		return fmt.Sprintf("edited %s: replaced %s, the new text now at %s", p, Lines(*e.StartLine, *e.EndLine), Lines(res.Start, res.End))
	}
	n := "1 replacement"
	if res.Replacements != 1 {
		n = strconv.Itoa(res.Replacements) + " replacements"
	}
	return fmt.Sprintf("edited %s: %s at %s, %s", p, n, Lines(res.Start, res.End), res.Layer.Phrase())
}

// AppendResult appends the JSON object of one edit's result:
// {path, replacements, lines: [start, end], layer, diff}.
func AppendResult(b []byte, p string, res textedit.Result, diff string) []byte {
	b = append(b, `{"path":`...)
	b = sdk.AppendJSONString(b, p)
	b = append(b, `,"replacements":`...)
	b = strconv.AppendInt(b, int64(res.Replacements), 10)
	b = append(b, `,"lines":[`...)
	b = strconv.AppendInt(b, int64(res.Start), 10)
	b = append(b, ',')
	b = strconv.AppendInt(b, int64(max(res.End, res.Start)), 10)
	b = append(b, `],"layer":`...)
	b = sdk.AppendJSONString(b, Layer(res))
	b = append(b, `,"diff":`...)
	b = sdk.AppendJSONString(b, diff)
	return append(b, '}')
}

// Run makes one edit of one file as edit_file and edit_region do: it
// loads the file, applies e, and commits the change (only its diff with
// dryRun), returning the sentence and diff as text and the result as the
// call's structured object. unchanged ends the text when the edit leaves
// the file as it was.
func Run(c *sdk.Call, e Edit, dryRun bool, unchanged string) (string, error) {
	f, err := Load(e.Path)
	if err != nil {
		return "", err
	}
	res, err := f.Apply(e)
	if err != nil {
		return "", err
	}
	text := Sentence(e.Path, e, res)
	if !f.Changed() {
		c.SetStructured(AppendResult(nil, e.Path, res, ""))
		return text + "\n" + unchanged, nil
	}
	var diff string
	if dryRun {
		if diff, err = sdk.CommitDiff([]abi.CommitFile{f.Commit()}); err != nil {
			return "", err
		}
		text = "dry run, nothing was written: " + text
	} else {
		if _, err := sdk.Commit([]abi.CommitFile{f.Commit()}); err != nil {
			return "", err
		}
		diff = f.Diff()
	}
	c.SetStructured(AppendResult(nil, e.Path, res, diff))
	return text + "\n" + diff, nil
}
