package lp1

import (
	"errors"
	"reflect"
	"strings"
	"testing"
)

// Each case is one rule of docs/LP1.md ("Shape of a patch", "Operations",
// "Blocks"); FR-TOOL-PATCH-01 requires parsing LP1 completely.
func TestParse(t *testing.T) {
	tests := []struct {
		name string
		text string
		want []Section
	}{
		{"header footer and comments", "# leading comment\n\n  LP1  \n# c\nF a.txt\n  # indented comment\nT\nx\n.\n\t END \t", []Section{
			{Path: "a.txt", Line: 5, Ops: []Op{{Kind: Append, New: []string{"x"}, Line: 7}}},
		}},
		{"empty patch", "LP1\nEND\n", nil},
		{"final newline optional", "LP1\nF a\nE\nx\n.\nEND", []Section{
			{Path: "a", Line: 2, Ops: []Op{{Kind: Erase, Find: []string{"x"}, Line: 3}}},
		}},
		{"CRLF patch text", "LP1\r\nF a\r\nR\r\nold\r\n.\r\nnew\r\n.\r\nEND\r\n", []Section{
			{Path: "a", Line: 2, Ops: []Op{{Kind: Replace, Find: []string{"old"}, New: []string{"new"}, Line: 3}}},
		}},
		{"every operation", "LP1\nF f\nR 2\na\n.\nb\n.\nI\na\n.\nc\n.\nP 10\na\n.\nd\n.\nE 1\na\n.\nT\ne\n.\nB\nf\n.\nN +\nN -\nEND\n", []Section{
			{Path: "f", Line: 2, Ops: []Op{
				{Kind: Replace, Occ: 2, Find: []string{"a"}, New: []string{"b"}, Line: 3},
				{Kind: InsertAfter, Find: []string{"a"}, New: []string{"c"}, Line: 8},
				{Kind: InsertAt, Occ: 10, Find: []string{"a"}, New: []string{"d"}, Line: 13},
				{Kind: Erase, Occ: 1, Find: []string{"a"}, Line: 18},
				{Kind: Append, New: []string{"e"}, Line: 21},
				{Kind: Prepend, New: []string{"f"}, Line: 24},
				{Kind: Newline, FinalNewline: true, Line: 27},
				{Kind: Newline, FinalNewline: false, Line: 28},
			}},
		}},
		{"occurrence after tab", "LP1\nF f\nE\t3\na\n.\nEND\n", []Section{
			{Path: "f", Line: 2, Ops: []Op{{Kind: Erase, Occ: 3, Find: []string{"a"}, Line: 3}}},
		}},
		{"quoted path with escapes", "LP1\nF \"dir with space/a \\\"q\\\" \\\\b.txt\"\nT\nx\n.\nEND\n", []Section{
			{Path: `dir with space/a "q" \b.txt`, Line: 2, Ops: []Op{{Kind: Append, New: []string{"x"}, Line: 3}}},
		}},
		{"bare path keeps backslashes", "LP1\nF a\\b\nT\nx\n.\nEND\n", []Section{
			{Path: `a\b`, Line: 2, Ops: []Op{{Kind: Append, New: []string{"x"}, Line: 3}}},
		}},
		{"same file in two sections", "LP1\nF a\nT\nx\n.\nF b\nT\ny\n.\nF a\nT\nz\n.\nEND\n", []Section{
			{Path: "a", Line: 2, Ops: []Op{{Kind: Append, New: []string{"x"}, Line: 3}}},
			{Path: "b", Line: 6, Ops: []Op{{Kind: Append, New: []string{"y"}, Line: 7}}},
			{Path: "a", Line: 10, Ops: []Op{{Kind: Append, New: []string{"z"}, Line: 11}}},
		}},
		{"dot-stuffing", "LP1\nF a\nT\n..\n...\n..foo\n.. \n.bar\n.\nEND\n", []Section{
			{Path: "a", Line: 2, Ops: []Op{{Kind: Append, New: []string{".", "..", ".foo", ". ", ".bar"}, Line: 3}}},
		}},
		{"terminator with trailing blanks", "LP1\nF a\nR\nx\n. \t\ny\n.  \nEND\n", []Section{
			{Path: "a", Line: 2, Ops: []Op{{Kind: Replace, Find: []string{"x"}, New: []string{"y"}, Line: 3}}},
		}},
		{"indented dot is content", "LP1\nF a\nT\n .\n.\nEND\n", []Section{
			{Path: "a", Line: 2, Ops: []Op{{Kind: Append, New: []string{" ."}, Line: 3}}},
		}},
		{"empty lines, comments and END inside blocks", "LP1\nF a\nT\n\n# not a comment\nEND\n\n.\nEND\n", []Section{
			{Path: "a", Line: 2, Ops: []Op{{Kind: Append, New: []string{"", "# not a comment", "END", ""}, Line: 3}}},
		}},
		{"empty new block", "LP1\nF a\nR\nx\n.\n.\nT\n.\nEND\n", []Section{
			{Path: "a", Line: 2, Ops: []Op{{Kind: Replace, Find: []string{"x"}, Line: 3}, {Kind: Append, Line: 7}}},
		}},
		{"CRLF block line keeps no CR", "LP1\r\nF a\r\nT\r\nx \r\n.\r\nEND", []Section{
			{Path: "a", Line: 2, Ops: []Op{{Kind: Append, New: []string{"x "}, Line: 3}}},
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p, err := Parse(tt.text)
			if err != nil {
				t.Fatalf("Parse: %v", err)
			}
			if !reflect.DeepEqual(p.Sections, tt.want) {
				t.Errorf("sections\n got %+v\nwant %+v", p.Sections, tt.want)
			}
		})
	}
}

