package lp1

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
)

// Target is one file a patch changes. File is nil while the file does not
// exist; T and B on such a target create it (toolhost's policy for LP1).
type Target struct {
	Path string
	File *File
}

// ApplyError reports an operation that cannot be applied.
type ApplyError struct {
	Path        string
	Section     int // 1-based index of the file section in the patch
	SectionLine int // patch line of its F line
	Op          int // 1-based index of the operation within the section
	Kind        OpKind
	Line        int // patch line of the operation
	Msg         string
}

func (e *ApplyError) Error() string {
	return fmt.Sprintf("section %d (F %s at patch line %d), operation %d (%s at patch line %d): %s",
		e.Section, e.Path, e.SectionLine, e.Op, e.Kind, e.Line, e.Msg)
}

// Apply applies the sections of p in order. load returns the target for a
// path; it is called at the first section naming that path, and may return
// the same *Target for different spellings of one file so their edits
// accumulate. Errors from load are returned unchanged. On error the
// targets may hold partial edits; callers discard them.
func Apply(p *Patch, load func(path string) (*Target, error)) error {
	targets := make(map[string]*Target)
	for si, s := range p.Sections {
		t, ok := targets[s.Path]
		if !ok {
			var err error
			if t, err = load(s.Path); err != nil {
				return err
			}
			targets[s.Path] = t
		}
		for oi, op := range s.Ops {
			if msg := t.apply(op); msg != "" {
				return &ApplyError{Path: s.Path, Section: si + 1, SectionLine: s.Line, Op: oi + 1, Kind: op.Kind, Line: op.Line, Msg: msg}
			}
		}
	}
	return nil
}

// apply performs one operation and returns why it failed, or "".
func (t *Target) apply(op Op) string {
	if t.File == nil {
		if op.Kind != Append && op.Kind != Prepend {
			return "the file does not exist; only T and B can create a file"
		}
		t.File = &File{EOL: LF, FinalNewline: len(op.New) > 0}
	}
	f := t.File
	switch op.Kind {
	case Append:
		f.Lines = splice(f.Lines, len(f.Lines), 0, op.New)
		return ""
	case Prepend:
		f.Lines = splice(f.Lines, 0, 0, op.New)
		return ""
	case Newline:
		f.setFinalNewline(op.FinalNewline)
		return ""
	}
	at, msg := f.locate(op)
	if msg != "" {
		return msg
	}
	switch op.Kind {
	case Replace:
		f.Lines = splice(f.Lines, at, len(op.Find), op.New)
	case InsertAfter:
		f.Lines = splice(f.Lines, at+len(op.Find), 0, op.New)
	case InsertAt:
		f.Lines = splice(f.Lines, at, 0, op.New)
	case Erase:
		f.Lines = splice(f.Lines, at, len(op.Find), nil)
	}
	return ""
}

func (f *File) setFinalNewline(on bool) {
	switch {
	case on && len(f.Lines) == 0:
		f.Lines = []string{""}
	case !on && len(f.Lines) == 1 && f.Lines[0] == "" && f.FinalNewline:
		f.Lines = nil
	}
	f.FinalNewline = on
}

// splice returns lines with del lines at at replaced by ins. It reuses
// lines' array where it can (the File owns it) and copies ins, so a File
// never aliases the parsed patch.
func splice(lines []string, at, del int, ins []string) []string {
	return slices.Replace(lines, at, at+del, ins...)
}

// locate returns the start of the match op selects, or why there is none.
func (f *File) locate(op Op) (int, string) {
	matches := f.matches(op.Find)
	switch {
	case len(matches) == 0:
		return 0, "find block " + describeBlock(op.Find) + " not found" + f.nearMiss(op.Find)
	case op.Occ == 0 && len(matches) > 1:
		return 0, fmt.Sprintf("find block %s matches %d times (%s); add context lines to make it unique or choose one with an occurrence number (%s 1 to %s %d)",
			describeBlock(op.Find), len(matches), lineList(matches), op.Kind, op.Kind, len(matches))
	case op.Occ > len(matches):
		return 0, fmt.Sprintf("occurrence %d requested but find block %s matches only %d time(s) (%s)",
			op.Occ, describeBlock(op.Find), len(matches), lineList(matches))
	case op.Occ > 0:
		return matches[op.Occ-1], ""
	}
	return matches[0], ""
}

// matches returns the start index of every match of block, overlapping
// matches included, in order.
//
// Lines of source code often share long prefixes (indentation, keywords)
// and differ near the end, so comparing the last byte first rejects most
// candidates without a full comparison, which in WebAssembly is a call and
// a byte loop.
func (f *File) matches(block []string) []int {
	var starts []int
	first := block[0]
	n := len(first)
	for i := 0; i+len(block) <= len(f.Lines); i++ {
		l := f.Lines[i]
		if len(l) != n || (n > 0 && l[n-1] != first[n-1]) || l != first {
			continue
		}
		if equalLines(f.Lines[i+1:i+len(block)], block[1:]) {
			starts = append(starts, i)
		}
	}
	return starts
}

func equalLines(a, b []string) bool {
	for i := range b {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// nearMiss points at a place where the block matches once whitespace at
// the ends of lines is ignored: the usual mistake of a model that retyped
// the lines instead of copying them.
func (f *File) nearMiss(block []string) string {
	for i := 0; i+len(block) <= len(f.Lines); i++ {
		ok := true
		for j, want := range block {
			if strings.TrimSpace(f.Lines[i+j]) != strings.TrimSpace(want) {
				ok = false
				break
			}
		}
		if ok {
			return fmt.Sprintf("; line %d matches if leading and trailing whitespace is ignored, but LP1 compares lines exactly: copy them from read_file output", i+1)
		}
	}
	return "; LP1 compares whole lines exactly: read the file again and copy the lines"
}

func describeBlock(block []string) string {
	if len(block) == 1 {
		return "(1 line: " + quoteForMsg(block[0]) + ")"
	}
	return "(" + strconv.Itoa(len(block)) + " lines, first " + quoteForMsg(block[0]) + ")"
}

// lineList names the 1-based lines of the first few matches.
func lineList(starts []int) string {
	const show = 5
	var b strings.Builder
	b.WriteString("at line")
	if len(starts) > 1 {
		b.WriteString("s")
	}
	for i, s := range starts[:min(len(starts), show)] {
		if i > 0 {
			b.WriteString(",")
		}
		b.WriteString(" " + strconv.Itoa(s+1))
	}
	if len(starts) > show {
		b.WriteString(", …")
	}
	return b.String()
}
