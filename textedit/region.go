package textedit

import (
	"fmt"
	"strconv"
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
	if content != "" && !strings.HasSuffix(content, "\n") {
		content += "\n"
	}
	content = f.toFileEOL(content)
	before := strings.Join(lines[:start-1], "")
	after := strings.Join(lines[end:], "")
	noFinalEOL := n > 0 && !strings.HasSuffix(lines[n-1], "\n")
	if noFinalEOL && after == "" {
		// What is written now ends the file, which had no final newline:
		// it still has none.
		switch {
		case content != "":
			content = strings.TrimSuffix(content, f.LineEnding())
			if start == n+1 {
				before += f.LineEnding() // the old last line is no longer last
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
		f.text, f.modified = text, true
	}
	res := Result{Replacements: 1, Start: start, End: start}
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

// Diff is a unified diff from before to after, labelled as git labels
// path (a/path, b/path) and as the host labels its own diffs; empty when
// they are equal.
//
// The lines the two share at either end, beyond the three of context a
// hunk shows, are set aside before diffing and the hunks' line numbers
// shifted after: an edit changes a few lines of a file that may have
// thousands, and diffing them all costs a WebAssembly plugin more than
// the rest of the edit.
func Diff(path, before, after string) string {
	if before == after {
		return ""
	}
	const context = 3
	head := commonLinePrefix(before, after)
	skip, skipped := 0, 0 // bytes and lines set aside at the start
	for skipped < head-context {
		skip += strings.IndexByte(before[skip:], '\n') + 1
		skipped++
	}
	before, after = before[skip:], after[skip:]
	tail := commonLineSuffix(before, after)
	for range tail - context {
		before = before[:strings.LastIndexByte(before[:len(before)-1], '\n')+1]
		after = after[:strings.LastIndexByte(after[:len(after)-1], '\n')+1]
	}
	d := udiff.Unified("a/"+path, "b/"+path, before, after)
	if skipped == 0 {
		return d
	}
	var b strings.Builder
	for line := range strings.Lines(d) {
		if strings.HasPrefix(line, "@@ -") {
			line = shiftHunk(line, skipped)
		}
		b.WriteString(line)
	}
	return b.String()
}

// commonLinePrefix is how many whole lines a and b start with alike.
func commonLinePrefix(a, b string) int {
	n := 0
	for {
		i := strings.IndexByte(a, '\n')
		if i < 0 || i >= len(b) || a[:i+1] != b[:i+1] {
			return n
		}
		a, b = a[i+1:], b[i+1:]
		n++
	}
}

// commonLineSuffix is how many whole lines a and b end with alike, each
// ending in a line break, and never the whole of either.
func commonLineSuffix(a, b string) int {
	if !strings.HasSuffix(a, "\n") || !strings.HasSuffix(b, "\n") {
		return 0
	}
	n := 0
	for {
		i := strings.LastIndexByte(a[:len(a)-1], '\n')
		j := strings.LastIndexByte(b[:len(b)-1], '\n')
		if i < 0 || j < 0 || a[i:] != b[j:] {
			return n
		}
		a, b = a[:i+1], b[:j+1]
		n++
	}
}

// shiftHunk adds n to both start lines of a hunk header
// ("@@ -12,5 +12,6 @@", "@@ -3 +3 @@").
func shiftHunk(header string, n int) string {
	fields := strings.Fields(header)
	for i, f := range fields {
		if len(f) < 2 || f[0] != '-' && f[0] != '+' {
			continue
		}
		num, rest, _ := strings.Cut(f[1:], ",")
		v, err := strconv.Atoi(num)
		if err != nil {
			return header
		}
		fields[i] = f[:1] + strconv.Itoa(v+n)
		if rest != "" {
			fields[i] += "," + rest
		}
	}
	return strings.Join(fields, " ") + "\n"
}