func TestParseErrors(t *testing.T) {
	tests := []struct {
		name string
		text string
		line int
		msg  string
	}{
		{"empty text", "", 0, "empty patch"},
		{"only comments", "# x\n\n", 2, "empty patch"},
		{"wrong header", "LP2\nEND\n", 1, `expected the header line LP1, found "LP2"`},
		{"missing END", "LP1\nF a\nT\nx\n.\n", 5, "missing END"},
		{"text after END", "LP1\nEND\nx\n", 3, "text after END"},
		{"blank line after END", "LP1\nEND\n\n", 3, "text after END"},
		{"op before F", "LP1\nT\nx\n.\nEND\n", 2, "before any F line"},
		{"section without ops at END", "LP1\nF a\nEND\n", 2, `file section "a" has no operations`},
		{"section without ops before F", "LP1\nF a\n# c\nF b\nT\n.\nEND\n", 2, `file section "a" has no operations`},
		{"F without path", "LP1\nF\nEND\n", 2, "F needs a path"},
		{"bare path with space", "LP1\nF a b\nT\n.\nEND\n", 2, "write it in double quotes"},
		{"bare path with quote", "LP1\nF a\"b\nT\n.\nEND\n", 2, "write it in double quotes"},
		{"bad escape", "LP1\nF \"a\\nb\"\nT\n.\nEND\n", 2, "invalid escape"},
		{"unclosed quote", "LP1\nF \"ab\nT\n.\nEND\n", 2, "no closing quote"},
		{"text after quoted path", "LP1\nF \"a\" b\nT\n.\nEND\n", 2, "after the quoted path"},
		{"empty quoted path", "LP1\nF \"\"\nT\n.\nEND\n", 2, "empty quoted path"},
		{"unknown op", "LP1\nF a\nX\nEND\n", 3, `unknown line "X"`},
		{"op glued to argument", "LP1\nF a\nR2\nx\n.\ny\n.\nEND\n", 3, `unknown line "R2"`},
		{"lowercase op", "LP1\nF a\nt\n.\nEND\n", 3, `unknown line "t"`},
		{"occurrence zero", "LP1\nF a\nR 0\nx\n.\ny\n.\nEND\n", 3, "not a positive integer"},
		{"occurrence leading zero", "LP1\nF a\nE 01\nx\n.\nEND\n", 3, "not a positive integer"},
		{"occurrence negative", "LP1\nF a\nE -1\nx\n.\nEND\n", 3, "not a positive integer"},
		{"occurrence not a number", "LP1\nF a\nE 1a\nx\n.\nEND\n", 3, "not a positive integer"},
		{"occurrence huge", "LP1\nF a\nE 99999999999999999999\nx\n.\nEND\n", 3, "too large"},
		{"argument to T", "LP1\nF a\nT 1\nx\n.\nEND\n", 3, "T takes no argument"},
		{"N without sign", "LP1\nF a\nN\nEND\n", 3, "N needs + "},
		{"N bad sign", "LP1\nF a\nN x\nEND\n", 3, "N needs + "},
		{"empty find block", "LP1\nF a\nE\n.\nEND\n", 3, "find block is empty"},
		{"unterminated block", "LP1\nF a\nT\nx\nEND\n", 3, "new block of T is not terminated"},
		{"unterminated find block", "LP1\nF a\nR\nx\n", 3, "find block of R is not terminated"},
		{"R missing new block", "LP1\nF a\nR\nx\n.\nEND\n", 3, "new block of R is not terminated"},
		{"bare CR", "LP1\nF a\nT\nx\ry\n.\nEND\n", 4, "carriage return inside a line"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Parse(tt.text)
			var se *SyntaxError
			if !errors.As(err, &se) {
				t.Fatalf("Parse error = %v, want a *SyntaxError", err)
			}
			if se.Line != tt.line || !strings.Contains(se.Msg, tt.msg) {
				t.Errorf("error = line %d %q, want line %d containing %q", se.Line, se.Msg, tt.line, tt.msg)
			}
		})
	}
}

