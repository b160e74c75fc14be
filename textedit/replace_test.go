package textedit

import (
	"errors"
	"slices"
	"strings"
	"testing"
)

func TestReplaceLayers(t *testing.T) {
	tests := []struct {
		name       string
		file       string
		old, new   string
		all        bool
		want       string
		layer      Layer
		start, end int
		count      int
	}{
		{"exact", "a\nb\nc\n", "b\n", "B\n", false, "a\nB\nc\n", Exact, 2, 2, 1},
		{"exact inside a line", "func f(a int) {}\n", "a int", "a, b int", false, "func f(a, b int) {}\n", Exact, 1, 1, 1},
		{"CRLF file, LF strings", "one\r\ntwo\r\nthree\r\n", "one\ntwo\n", "uno\ndos\n", false, "uno\r\ndos\r\nthree\r\n", LineEndings, 1, 2, 1},
		{"LF file, CRLF strings", "one\ntwo\nthree\n", "two\r\nthree", "2\r\n3", false, "one\n2\n3\n", LineEndings, 2, 3, 1},
		{"trailing spaces in the file", "x := 1  \ny := 2\t\nz := 3\n", "x := 1\ny := 2\n", "x := 10\ny := 20\n", false, "x := 10\ny := 20\nz := 3\n", TrailingSpace, 1, 2, 1},
		{"trailing spaces outside the region kept", "keep  \nx := 1  \nkeep too  \n", "x := 1\n", "x := 2\n", false, "keep  \nx := 2\nkeep too  \n", TrailingSpace, 2, 2, 1},
		{"CRLF file with trailing spaces", "a  \r\nb \r\nc\r\n", "a\nb\n", "A\nB\n", false, "A\r\nB\r\nc\r\n", TrailingSpace, 1, 2, 1},
		{"tabs in the file, spaces in the strings", "func f() {\n\tif x {\n\t\treturn 1\n\t}\n}\n",
			"    if x {\n        return 1\n    }\n", "    if x {\n        y()\n        return 2\n    }\n", false,
			"func f() {\n\tif x {\n\t\ty()\n\t\treturn 2\n\t}\n}\n", Indentation, 2, 5, 1},
		{"spaces in the file, tabs in the strings", "def f():\n    if x:\n        return 1\n", "if x:\n\treturn 1\n", "if x:\n\treturn 2\n\traise E\n", false,
			"def f():\n    if x:\n        return 2\n        raise E\n", Indentation, 2, 4, 1},
		{"uniform shift", "class A:\n        def f(self):\n            pass\n", "def f(self):\n    pass\n", "def g(self):\n    return 1\n", false,
			"class A:\n        def g(self):\n            return 1\n", Indentation, 2, 3, 1},
		{"read_file line numbers", "alpha\nbeta\ngamma\n", "2→beta\n3→gamma\n", "2→BETA\n3→gamma\n", false, "alpha\nBETA\ngamma\n", LineNumbers, 2, 3, 1},
		{"cat -n line numbers", "alpha\n\tbeta\ngamma\n", "     2\t\tbeta\n", "     2\t\tBETA\n", false, "alpha\n\tBETA\ngamma\n", LineNumbers, 2, 2, 1},
		{"line numbers on the copied lines of new_string only", "a\n\tb\nc\n", "2→\tb\n3→c\n", "2→\tb\n\tadded\n3→c\n", false, "a\n\tb\n\tadded\nc\n", LineNumbers, 2, 4, 1},
		{"line numbers, new_string without", "alpha\nbeta\n", "1→alpha\n", "ALPHA\n", false, "ALPHA\nbeta\n", LineNumbers, 1, 1, 1},
		{"curly quotes in the file", "msg := “hello” // it’s\n", "msg := \"hello\" // it's\n", "msg := \"bye\"\n", false, "msg := \"bye\"\n", Punctuation, 1, 1, 1},
		{"straight quotes in the file, curly in the strings", "say('hi') - now...\n", "say(‘hi’) — now…", "say('ho')", false, "say('ho')\n", Punctuation, 1, 1, 1},
		{"NBSP", "a\u00a0b\n", "a b", "a_b", false, "a_b\n", Punctuation, 1, 1, 1},
		{"replace_all", "x\ny\nx\n", "x", "z", true, "z\ny\nz\n", Exact, 1, 3, 2},
		{"replace_all after normalizing", "x \r\ny\r\nx\t\r\n", "x\n", "z\n", true, "z\r\ny\r\nz\r\n", TrailingSpace, 1, 3, 2},
		{"no final newline kept", "a\nb", "b", "c\nd", false, "a\nc\nd", Exact, 2, 3, 1},
		{"deletion", "a\nb\nc\n", "b\n", "", false, "a\nc\n", Exact, 2, 2, 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f, err := Parse([]byte(tt.file))
			if err != nil {
				t.Fatal(err)
			}
			res, err := f.Replace(tt.old, tt.new, tt.all)
			if err != nil {
				t.Fatalf("Replace: %v", err)
			}
			if got := string(f.Bytes()); got != tt.want {
				t.Errorf("file = %q, want %q", got, tt.want)
			}
			if res.Layer != tt.layer || res.Start != tt.start || res.End != tt.end || res.Replacements != tt.count {
				t.Errorf("result = %+v, want layer %v lines %d-%d, %d replacements", res, tt.layer.Name(), tt.start, tt.end, tt.count)
			}
		})
	}
}

