package textedit

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"
)

// TestByteOrderMarkQuoted: read_file shows a file's byte order mark as
// U+FEFF at the start of line 1, and a model quoting that line quotes
// it. At the start of the file it is the mark: found there, written once.
func TestByteOrderMarkQuoted(t *testing.T) {
	const bom = "\ufeff"
	tests := []struct {
		name, file, old, new string
		want                 string
		setAside             bool
		fails                Reason
	}{
		{"old with the mark", bom + "hello\nworld\n", bom + "hello", "bye", bom + "bye\nworld\n", true, 0},
		{"old and new with the mark", bom + "hello\nworld\n", bom + "hello", bom + "bye", bom + "bye\nworld\n", true, 0},
		{"new with the mark", bom + "hello\nworld\n", "hello", bom + "bye", bom + "bye\nworld\n", true, 0},
		{"line-number prefix, then the mark", bom + "hello\nworld\n", "1→" + bom + "hello\n2→world", "1→" + bom + "hi\n2→world", bom + "hi\nworld\n", true, 0},
		{"mark not at the start of the file", bom + "x\nhello\n", bom + "hello", "bye", "", false, NotFound},
		{"new with the mark, not at the start", bom + "x\nhello\n", "hello", bom + "bye", bom + "x\n" + bom + "bye\n", false, 0},
		{"only the mark", bom + "x\n", bom, "y", "", false, Empty},
		{"no mark in the file: U+FEFF is text", "hello\n", "hello", bom + "bye", bom + "bye\n", false, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f, err := ParseString(tt.file)
			if err != nil {
				t.Fatal(err)
			}
			res, err := f.Replace(tt.old, tt.new, false)
			if tt.fails != 0 {
				var e *Error
				if !errors.As(err, &e) || e.Reason != tt.fails {
					t.Fatalf("error %v, want reason %d", err, tt.fails)
				}
				if got := string(f.Bytes()); got != tt.file {
					t.Fatalf("a failed edit wrote %q", got)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got := string(f.Bytes()); got != tt.want {
				t.Errorf("file %q, want %q", got, tt.want)
			}
			if res.BOM != tt.setAside {
				t.Errorf("result says the mark was set aside: %v, want %v", res.BOM, tt.setAside)
			}
		})
	}
	t.Run("region", func(t *testing.T) {
		f, _ := ParseString(bom + "hello\nworld\n")
		expected := bom + "hello\n"
		res, err := f.ReplaceLines(1, 1, bom+"bye", &expected)
		if err != nil {
			t.Fatal(err)
		}
		if got := string(f.Bytes()); got != bom+"bye\nworld\n" || !res.BOM {
			t.Errorf("file %q, set aside %v; want one mark and set aside", got, res.BOM)
		}
	})
}

// TestCarriageReturnLineBreaks: in a file whose line breaks are lone CRs
// (classic Mac OS), CR is the line break: a model's LF, CRLF or CR
// matches one, and what it writes is written with CR.
func TestCarriageReturnLineBreaks(t *testing.T) {
	tests := []struct {
		name, file, old, new, want string
		start, end                 int
	}{
		{"LF strings", "a\rb\rc\r", "b\n", "X\nY\n", "a\rX\rY\rc\r", 2, 3},
		{"within a line", "a\rb\rc\r", "b", "X\nY", "a\rX\rY\rc\r", 2, 3},
		{"CR strings", "a\rb\rc", "b\rc", "B\rC", "a\rB\rC", 2, 3},
		{"CRLF strings", "a\rb\rc\r", "a\r\nb\r\n", "z\r\n", "z\rc\r", 1, 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f, _ := ParseString(tt.file)
			if f.LineEnding() != "\r" {
				t.Fatalf("LineEnding %q, want CR", f.LineEnding())
			}
			res, err := f.Replace(tt.old, tt.new, false)
			if err != nil {
				t.Fatal(err)
			}
			if got := string(f.Bytes()); got != tt.want {
				t.Errorf("file %q, want %q", got, tt.want)
			}
			if res.Start != tt.start || res.End != tt.end {
				t.Errorf("lines %d-%d, want %d-%d", res.Start, res.End, tt.start, tt.end)
			}
		})
	}
	f, _ := ParseString("a\rb\r")
	var e *Error
	if _, err := f.ReplaceLines(1, 1, "x", nil); !errors.As(err, &e) || !strings.Contains(e.Msg, "carriage returns alone") {
		t.Errorf("region edit of a CR file: %v, want it refused with the reason", err)
	}
	if got := string(f.Bytes()); got != "a\rb\r" {
		t.Errorf("the refused edit wrote %q", got)
	}
}

// TestClosestStops: a failed search of a long old_string of one line
// repeated in a long file of that line ends, where comparing old's every
// line at every place in the file took minutes. The bound only proves it
// ends; the benchmark measures it.
func TestClosestStops(t *testing.T) {
	f, _ := ParseString(strings.Repeat("a\n", 200000))
	old := strings.Repeat("a\n", 20000) + "b"
	done := make(chan error, 1)
	go func() {
		_, err := f.Replace(old, "c", false)
		done <- err
	}()
	select {
	case err := <-done:
		var e *Error
		if !errors.As(err, &e) || e.Reason != NotFound || !slices.Equal(e.Lines, []int{1}) {
			t.Fatalf("error %v, want NotFound with the closest region at line 1", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("the failed search ran 30 s")
	}
}

// TestClosestLongOldString: an old_string longer than the lines closest
// compares is still placed where most of it is.
func TestClosestLongOldString(t *testing.T) {
	var file, old strings.Builder
	for i := 1; i <= 1000; i++ {
		fmt.Fprintf(&file, "line %d\n", i)
		switch {
		case i == 350:
			old.WriteString("line 350 changed\n")
		case i >= 300 && i < 400:
			fmt.Fprintf(&old, "line %d\n", i)
		}
	}
	f, _ := ParseString(file.String())
	_, err := f.Replace(old.String(), "x", false)
	var e *Error
	if !errors.As(err, &e) || e.Reason != NotFound || !slices.Equal(e.Lines, []int{300}) {
		t.Fatalf("error %v, want NotFound with the closest region at line 300", err)
	}
}

// TestIndentationNearMatchesStop: a file of the same line indented
// unevenly, and an old_string of many of those lines evenly indented,
// which the indentation layer finds everywhere and must reject
// everywhere: the search ends (not found) instead of costing the file's
// length times old_string's.
func TestIndentationNearMatchesStop(t *testing.T) {
	f, _ := ParseString(strings.Repeat("a\n  a\n", 50000))
	old := strings.Repeat("\ta\n", 20000)
	done := make(chan error, 1)
	go func() {
		_, err := f.Replace(old, "c", false)
		done <- err
	}()
	select {
	case err := <-done:
		var e *Error
		if !errors.As(err, &e) || e.Reason != NotFound {
			t.Fatalf("error %v, want NotFound", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("the search ran 30 s")
	}
}
