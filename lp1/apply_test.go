package lp1

import (
	"errors"
	"reflect"
	"strings"
	"testing"
)

// The table of docs/LP1.md "Newline model", plus its error rules.
func TestParseFile(t *testing.T) {
	tests := []struct {
		in    string
		lines []string
		final bool
		eol   EOL
	}{
		{"", nil, false, LF},
		{"a", []string{"a"}, false, LF},
		{"a\n", []string{"a"}, true, LF},
		{"a\nb", []string{"a", "b"}, false, LF},
		{"a\nb\n", []string{"a", "b"}, true, LF},
		{"\n", []string{""}, true, LF},
		{"a\r\nb\r\n", []string{"a", "b"}, true, CRLF},
		{"a\r\nb", []string{"a", "b"}, false, CRLF},
		{"\r\n\r\n", []string{"", ""}, true, CRLF},
		{"\n\n", []string{"", ""}, true, LF},
	}
	for _, tt := range tests {
		f, err := ParseFile(tt.in)
		if err != nil {
			t.Errorf("ParseFile(%q): %v", tt.in, err)
			continue
		}
		if !reflect.DeepEqual(f.Lines, tt.lines) || f.FinalNewline != tt.final || f.EOL != tt.eol {
			t.Errorf("ParseFile(%q) = %q final=%v eol=%v, want %q final=%v eol=%v", tt.in, f.Lines, f.FinalNewline, f.EOL, tt.lines, tt.final, tt.eol)
		}
		if got := f.String(); got != tt.in {
			t.Errorf("ParseFile(%q).String() = %q", tt.in, got)
		}
	}
}

func TestParseFileErrors(t *testing.T) {
	tests := []struct {
		in   string
		line int
		msg  string
	}{
		{"a\rb\n", 1, "bare carriage return"},
		{"a\n\r", 2, "bare carriage return"},
		{"a\nb\r", 2, "bare carriage return"},
		{"a\r\r\n", 1, "bare carriage return"},
		{"a\nb\r\n", 2, "mixed line endings (CRLF in a LF file)"},
		{"a\r\nb\nc\r\n", 2, "mixed line endings (LF in a CRLF file)"},
	}
	for _, tt := range tests {
		_, err := ParseFile(tt.in)
		var ee *EOLError
		if !errors.As(err, &ee) || ee.Line != tt.line || !strings.Contains(ee.Msg, tt.msg) {
			t.Errorf("ParseFile(%q) error = %v, want line %d containing %q", tt.in, err, tt.line, tt.msg)
		}
	}
}

// applyText applies patch to files (path -> content; a missing key is a
// missing file) and returns the new contents.
func applyText(t *testing.T, patch string, files map[string]string) (map[string]string, error) {
	t.Helper()
	p, err := Parse(patch)
	if err != nil {
		return nil, err
	}
	targets := make(map[string]*Target)
	err = Apply(p, func(path string) (*Target, error) {
		tg := &Target{Path: path}
		if content, ok := files[path]; ok {
			if tg.File, err = ParseFile(content); err != nil {
				return nil, err
			}
		}
		targets[path] = tg
		return tg, nil
	})
	if err != nil {
		return nil, err
	}
	out := make(map[string]string)
	for path, tg := range targets {
		if tg.File != nil {
			out[path] = tg.File.String()
		}
	}
	return out, nil
}

func lp1(body string) string { return "LP1\nF f\n" + body + "END\n" }

