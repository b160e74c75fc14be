package match

import (
	"errors"
	"strings"
	"testing"
)

func TestScan(t *testing.T) {
	tests := []struct {
		name string
		o    Options
		data string
		want []Line // Number, Column, Text, MatchText only
	}{
		{"literal cs", Options{Query: "Foo", CaseSensitive: true}, "foo\nFoo bar\nx Foo Foo\n", []Line{{Number: 2, Column: 1, Text: "Foo bar", MatchText: "Foo"}, {Number: 3, Column: 3, Text: "x Foo Foo", MatchText: "Foo"}}},
		{"literal ci default", Options{Query: "foo"}, "FOO\nbar\nxfOo\n", []Line{{Number: 1, Column: 1, Text: "FOO", MatchText: "FOO"}, {Number: 3, Column: 2, Text: "xfOo", MatchText: "fOo"}}},
		{"ci non-ascii simple fold", Options{Query: "É"}, "café\nCAFÉ\n", []Line{{Number: 1, Column: 4, Text: "café", MatchText: "é"}, {Number: 2, Column: 4, Text: "CAFÉ", MatchText: "É"}}},
		{"ß is not SS (full folding)", Options{Query: "straße"}, "STRASSE\nStraße\n", []Line{{Number: 2, Column: 1, Text: "Straße", MatchText: "Straße"}}},
		{"crlf", Options{Query: "b"}, "a\r\nab\r\n", []Line{{Number: 2, Column: 2, Text: "ab", MatchText: "b"}}},
		{"no trailing newline", Options{Query: "z"}, "a\nz", []Line{{Number: 2, Column: 1, Text: "z", MatchText: "z"}}},
		{"empty lines regex", Options{Query: "^$", Regex: true}, "a\n\nb\n\n", []Line{{Number: 2, Column: 1, Text: "", MatchText: ""}, {Number: 4, Column: 1, Text: "", MatchText: ""}}},
		{"regex prefilter", Options{Query: `func \w+Error`, Regex: true, CaseSensitive: true}, "func main()\nfunc newError() {\nfunc x() { func yError }\n", []Line{{Number: 2, Column: 1, Text: "func newError() {", MatchText: "func newError"}, {Number: 3, Column: 12, Text: "func x() { func yError }", MatchText: "func yError"}}},
		{"regex no literal", Options{Query: `\d+`, Regex: true}, "ab\nx12y\n", []Line{{Number: 2, Column: 2, Text: "x12y", MatchText: "12"}}},
		{"regex does not cross lines", Options{Query: `a\s+b`, Regex: true}, "a\nb\na  b\n", []Line{{Number: 3, Column: 1, Text: "a  b", MatchText: "a  b"}}},
		{"regex $ before crlf", Options{Query: `x$`, Regex: true}, "ax\r\nxa\n", []Line{{Number: 1, Column: 2, Text: "ax", MatchText: "x"}}},
		{"multiline", Options{Query: `a\nb`, Regex: true, Multiline: true}, "xa\nb\na\nc\n", []Line{{Number: 1, Column: 2, Text: "xa", MatchText: "a\nb"}}},
		{"line counts once", Options{Query: "o"}, "oo oo\n", []Line{{Number: 1, Column: 1, Text: "oo oo", MatchText: "o"}}},
		{"regex kelvin folds", Options{Query: "k", Regex: true}, "\u212a\n", []Line{{Number: 1, Column: 1, Text: "\u212a", MatchText: "\u212a"}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m, err := Compile(tt.o)
			if err != nil {
				t.Fatal(err)
			}
			got, n := m.Scan([]byte(tt.data), 100)
			if n != len(tt.want) || len(got) != len(tt.want) {
				t.Fatalf("Scan = %d lines, count %d; want %d: %+v", len(got), n, len(tt.want), got)
			}
			for i, w := range tt.want {
				g := got[i]
				if g.Number != w.Number || g.Column != w.Column || g.Text != w.Text || g.MatchText != w.MatchText || g.Cut {
					t.Errorf("line %d = %+v; want %+v", i, g, w)
				}
			}
			if _, c := m.Scan([]byte(tt.data), 0); c != n {
				t.Errorf("count-only = %d; detailed = %d", c, n)
			}
		})
	}
}

func TestContext(t *testing.T) {
	m, err := Compile(Options{Query: "m", ContextLines: 2})
	if err != nil {
		t.Fatal(err)
	}
	got, _ := m.Scan([]byte("m1\nb\nc\nm2\nd\r\n"), 10)
	if len(got) != 2 {
		t.Fatalf("got %+v", got)
	}
	check := func(name string, g, w []string) {
		if strings.Join(g, "|") != strings.Join(w, "|") || len(g) != len(w) {
			t.Errorf("%s = %q; want %q", name, g, w)
		}
	}
	check("first Before (file start)", got[0].Before, nil)
	check("first After", got[0].After, []string{"b", "c"})
	check("second Before", got[1].Before, []string{"b", "c"})
	check("second After (file end)", got[1].After, []string{"d"})
}

func TestCut(t *testing.T) {
	long := strings.Repeat("é", 2_500_000) + "NEEDLE" + strings.Repeat("x", 1000) // 5 MB, one line
	m, err := Compile(Options{Query: "needle"})
	if err != nil {
		t.Fatal(err)
	}
	got, n := m.Scan([]byte(long), 1)
	if n != 1 || len(got) != 1 {
		t.Fatalf("count %d lines %d", n, len(got))
	}
	l := got[0]
	if !l.Cut || !strings.HasPrefix(l.Text, "…") || !strings.HasSuffix(l.Text, "…") || !strings.Contains(l.Text, "NEEDLE") {
		t.Errorf("Text = %q (Cut %v)", l.Text, l.Cut)
	}
	if body := strings.TrimSuffix(strings.TrimPrefix(l.Text, "…"), "…"); len(body) > MaxLineBytes || !utf8Valid(body) {
		t.Errorf("window of %d bytes, valid UTF-8 %v", len(body), utf8Valid(body))
	}
	if l.Column != 5_000_001 || l.MatchText != "NEEDLE" {
		t.Errorf("Column %d MatchText %q", l.Column, l.MatchText)
	}
}

func utf8Valid(s string) bool { return strings.ToValidUTF8(s, "\uFFFD") == s }

func TestPatternErrors(t *testing.T) {
	tests := []struct{ q, want string }{
		{`foo(?=bar)`, "RE2"},
		{`(?<!x)y`, "look-behind"},
		{`(a)\1`, "backreference"},
		{`(?>a)`, "atomic"},
		{`a++`, "possessive"},
		{`[a`, "missing closing ]"},
		{`a)`, "at byte"},
	}
	for _, tt := range tests {
		_, err := Compile(Options{Query: tt.q, Regex: true})
		var pe *PatternError
		if !errors.As(err, &pe) || !strings.Contains(pe.Message, tt.want) {
			t.Errorf("Compile(%q) = %v; want a PatternError saying %q", tt.q, err, tt.want)
		}
	}
}
