package textedit

import (
	"fmt"
	"strconv"
	"strings"
	"testing"
)

// fileDiffApply applies a unified diff with context to before, checking
// every context and removed line and that hunks come in order.
func fileDiffApply(diff, before string) (string, error) {
	old := strings.SplitAfter(before, "\n")
	if old[len(old)-1] == "" {
		old = old[:len(old)-1]
	}
	var out []string
	at := 0 // lines of old used
	lines := strings.SplitAfter(diff, "\n")
	for i := 0; i < len(lines); i++ {
		l := lines[i]
		if strings.HasPrefix(l, "--- ") || strings.HasPrefix(l, "+++ ") || l == "" {
			continue
		}
		// A line without a break is followed by the marker.
		noEOL := i+1 < len(lines) && strings.HasPrefix(lines[i+1], "\\ No newline")
		text := l[1:]
		if noEOL {
			text = strings.TrimSuffix(text, "\n")
			i++
		}
		switch l[0] {
		case '@':
			f := strings.Fields(l)
			num, _, _ := strings.Cut(f[1][1:], ",")
			n, err := strconv.Atoi(num)
			if err != nil {
				return "", fmt.Errorf("hunk header %q", l)
			}
			if strings.HasSuffix(f[1], ",0") {
				n++ // an empty range names the line before it
			}
			if n-1 < at || n-1 > len(old) {
				return "", fmt.Errorf("hunk %q out of order or past the end", l)
			}
			out, at = append(out, old[at:n-1]...), n-1
		case ' ', '-':
			if at >= len(old) || old[at] != text {
				return "", fmt.Errorf("line %d is not %q", at+1, text)
			}
			if l[0] == ' ' {
				out = append(out, text)
			}
			at++
		case '+':
			out = append(out, text)
		default:
			return "", fmt.Errorf("unexpected line %q", l)
		}
	}
	return strings.Join(append(out, old[at:]...), ""), nil
}

// fileDiffEdit is one edit of a File.Diff test: a text edit (old, new)
// or, with start > 0, a region edit.
type fileDiffEdit struct {
	old, new   string
	start, end int
}

func (e fileDiffEdit) apply(f *File) error {
	if e.start > 0 {
		_, err := f.ReplaceLines(e.start, e.end, e.new, nil)
		return err
	}
	_, err := f.Replace(e.old, e.new, false)
	return err
}

func fileDiffLines(n int, eol string) string {
	var b strings.Builder
	for i := 1; i <= n; i++ {
		fmt.Fprintf(&b, "line %d%s", i, eol)
	}
	return b.String()
}

// TestFileDiff checks that the diff made from the places edits changed
// is the diff of the whole text, hunk for hunk, wherever the edits fall:
// far apart, close enough to share a hunk, overlapping, at either end,
// in a CRLF file, in one without a final newline.
func TestFileDiff(t *testing.T) {
	big := fileDiffLines(500, "\n")
	tests := []struct {
		name  string
		file  string
		edits []fileDiffEdit
	}{
		{"one edit", big, []fileDiffEdit{{old: "line 250\n", new: "changed\n"}}},
		{"far apart", big, []fileDiffEdit{{old: "line 20\n", new: "a\n"}, {old: "line 300\n", new: "b\nc\n"}, {old: "line 450\n", new: ""}}},
		{"later edit before an earlier one", big, []fileDiffEdit{{old: "line 300\n", new: "b\nc\nd\n"}, {old: "line 20\n", new: ""}}},
		{"six lines apart share a hunk", big, []fileDiffEdit{{old: "line 100\n", new: "x\n"}, {old: "line 107\n", new: "y\n"}}},
		{"seven lines apart do not", big, []fileDiffEdit{{old: "line 100\n", new: "x\n"}, {old: "line 108\n", new: "y\n"}}},
		{"overlapping", big, []fileDiffEdit{{old: "line 100\nline 101\n", new: "x\n"}, {old: "x\nline 102\n", new: "y\nz\n"}}},
		{"inside an earlier edit", big, []fileDiffEdit{{old: "line 100\n", new: "a\nb\nc\n"}, {old: "b\n", new: "B\n"}}},
		{"undone", big, []fileDiffEdit{{old: "line 100\n", new: "x\n"}, {old: "x\n", new: "line 100\n"}, {old: "line 200\n", new: "y\n"}}},
		{"first and last lines", big, []fileDiffEdit{{old: "line 1\n", new: "first\n"}, {old: "line 500\n", new: "last"}}},
		{"part of a line", big, []fileDiffEdit{{old: "ne 42\n", new: "NE 42\n"}, {old: "ne 43\nli", new: "x\ny"}}},
		{"regions", big, []fileDiffEdit{{start: 10, end: 12, new: "a\n"}, {start: 400, end: 399, new: "ins\n"}, {start: 499, end: 499, new: ""}, {start: 498, end: 498, new: "z"}}},
		{"region appended", "a\nb", []fileDiffEdit{{start: 3, end: 2, new: "c"}}},
		{"last line deleted without a final newline", fileDiffLines(20, "\n") + "end", []fileDiffEdit{{start: 21, end: 21, new: ""}, {old: "line 2\n", new: ""}}},
		{"CRLF", fileDiffLines(100, "\r\n"), []fileDiffEdit{{old: "line 5\r\n", new: "a\nb\n"}, {old: "line 90", new: "x"}}},
		{"empty file", "", []fileDiffEdit{{start: 1, end: 0, new: "a\nb\n"}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f, err := ParseString(tt.file)
			if err != nil {
				t.Fatal(err)
			}
			for _, e := range tt.edits {
				if err := e.apply(f); err != nil {
					t.Fatalf("edit %+v: %v", e, err)
				}
			}
			got, want := f.Diff("p"), Diff("p", tt.file, f.Text())
			if got != want {
				t.Fatalf("File.Diff:\n%s\nDiff of the whole text:\n%s", got, want)
			}
			if tt.file != "" && got == "" {
				t.Fatal("no diff")
			}
			if got == "" {
				if f.Text() != tt.file {
					t.Fatal("no diff of a changed text")
				}
				return
			}
			if applied, err := fileDiffApply(got, tt.file); err != nil || applied != f.Text() {
				t.Fatalf("the diff applied: %v, or not the text now:\n%s", err, got)
			}
		})
	}
}

// FuzzFileDiff checks that the diff made from the places edits changed
// turns the text as parsed into the text now, for any file and edits.
func FuzzFileDiff(f *testing.F) {
	f.Add("a\nb\nc\nd\ne\nf\ng\nh\ni\nj\nk\n", "b", "B\nB", 3, 2, "x", "k\n", "")
	f.Add("a\r\nb\r\n\r\nc", "c", "", 1, 1, "", "\n", "y\n")
	f.Fuzz(func(t *testing.T, file, old1, new1 string, start, end int, content, old2, new2 string) {
		fl, err := ParseString(file)
		if err != nil {
			return
		}
		orig := fl.Text()
		fl.Replace(old1, new1, false)
		fl.ReplaceLines(start, end, content, nil)
		fl.Replace(old2, new2, true)
		d := fl.Diff("f")
		if d == "" {
			if fl.Text() != orig {
				t.Fatalf("no diff from %q to %q", orig, fl.Text())
			}
			return
		}
		got, err := fileDiffApply(d, orig)
		if err != nil {
			t.Fatalf("applying the diff from %q to %q: %v\n%s", orig, fl.Text(), err, d)
		}
		if got != fl.Text() {
			t.Fatalf("the diff from %q to %q applied gives %q\n%s", orig, fl.Text(), got, d)
		}
	})
}