// One case per rule of docs/LP1.md "Operations", "Matching", "Newline
// model" and "File existence" (FR-TOOL-PATCH-01).
func TestApply(t *testing.T) {
	tests := []struct {
		name  string
		file  *string // nil: the file does not exist
		patch string
		want  string
	}{
		{"R replaces", ptr("a\nb\nc\n"), lp1("R\nb\n.\nB1\nB2\n.\n"), "a\nB1\nB2\nc\n"},
		{"R multi-line find", ptr("a\nb\nc\n"), lp1("R\na\nb\n.\nx\n.\n"), "x\nc\n"},
		{"R with empty block deletes", ptr("a\nb\nc\n"), lp1("R\nb\n.\n.\n"), "a\nc\n"},
		{"I inserts after", ptr("a\nb\n"), lp1("I\na\n.\nx\n.\n"), "a\nx\nb\n"},
		{"P inserts before", ptr("a\nb\n"), lp1("P\nb\n.\nx\n.\n"), "a\nx\nb\n"},
		{"E deletes", ptr("a\nb\nc\n"), lp1("E\nb\nc\n.\n"), "a\n"},
		{"T appends", ptr("a\n"), lp1("T\nb\nc\n.\n"), "a\nb\nc\n"},
		{"B prepends", ptr("a\n"), lp1("B\nz\n.\n"), "z\na\n"},
		{"occ picks the n-th match", ptr("x\ny\nx\ny\nx\n"), lp1("R 2\nx\n.\nX\n.\n"), "x\ny\nX\ny\nx\n"},
		{"occ counts overlapping matches", ptr("a\na\na\n"), lp1("R 2\na\na\n.\nb\n.\n"), "a\nb\n"},
		{"occ 1 on a unique match", ptr("a\nb\n"), lp1("E 1\nb\n.\n"), "a\n"},
		{"ops apply in order to the evolving file", ptr("a\n"), lp1("R\na\n.\nb\n.\nR\nb\n.\nc\n.\n"), "c\n"},
		{"earlier op makes a later match unique", ptr("x\nx\n"), lp1("R 1\nx\n.\ny\n.\nE\nx\n.\n"), "y\n"},
		{"empty lines in blocks match empty lines", ptr("a\n\nb\n"), lp1("R\na\n\n.\nc\n\n\n.\n"), "c\n\n\nb\n"},
		{"dot-stuffed lines match", ptr(".\n..\n.x\n"), lp1("R\n..\n...\n..x\n.\n..y\n.\n"), ".y\n"},
		{"whitespace is significant", ptr("  a\na\n"), lp1("E\na\n.\n"), "  a\n"},
		{"final newline kept", ptr("a\nb"), lp1("R\na\n.\nx\n.\n"), "x\nb"},
		{"final newline kept when appending", ptr("a"), lp1("T\nb\n.\n"), "a\nb"},
		{"CRLF file stays CRLF", ptr("a\r\nb\r\n"), lp1("R\nb\n.\nc\nd\n.\n"), "a\r\nc\r\nd\r\n"},
		{"CRLF file without final newline", ptr("a\r\nb"), lp1("T\nc\n.\n"), "a\r\nb\r\nc"},
		{"CRLF patch on LF file", ptr("a\nb\n"), "LP1\r\nF f\r\nR\r\nb\r\n.\r\nc\r\n.\r\nEND\r\n", "a\nc\n"},
		{"single-line file without EOL grows with LF", ptr("a"), lp1("T\nb\n.\nN +\n"), "a\nb\n"},
		{"N + adds final newline", ptr("a"), lp1("N +\n"), "a\n"},
		{"N - removes final newline", ptr("a\nb\n"), lp1("N -\n"), "a\nb"},
		{"N + on empty file", ptr(""), lp1("N +\n"), "\n"},
		{"N - on a lone newline", ptr("\n"), lp1("N -\n"), ""},
		{"N - on a blank line and more", ptr("\n\n"), lp1("N -\n"), "\n"},
		{"last N wins", ptr("a"), lp1("N +\nN -\nN +\n"), "a\n"},
		{"N + is idempotent", ptr("a\n"), lp1("N +\n"), "a\n"},
		{"deleting every line empties the file", ptr("a\n"), lp1("E\na\n.\n"), ""},
		{"T on an empty file keeps no final newline", ptr(""), lp1("T\na\n.\n"), "a"},
		{"T creates a missing file", nil, lp1("T\na\nb\n.\n"), "a\nb\n"},
		{"B creates a missing file", nil, lp1("B\na\n.\n"), "a\n"},
		{"T with empty block creates an empty file", nil, lp1("T\n.\n"), ""},
		{"created file then edited", nil, lp1("T\na\n.\nR\na\n.\nb\n.\n"), "b\n"},
		{"no change", ptr("a\n"), lp1("R\na\n.\na\n.\n"), "a\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			files := map[string]string{}
			if tt.file != nil {
				files["f"] = *tt.file
			}
			got, err := applyText(t, tt.patch, files)
			if err != nil {
				t.Fatalf("apply: %v", err)
			}
			if got["f"] != tt.want {
				t.Errorf("result = %q, want %q", got["f"], tt.want)
			}
		})
	}
}

func ptr(s string) *string { return &s }