func TestReplaceKeepsBOM(t *testing.T) {
	f, err := Parse([]byte("\ufeffa\r\nb\r\n"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.Replace("a\nb", "c\nd", false); err != nil {
		t.Fatal(err)
	}
	if got, want := string(f.Bytes()), "\ufeffc\r\nd\r\n"; got != want {
		t.Errorf("file = %q, want %q", got, want)
	}
}

func TestReplaceFailures(t *testing.T) {
	tests := []struct {
		name     string
		file     string
		old, new string
		reason   Reason
		lines    []int
		says     []string
	}{
		{"empty", "a\n", "", "b", Empty, nil, []string{"write_file"}},
		{"same", "a\n", "a", "a", NoChange, nil, []string{"nothing to do"}},
		{"twice exactly", "x = 1\ny\nx = 1\n", "x = 1", "x = 2", Ambiguous, []int{1, 3}, []string{"2 places exactly", "lines 1, 3", "replace_all"}},
		{"twice after normalizing", "x = 1  \ny\nx = 1\t\n", "x = 1\r\n", "x = 2\n", Ambiguous, []int{1, 3}, []string{"2 places", "trailing whitespace", "lines 1, 3"}},
		{"not found", "func a() {\n\treturn 1  \n}\n", "func a() {\n\treturn 2\n}\n", "x", NotFound, []int{1},
			[]string{"closest region is at line 1", "     2  →return 1··", "line-number prefixes (old_string has none)", "edit_region"}},
		{"indented old_string does not match inside a line", "func f() {\n    max := 1\n}\n", "\tx := 1\n", "\tx := 2\n", NotFound, nil, nil},
		{"numbered lines are whole lines", "xgamma\n", "3→gamma\n", "3→delta\n", NotFound, nil, nil},
		{"closest of several", "a\nb\nc\nx\nb\nc\nd\n", "b\nc\nd\nQ\n", "z", NotFound, []int{5}, []string{"closest region is at line 5"}},
		{"CR shown", "a\r\nb\r\n", "a\nc", "x", NotFound, []int{1}, []string{"a␍"}},
		{"already applied", "a\nnew line\nc\n", "old line\n", "new line\n", AlreadyApplied, []int{2}, []string{"already in the file at line 2", "may already have been made"}},
		{"relative indentation differs", "if x:\ny = 1\n", "if x:\n    y = 1\n", "z", NotFound, []int{1}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f, err := Parse([]byte(tt.file))
			if err != nil {
				t.Fatal(err)
			}
			_, err = f.Replace(tt.old, tt.new, false)
			var e *Error
			if !errors.As(err, &e) {
				t.Fatalf("Replace: %v, want an *Error", err)
			}
			if e.Reason != tt.reason || !slices.Equal(e.Lines, tt.lines) {
				t.Errorf("reason %d lines %v, want %d %v; message:\n%s", e.Reason, e.Lines, tt.reason, tt.lines, e.Msg)
			}
			for _, s := range tt.says {
				if !strings.Contains(e.Msg, s) {
					t.Errorf("message lacks %q:\n%s", s, e.Msg)
				}
			}
			if got := string(f.Bytes()); got != tt.file {
				t.Errorf("a failed edit changed the file to %q", got)
			}
		})
	}
}

func TestParseRefusesUTF16(t *testing.T) {
	for _, data := range [][]byte{{0xFF, 0xFE, 'a', 0}, {0xFE, 0xFF, 0, 'a'}} {
		_, err := Parse(data)
		var e *Error
		if !errors.As(err, &e) || e.Reason != Encoding || !strings.Contains(e.Msg, "UTF-16") {
			t.Errorf("Parse(% x) = %v, want an Encoding error naming UTF-16", data, err)
		}
	}
}

func TestVisible(t *testing.T) {
	if got, want := Visible("\tx = 1  \r\n"), "→x = 1··␍"; got != want {
		t.Errorf("Visible = %q, want %q", got, want)
	}
}
