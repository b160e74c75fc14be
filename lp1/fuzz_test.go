package lp1

import (
	"slices"
	"strings"
	"testing"
)

// FuzzParse: the parser never panics, and what it accepts formats back to
// text it parses to the same patch.
func FuzzParse(f *testing.F) {
	f.Add("LP1\nF a\nR 2\nx\n.\n..y\n.\nN +\nEND\n")
	f.Add("LP1\r\nF \"a \\\" b\"\r\nT\r\n\r\n.\r\nEND")
	f.Add("# c\nLP1\nF a\nE\n.\nEND\n")
	f.Fuzz(func(t *testing.T, text string) {
		p, err := Parse(text)
		if err != nil {
			return
		}
		again, err := Parse(p.String())
		if err != nil {
			t.Fatalf("formatted patch does not parse: %v\n%s", err, p)
		}
		if !samePatch(p, again) {
			t.Fatalf("round trip changed the patch\nfrom %+v\n  to %+v", p.Sections, again.Sections)
		}
	})
}

// FuzzParseFile: accepted file content writes back byte for byte.
func FuzzParseFile(f *testing.F) {
	f.Add("a\r\nb")
	f.Add("\n\n")
	f.Fuzz(func(t *testing.T, content string) {
		file, err := ParseFile(content)
		if err != nil {
			return
		}
		if got := file.String(); got != content {
			t.Fatalf("ParseFile(%q).String() = %q", content, got)
		}
	})
}

// FuzzApply: a patch made from a random edit (replace lines [i, j) of a
// file with new lines) reproduces the edit exactly.
func FuzzApply(f *testing.F) {
	f.Add("a\nb\nc\n", uint(1), uint(2), "x\ny")
	f.Add("a\r\na\r\na", uint(1), uint(1), ".")
	f.Add("", uint(0), uint(0), "new")
	f.Add("x\nx\nx\n", uint(2), uint(3), "")
	f.Fuzz(func(t *testing.T, content string, i, j uint, replacement string) {
		file, err := ParseFile(content)
		if err != nil || strings.ContainsAny(replacement, "\r") {
			return
		}
		n := uint(len(file.Lines))
		i, j = min(i, n), min(j, n)
		if i > j {
			i, j = j, i
		}
		var repl []string
		if replacement != "" {
			repl = strings.Split(replacement, "\n")
		}
		op, ok := editOp(file.Lines, int(i), int(j), repl)
		if !ok {
			return
		}
		want := &File{Lines: slices.Concat(file.Lines[:i], repl, file.Lines[j:]), FinalNewline: file.FinalNewline, EOL: file.EOL}
		patch := &Patch{Sections: []Section{{Path: "f", Ops: []Op{op}}}}
		got, err := applyText(t, patch.String(), map[string]string{"f": content})
		if err != nil {
			t.Fatalf("apply %+v: %v\npatch:\n%s", op, err, patch)
		}
		if got["f"] != want.String() {
			t.Fatalf("edit [%d,%d) -> %q of %q\npatch:\n%s\n got %q\nwant %q", i, j, repl, content, patch, got["f"], want.String())
		}
	})
}

// editOp expresses "replace lines [i, j) with repl" as one LP1 operation,
// selecting the match by occurrence number.
func editOp(lines []string, i, j int, repl []string) (Op, bool) {
	occ := func(find []string, at int) int {
		f := &File{Lines: lines}
		for k, s := range f.matches(find) {
			if s == at {
				return k + 1
			}
		}
		panic("edit position is not a match")
	}
	switch {
	case j > i:
		find := lines[i:j]
		return Op{Kind: Replace, Occ: occ(find, i), Find: find, New: repl}, true
	case len(repl) == 0:
		return Op{}, false
	case i < len(lines):
		find := lines[i : i+1]
		return Op{Kind: InsertAt, Occ: occ(find, i), Find: find, New: repl}, true
	case i > 0:
		find := lines[i-1 : i]
		return Op{Kind: InsertAfter, Occ: occ(find, i-1), Find: find, New: repl}, true
	}
	return Op{Kind: Append, New: repl}, true
}