func TestApplyErrors(t *testing.T) {
	tests := []struct {
		name  string
		file  *string
		patch string
		op    int
		msg   string
	}{
		{"no match", ptr("a\n"), lp1("E\nb\n.\n"), 1, `find block (1 line: "b") not found; LP1 compares whole lines exactly`},
		{"near miss names the line", ptr("x\n  a \n"), lp1("E\na\n.\n"), 1, "line 2 matches if leading and trailing whitespace is ignored"},
		{"ambiguous", ptr("a\nb\na\n"), lp1("R\na\n.\nc\n.\n"), 1, `find block (1 line: "a") matches 2 times (at lines 1, 3); add context lines to make it unique or choose one with an occurrence number (R 1 to R 2)`},
		{"occurrence out of range", ptr("a\na\n"), lp1("E 3\na\n.\n"), 1, "occurrence 3 requested but find block (1 line: \"a\") matches only 2 time(s) (at lines 1, 2)"},
		{"second op fails", ptr("a\n"), lp1("T\nb\n.\nE\nc\nd\n.\n"), 2, `find block (2 lines, first "c") not found`},
		{"match longer than file", ptr("a\n"), lp1("E\na\nb\n.\n"), 1, "not found"},
		{"R on missing file", nil, lp1("R\na\n.\nb\n.\n"), 1, "the file does not exist; only T and B can create a file"},
		{"I on missing file", nil, lp1("I\na\n.\nb\n.\n"), 1, "does not exist"},
		{"P on missing file", nil, lp1("P\na\n.\nb\n.\n"), 1, "does not exist"},
		{"E on missing file", nil, lp1("E\na\n.\n"), 1, "does not exist"},
		{"N on missing file", nil, lp1("N +\n"), 1, "does not exist"},
		{"empty file has no match", ptr(""), lp1("E\n\n.\n"), 1, "not found"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			files := map[string]string{}
			if tt.file != nil {
				files["f"] = *tt.file
			}
			_, err := applyText(t, tt.patch, files)
			var ae *ApplyError
			if !errors.As(err, &ae) {
				t.Fatalf("error = %v, want *ApplyError", err)
			}
			if ae.Op != tt.op || ae.Path != "f" || ae.Section != 1 || !strings.Contains(ae.Msg, tt.msg) {
				t.Errorf("error = %v\nwant op %d containing %q", ae, tt.op, tt.msg)
			}
		})
	}
}

func TestApplyErrorNamesSectionAndLines(t *testing.T) {
	patch := "LP1\nF a\nT\nx\n.\nF \"b c\"\nN +\nR\nzz\n.\n.\nEND\n"
	_, err := applyText(t, patch, map[string]string{"a": "", "b c": "y\n"})
	want := `section 2 (F b c at patch line 6), operation 2 (R at patch line 8): find block (1 line: "zz") not found`
	if err == nil || !strings.HasPrefix(err.Error(), want) {
		t.Errorf("error = %v\nwant prefix %s", err, want)
	}
}

// Sections naming the same file accumulate their edits, and the loader's
// error is returned unchanged in patch order.
func TestApplyAcrossSections(t *testing.T) {
	patch := "LP1\nF a\nT\n1\n.\nF b\nT\n2\n.\nF a\nR\n1\n.\none\n.\nEND\n"
	got, err := applyText(t, patch, map[string]string{"a": "0\n", "b": ""})
	if err != nil {
		t.Fatal(err)
	}
	if want := map[string]string{"a": "0\none\n", "b": "2"}; !reflect.DeepEqual(got, want) {
		t.Errorf("got %q, want %q", got, want)
	}

	p, _ := Parse(patch)
	loadErr := errors.New("not read")
	err = Apply(p, func(path string) (*Target, error) {
		if path == "b" {
			return nil, loadErr
		}
		return &Target{Path: path, File: &File{}}, nil
	})
	if err != loadErr {
		t.Errorf("Apply error = %v, want the loader's error", err)
	}
}

// A loader may return one target for two spellings of a file.
func TestApplySharedTarget(t *testing.T) {
	p, err := Parse("LP1\nF a\nR\nx\n.\ny\n.\nF ./a\nR\ny\n.\nz\n.\nEND\n")
	if err != nil {
		t.Fatal(err)
	}
	shared := &Target{Path: "a", File: &File{Lines: []string{"x"}, FinalNewline: true}}
	if err := Apply(p, func(string) (*Target, error) { return shared, nil }); err != nil {
		t.Fatal(err)
	}
	if got := shared.File.String(); got != "z\n" {
		t.Errorf("shared target = %q, want %q", got, "z\n")
	}
}
