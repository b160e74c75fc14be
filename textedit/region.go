package textedit

import (
	"fmt"
	"strings"

	"github.com/aymanbagabas/go-udiff"
)

// ReplaceLines replaces lines start..end (1-based, inclusive) with
// content; end = start-1 inserts content before line start (start one
// past the last line appends). content is whole lines: a final line
// break is added when missing, and every break is written in the file's
// style. The file keeps its final-newline state: content that ends the
// file ends without a break when the file did.
//
// With expected non-nil, the lines must equal *expected once line
// endings are normalized (a final line break on either side is
// ignored); otherwise the file is unchanged and the error shows a diff
// of expected against the lines as they are.
func (f *File) ReplaceLines(start, end int, content string, expected *string) (Result, error) {
	if f.cr {
		// read_file numbers lines by their line feeds and shows this file
		// as one line, so a line number cannot name what the model saw.
		return Result{}, &Error{Reason: Encoding, Msg: "the file's line breaks are carriage returns alone (classic Mac OS line endings), and read_file numbers lines by line feeds, so line numbers cannot name this file's lines; nothing was changed; use edit_file with the text to replace (it treats each carriage return as a line break and writes new lines with one), or rewrite the file with write_file"}
	}
	var bom bool
	if start == 1 {
		content, bom = f.cutBOM(content)
		if expected != nil {
			e, _ := f.cutBOM(*expected)
			expected = &e
		}
	}
	lines := strings.SplitAfter(f.text, "\n")
	if lines[len(lines)-1] == "" {
		lines = lines[:len(lines)-1]
	}
	n := len(lines)
	switch {
	case start < 1 || start > n+1:
		return Result{}, &Error{Reason: BadRange, Msg: fmt.Sprintf("start_line %d is outside the file, which has %d lines: give 1 to %d (%d appends at the end)", start, n, n+1, n+1)}
	case end < start-1 || end > n:
		return Result{}, &Error{Reason: BadRange, Msg: fmt.Sprintf("end_line %d does not fit start_line %d in a file of %d lines: give %d to %d (%d inserts before line %d without replacing it)", end, start, n, start-1, n, start-1, start)}
	}
	if expected != nil {
		actual := strings.Join(lines[start-1:end], "")
		if lineText(actual) != lineText(*expected) {
			label := fmt.Sprintf("actual (lines %d-%d)", start, end)
			if end < start {
				label = "actual (no lines: an insertion)"
			}
			diff := udiff.Unified("expected", label, lineText(*expected), lineText(actual))
			return Result{}, &Error{Reason: Mismatch, Lines: []int{start, end}, Msg: fmt.Sprintf(
				"lines %d-%d are not what expected says, so nothing was changed; the file may have changed since it was read. Expected against actual (→ is a tab, · a trailing space in the lines below):\n%s\nRead the lines again and retry with them.",
				start, end, visibleDiff(diff))}
		}
	}
	content = strings.ReplaceAll(content, "\r\n", "\n")
	if content != "" && !strings.HasSuffix(content, "\n") {
		content += "\n"
	}
	content = f.fromLF(content)
	before := strings.Join(lines[:start-1], "")
	after := strings.Join(lines[end:], "")
	noFinalEOL := n > 0 && !strings.HasSuffix(lines[n-1], "\n")
	if noFinalEOL && after == "" {
		// What is written now ends the file, which had no final newline:
		// it still has none.
		switch {
		case content != "":
			content = strings.TrimSuffix(content, f.textEOL())
			if start == n+1 {
				before += f.textEOL() // the old last line is no longer last
			}
		case end >= start && start > 1 && strings.TrimRight(lines[start-2], "\r\n") != "":
			// The last lines went: the line before them is last now
			// (unless it is empty, which without its break would be gone).
			if strings.HasSuffix(before, "\r\n") {
				before = before[:len(before)-2]
			} else {
				before = strings.TrimSuffix(before, "\n")
			}
		}
	}
	if text := before + content + after; text != f.text {
		// The text keeps before's bytes (or all its old bytes, when
		// before gained a line break) and after's.
		p := min(len(before), len(f.text)-len(after))
		f.wrote(p, len(f.text)-len(after), len(text)-len(after)-p)
		f.text, f.modified = text, true
	}
	res := Result{Replacements: 1, Start: start, End: start, BOM: bom}
	if k := strings.Count(content, "\n"); content != "" {
		if !strings.HasSuffix(content, "\n") {
			k++
		}
		res.End = start + k - 1
	}
	return res, nil
}

// lineText is s with LF line endings and no final line break, for
// comparing lines however they end.
func lineText(s string) string {
	s = strings.ReplaceAll(s, "\r\n", "\n")
	return strings.TrimSuffix(s, "\n") + "\n"
}

// visibleDiff shows the invisible characters of a diff's lines.
func visibleDiff(diff string) string {
	var b strings.Builder
	for line := range strings.Lines(diff) {
		b.WriteString(Visible(line))
		b.WriteByte('\n')
	}
	return strings.TrimSuffix(b.String(), "\n")
}