func TestFormatRoundTrip(t *testing.T) {
	p := &Patch{Sections: []Section{
		{Path: `sp ace/"q"\x`, Ops: []Op{
			{Kind: Replace, Occ: 3, Find: []string{".", "..x", ""}, New: []string{". ", "END", "# c"}},
			{Kind: Newline, FinalNewline: true},
		}},
		{Path: "plain", Ops: []Op{{Kind: Prepend}, {Kind: Erase, Find: []string{"x"}}, {Kind: Newline}}},
	}}
	got, err := Parse(p.String())
	if err != nil {
		t.Fatalf("Parse(String()): %v\n%s", err, p)
	}
	if !samePatch(got, p) {
		t.Errorf("round trip\n got %+v\nwant %+v\ntext:\n%s", got.Sections, p.Sections, p)
	}
}

// samePatch compares patches ignoring line numbers and nil-versus-empty
// blocks.
func samePatch(a, b *Patch) bool {
	if len(a.Sections) != len(b.Sections) {
		return false
	}
	for i, s := range a.Sections {
		u := b.Sections[i]
		if s.Path != u.Path || len(s.Ops) != len(u.Ops) {
			return false
		}
		for j, op := range s.Ops {
			v := u.Ops[j]
			if op.Kind != v.Kind || op.Occ != v.Occ || op.FinalNewline != v.FinalNewline ||
				strings.Join(op.Find, "\n") != strings.Join(v.Find, "\n") || len(op.Find) != len(v.Find) ||
				strings.Join(op.New, "\n") != strings.Join(v.New, "\n") || len(op.New) != len(v.New) {
				return false
			}
		}
	}
	return true
}

func TestPaths(t *testing.T) {
	p, err := Parse("LP1\nF b\nT\n.\nF a\nT\n.\nF b\nT\n.\nEND\n")
	if err != nil {
		t.Fatal(err)
	}
	if got := p.Paths(); !reflect.DeepEqual(got, []string{"b", "a"}) {
		t.Errorf("Paths = %q", got)
	}
}
