package textedit

import (
	"errors"
	"strings"
	"testing"

	"github.com/aymanbagabas/go-udiff"
)

func TestReplaceLines(t *testing.T) {
	str := func(s string) *string { return &s }
	tests := []struct {
		name        string
		file        string
		start, end  int
		content     string
		expected    *string
		want        string
		first, last int
	}{
		{"replace one", "a\nb\nc\n", 2, 2, "B", nil, "a\nB\nc\n", 2, 2},
		{"final newline never doubled", "a\nb\nc\n", 2, 2, "B\n", nil, "a\nB\nc\n", 2, 2},
		{"insert before", "a\nb\n", 2, 1, "x\ny", nil, "a\nx\ny\nb\n", 2, 3},
		{"append", "a\nb\n", 3, 2, "c", nil, "a\nb\nc\n", 3, 3},
		{"delete", "a\nb\nc\n", 2, 3, "", nil, "a\n", 2, 2},
		{"CRLF file", "a\r\nb\r\nc\r\n", 1, 2, "x\ny\nz\n", nil, "x\r\ny\r\nz\r\nc\r\n", 1, 3},
		{"no final newline, last line replaced", "a\nb", 2, 2, "c\n", nil, "a\nc", 2, 2},
		{"no final newline, appended", "a\nb", 3, 2, "c", nil, "a\nb\nc", 3, 3},
		{"no final newline, last line deleted", "a\nb", 2, 2, "", nil, "a", 2, 2},
		{"empty file", "", 1, 0, "a", nil, "a\n", 1, 1},
		{"expected, CRLF against LF", "a\r\nb\r\n", 1, 1, "x", str("a"), "x\r\nb\r\n", 1, 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f, err := Parse([]byte(tt.file))
			if err != nil {
				t.Fatal(err)
			}
			res, err := f.ReplaceLines(tt.start, tt.end, tt.content, tt.expected)
			if err != nil {
				t.Fatalf("ReplaceLines: %v", err)
			}
			if got := string(f.Bytes()); got != tt.want {
				t.Errorf("file = %q, want %q", got, tt.want)
			}
			if res.Start != tt.first || res.End != tt.last {
				t.Errorf("lines %d-%d, want %d-%d", res.Start, res.End, tt.first, tt.last)
			}
		})
	}
}

func TestReplaceLinesFailures(t *testing.T) {
	str := func(s string) *string { return &s }
	tests := []struct {
		name       string
		start, end int
		expected   *string
		reason     Reason
		says       []string
	}{
		{"start past the end", 5, 5, nil, BadRange, []string{"has 3 lines"}},
		{"start zero", 0, 0, nil, BadRange, []string{"start_line 0"}},
		{"end before start-1", 3, 1, nil, BadRange, []string{"end_line 1"}},
		{"end past the end", 2, 4, nil, BadRange, []string{"end_line 4"}},
		{"expected differs", 2, 3, str("b\nC\n"), Mismatch, []string{"-C", "+c  ", "expected", "actual (lines 2-3)"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			const file = "a\nb\nc  \n"
			f, _ := Parse([]byte(file))
			_, err := f.ReplaceLines(tt.start, tt.end, "x", tt.expected)
			var e *Error
			if !errors.As(err, &e) || e.Reason != tt.reason {
				t.Fatalf("ReplaceLines: %v, want reason %d", err, tt.reason)
			}
			for _, s := range tt.says {
				if !strings.Contains(e.Msg, strings.ReplaceAll(s, " ", "·")) && !strings.Contains(e.Msg, s) {
					t.Errorf("message lacks %q:\n%s", s, e.Msg)
				}
			}
			if string(f.Bytes()) != file {
				t.Errorf("a failed edit changed the file")
			}
		})
	}
}

// Diff of a large file gives the hunks a whole-file diff gives.
func TestDiffSetsAsideWhatIsShared(t *testing.T) {
	var b strings.Builder
	for i := range 200 {
		b.WriteString(strings.Repeat("x", i%7) + "line\n")
	}
	before := b.String()
	for _, tt := range []struct{ name, after string }{
		{"middle", strings.Replace(before, "xxxline\nxxxxline\n", "xxxline\nchanged\nxxxxline\n", 1)},
		{"two places", strings.Replace(before, "xxxxxxline\n", "six\n", 2)},
		{"start", "new\n" + before},
		{"end, no final newline", before + "tail"},
		{"last line removed", before[:len(before)-len("xxxline\n")]},
	} {
		t.Run(tt.name, func(t *testing.T) {
			want := udiff.Unified("a/f", "b/f", before, tt.after)
			if got := Diff("f", before, tt.after); got != want {
				t.Errorf("Diff:\n%s\nwant:\n%s", got, want)
			}
		})
	}
}
