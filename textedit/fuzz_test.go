package textedit

import (
	"slices"
	"strings"
	"testing"

	"github.com/aymanbagabas/go-udiff"
)

// FuzzReplace checks what must hold for any file and strings: no panic;
// a failed edit changes nothing; a successful one keeps the byte order
// mark and every line before the first and after the last line it
// reports writing, byte for byte (the line after may be the rest of the
// line the match ended in); an exact single match is what
// strings.Replace would do.
func FuzzReplace(f *testing.F) {
	seeds := [][4]string{
		{"a\r\nb  \r\n\tc\r\n", "b\nc", "x\n  y", ""},
		{"\ufeffx := “1”\n", "x := \"1\"", "x := 2", ""},
		{"    if x {\n        y\n    }\n", "\tif x {\n\t\ty\n\t}", "\tz", ""},
		{"a\nb\na\nb\n", "1→a\n2→b", "c", "all"},
		{"", "a", "b", ""},
		{"a\n", "\n", "", "all"},
		{"\ufeffhello\n", "\ufeffhello", "\ufeffbye", ""},
		{"a\rb\rc\r", "b", "X\nY", ""},
	}
	for _, s := range seeds {
		f.Add(s[0], s[1], s[2], s[3] == "all")
	}
	f.Fuzz(func(t *testing.T, file, old, new string, all bool) {
		fl, err := Parse([]byte(file))
		if err != nil {
			return
		}
		before := fl.Text()
		eol := fl.LineEnding()
		res, err := fl.Replace(old, new, all)
		after := fl.Text()
		if err != nil {
			if after != before {
				t.Fatalf("a failed edit changed %q to %q", before, after)
			}
			return
		}
		got := string(fl.Bytes())
		if strings.HasPrefix(file, "\ufeff") != strings.HasPrefix(got, "\ufeff") {
			t.Fatalf("byte order mark lost or added: %q -> %q", file, got)
		}
		if strings.HasPrefix(got, "\ufeff\ufeff") && !strings.HasPrefix(file, "\ufeff\ufeff") {
			t.Fatalf("byte order mark written twice: %q -> %q", file, got)
		}
		if eol == "\r" && strings.Contains(got, "\n") {
			t.Fatalf("a line feed written into a file of CR line breaks: %q -> %q", file, got)
		}
		if res.Replacements < 1 || res.Start < 1 || res.End < res.Start {
			t.Fatalf("result %+v", res)
		}
		bl, al := strings.SplitAfter(before, "\n"), strings.SplitAfter(after, "\n")
		if res.End > len(al) {
			t.Fatalf("result %+v past the end of %q", res, after)
		}
		if !slices.Equal(al[:res.Start-1], bl[:res.Start-1]) {
			t.Fatalf("lines before %d changed: %q -> %q (%+v)", res.Start, before, after, res)
		}
		// The first line after the region may be the rest of the line
		// the region ended in; the lines after it are whole.
		tail := al[res.End:]
		if len(tail) > len(bl) || len(tail) > 0 && (!slices.Equal(tail[1:], bl[len(bl)-len(tail)+1:]) ||
			!strings.HasSuffix(bl[len(bl)-len(tail)], tail[0])) {
			t.Fatalf("lines after %d changed: %q -> %q (%+v)", res.End, before, after, res)
		}
		if res.Layer == Exact && res.Replacements == 1 && !all && !res.BOM {
			if eol == "\r" {
				old, new, eol = crToLF(old), crToLF(new), "\n"
			}
			repl := strings.ReplaceAll(strings.ReplaceAll(new, "\r\n", "\n"), "\n", eol)
			if want := strings.Replace(before, old, repl, 1); after != want {
				t.Fatalf("exact edit gave %q, want %q", after, want)
			}
		}
	})
}

// FuzzReplaceLines checks that a region edit never panics, changes
// nothing when it fails, and keeps the lines before the region (the
// last of a file without a final newline gains one when appended to,
// and the line before the last lines loses it when they are deleted).
func FuzzReplaceLines(f *testing.F) {
	f.Add("a\nb\nc", 2, 2, "x")
	f.Add("a\r\nb\r\n", 3, 2, "y\n")
	f.Add("", 1, 0, "")
	f.Add("\ufeffa\nb\n", 1, 1, "\ufeffx")
	f.Add("a\rb\r", 1, 1, "x")
	f.Fuzz(func(t *testing.T, file string, start, end int, content string) {
		fl, err := Parse([]byte(file))
		if err != nil {
			return
		}
		before := fl.Text()
		res, err := fl.ReplaceLines(start, end, content, nil)
		after := fl.Text()
		if err != nil {
			if after != before {
				t.Fatalf("a failed edit changed %q to %q", before, after)
			}
			return
		}
		// Appending to a file without a final newline ends its last line.
		bl, al := strings.SplitAfter(before, "\n"), strings.SplitAfter(after, "\n")
		if res.Start != start || len(al) < start-1 {
			t.Fatalf("result %+v for lines %d-%d of %q", res, start, end, before)
		}
		for k := range start - 1 {
			if al[k] != bl[k] && al[k] != bl[k]+fl.LineEnding() && (k != start-2 || bl[k] != al[k]+"\n" && bl[k] != al[k]+"\r\n") {
				t.Fatalf("line %d changed: %q -> %q", k+1, before, after)
			}
		}
	})
}

// FuzzDiff checks that the diff, made with the shared lines set aside,
// turns before into after. (It may align repeated lines otherwise than a
// diff of the whole, which is as correct.)
func FuzzDiff(f *testing.F) {
	f.Add("a\nb\nc\nd\ne\nf\ng\nh\n", "a\nb\nc\nd\nE\nf\ng\nh\n")
	f.Add("a\nb\nc\nd\ne", "a\nb\nc\nd\ne\n")
	f.Add("0\n\n\n\n\n\n\n\n", "0\n\n\n\n\n\n\n\n\n")
	f.Fuzz(func(t *testing.T, before, after string) {
		if before == after {
			return
		}
		d := Diff("f", before, after)
		got, err := udiff.ApplyUnified(d, before)
		if err != nil {
			if _, werr := udiff.ApplyUnified(udiff.Unified("a/f", "b/f", before, after), before); werr != nil {
				return // the diff package cannot apply its own diff of these
			}
			t.Fatalf("applying Diff(%q, %q): %v\n%s", before, after, err, d)
		}
		if got != after {
			t.Fatalf("Diff(%q, %q) applied gives %q\n%s", before, after, got, d)
		}
	})
}
