package pin

import (
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

var (
	sumA = Sum([]byte("module a"))
	sumB = Sum([]byte("module b"))
)

// A malformed lock is refused with its file and line,
// never read as a partial list that would quietly pin less.
func TestParseErrorsNameTheLine(t *testing.T) {
	tests := []struct {
		name, text string
		line       int
		want       string
	}{
		{"one space", "# c\n" + sumA + " a.wasm\n", 2, "two spaces"},
		{"upper-case hex", strings.ToUpper(sumA) + "  a.wasm\n", 1, "lowercase hex"},
		{"short hash", sumA[:63] + "  a.wasm\n", 1, "64 lowercase hex"},
		{"not hex", strings.Repeat("g", 64) + "  a.wasm\n", 1, "64 lowercase hex"},
		{"no path", sumA + "  \n", 1, "path is empty"},
		{"absolute", sumA + "  /etc/a.wasm\n", 1, "absolute"},
		{"dot-dot", sumA + "  ../a.wasm\n", 1, "leaves the plugin directory"},
		{"dot-dot inside", sumA + "  x/../../a.wasm\n", 1, "leaves the plugin directory"},
		{"not clean", sumA + "  ./a.wasm\n", 1, "not clean"},
		{"backslash", sumA + "  sub\\a.wasm\n", 1, "separator"},
		{"trailing space", sumA + "  a.wasm \n", 1, "trailing spaces"},
		{"duplicate", sumA + "  a.wasm\n\n" + sumB + "  a.wasm\n", 3, "listed twice (first on line 1)"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Parse("dir/toolhost.lock", strings.NewReader(tt.text))
			var pe *ParseError
			if !errors.As(err, &pe) || pe.Line != tt.line {
				t.Fatalf("err = %v, want a ParseError on line %d", err, tt.line)
			}
			for _, want := range []string{"dir/toolhost.lock:" + strconv.Itoa(tt.line), tt.want, "toolhost lock"} {
				if !strings.Contains(err.Error(), want) {
					t.Errorf("%q lacks %q", err, want)
				}
			}
		})
	}
}

// Check accepts only the bytes locked under their path,
// and its refusals name the plugin, both hashes and what to do.
func TestCheck(t *testing.T) {
	l, err := Parse("toolhost.lock", strings.NewReader("# comment\n\n"+sumA+"  a.wasm\r\n"+sumB+"  sub/b.wasm\n"))
	if err != nil {
		t.Fatal(err)
	}
	if err := l.Check("a.wasm", []byte("module a")); err != nil {
		t.Errorf("locked module refused: %v", err)
	}
	if err := l.Check("sub/b.wasm", []byte("module b")); err != nil {
		t.Errorf("locked module in a subdirectory refused: %v", err)
	}

	err = l.Check("a.wasm", []byte("module b"))
	var me *MismatchError
	if !errors.As(err, &me) || me.Plugin != "a.wasm" || me.Got != sumB || me.Want != sumA {
		t.Fatalf("changed module: %v, want a MismatchError", err)
	}
	for _, want := range []string{"a.wasm", sumA, sumB, "toolhost.lock", "run toolhost lock", "restore"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("%q lacks %q", err, want)
		}
	}

	err = l.Check("c.wasm", []byte("module c"))
	var ue *UnlistedError
	if !errors.As(err, &ue) || ue.Plugin != "c.wasm" {
		t.Fatalf("unlisted module: %v, want an UnlistedError", err)
	}
	for _, want := range []string{"c.wasm", Sum([]byte("module c")), "not listed", "run toolhost lock"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("%q lacks %q", err, want)
		}
	}
	// The path is matched as written: a module elsewhere is not vouched for.
	if err := l.Check("b.wasm", []byte("module b")); !errors.As(err, &ue) {
		t.Errorf("b.wasm matched sub/b.wasm's entry: %v", err)
	}
}

// A directory without a lock pins nothing; Read says so with a nil lock.
func TestReadAbsent(t *testing.T) {
	l, err := Read(filepath.Join(t.TempDir(), FileName))
	if l != nil || err != nil {
		t.Fatalf("Read of an absent lock = %v, %v; want nil, nil", l, err)
	}
	if _, err := Read(t.TempDir()); err == nil {
		t.Error("Read of a directory succeeded")
	}
}

// Write is deterministic (sorted, one format) and reads back the same.
func TestWriteRoundTrip(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, FileName)
	entries := []Entry{{Path: "sub/b.wasm", SHA256: sumB}, {Path: "a.wasm", SHA256: sumA}}
	if err := Write(file, entries); err != nil {
		t.Fatal(err)
	}
	first, _ := os.ReadFile(file)
	if err := Write(file, []Entry{entries[1], entries[0]}); err != nil {
		t.Fatal(err)
	}
	second, _ := os.ReadFile(file)
	if string(first) != string(second) {
		t.Errorf("two writes of the same entries differ:\n%s\n%s", first, second)
	}
	want := header + sumA + "  a.wasm\n" + sumB + "  sub/b.wasm\n"
	if string(first) != want {
		t.Errorf("lock =\n%s\nwant\n%s", first, want)
	}
	l, err := Read(file)
	if err != nil {
		t.Fatal(err)
	}
	got := l.Entries()
	if len(got) != 2 || got[0] != entries[1] || got[1] != entries[0] {
		t.Errorf("entries read back = %v", got)
	}
	if left, _ := filepath.Glob(filepath.Join(dir, ".*tmp*")); len(left) > 0 {
		t.Errorf("temporary files left: %v", left)
	}
}

// Write refuses what Parse would refuse, so it never writes a lock the
// host cannot read.
func TestWriteRefusesBadEntries(t *testing.T) {
	dir := t.TempDir()
	for _, entries := range [][]Entry{
		{{Path: "../a.wasm", SHA256: sumA}},
		{{Path: "a.wasm", SHA256: "x"}},
		{{Path: "a.wasm", SHA256: sumA}, {Path: "a.wasm", SHA256: sumB}},
	} {
		if err := Write(filepath.Join(dir, FileName), entries); err == nil {
			t.Errorf("Write(%v) succeeded", entries)
		}
	}
	if _, err := os.Stat(filepath.Join(dir, FileName)); err == nil {
		t.Error("a refused Write left a lock")
	}
}

// A lock saved by an editor that adds a byte order mark
// or CRLF line endings still reads.
func TestParseBOMAndCRLF(t *testing.T) {
	sum := Sum([]byte("module"))
	l, err := Parse("toolhost.lock", strings.NewReader("\ufeff# toolhost.lock\r\n"+sum+"  a.wasm\r\n"))
	if err != nil {
		t.Fatal(err)
	}
	if err := l.Check("a.wasm", []byte("module")); err != nil {
		t.Error(err)
	}
	l, err = Parse("toolhost.lock", strings.NewReader("\ufeff"+sum+"  a.wasm\n"))
	if err != nil || l.Check("a.wasm", []byte("module")) != nil {
		t.Errorf("a lock whose first line is an entry after a byte order mark: %v", err)
	}
}
