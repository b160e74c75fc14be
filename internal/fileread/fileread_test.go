package fileread

import (
	"strings"
	"testing"
)

func TestNumber(t *testing.T) {
	tests := []struct {
		name, in string
		first    uint32
		want     string
	}{
		{"empty", "", 1, ""},
		{"one line", "alpha\n", 1, "1→alpha\n"},
		{"no final newline", "a\nb", 1, "1→a\n2→b"},
		{"range starts later", "x\ny\n", 98, "98→x\n99→y\n"},
		{"empty lines", "\n\n", 1, "1→\n2→\n"},
		{"crlf kept", "a\r\nb\r\n", 1, "1→a\r\n2→b\r\n"},
		{"tabs kept", "\tgo\n", 7, "7→\tgo\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := string(Number([]byte(tt.in), tt.first)); got != tt.want {
				t.Errorf("Number(%q, %d) = %q, want %q", tt.in, tt.first, got, tt.want)
			}
		})
	}
}

func TestShowCutsAtWholeLines(t *testing.T) {
	// Ten lines of 40 bytes: more than a note and two lines.
	var b strings.Builder
	for _, w := range []string{"one", "two", "three", "four", "five", "six", "seven", "eight", "nine", "ten"} {
		b.WriteString(w + strings.Repeat(".", 39-len(w)) + "\n")
	}
	data := []byte(b.String())
	line := func(w string) string { return w + strings.Repeat(".", 39-len(w)) + "\n" }
	tests := []struct {
		name     string
		o        Options
		partial  bool
		want     string // prefix of the text
		wantNote string // in the text when cut
		cut      bool
	}{
		{"fits", Options{Room: 1000, Cut: true}, false, string(data), "", false},
		{"fits without cut", Options{Room: 3}, false, string(data), "", false},
		{"fits in the room and the slack", Options{Room: 300, Slack: 100, Cut: true}, false, string(data), "", false},
		{"one byte past both", Options{Room: 300, Slack: 99, Cut: true}, false, line("one") + line("two") + line("three") + line("four") + line("five") + line("six") + line("seven") + Truncated, "start_line", true},
		{"partial fits still says so", Options{Room: 1000, Cut: true}, true, string(data) + Truncated, "lines 1-10 of f.txt (500 bytes); read on with read_file start_line 11", true},
		{"cut", Options{Room: 85, Cut: true}, false, line("one") + line("two") + "[truncated] showing lines 1-2 of", "start_line 3", true},
		{"numbered and cut", Options{Room: 85, Cut: true, LineNumbers: true}, false, "1→" + line("one") + "[truncated] showing lines 1-1", "start_line 2", true},
		{"nothing fits", Options{Room: 10, Cut: true}, false, Truncated + " not even line 1 fits", "read_file start_line and end_line", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, cut, shown := show(data, 1, tt.o, tt.partial, "f.txt", 500)
			if cut != tt.cut || !strings.HasPrefix(got, tt.want) || !strings.Contains(got, tt.wantNote) {
				t.Fatalf("show = %q, cut %v; want prefix %q containing %q, cut %v", got, cut, tt.want, tt.wantNote, tt.cut)
			}
			// Nothing of the file is shown only when not a line fits,
			// and then the read must not count as one.
			if want := !strings.HasPrefix(got, Truncated); shown != want {
				t.Errorf("show says shown %v, want %v", shown, want)
			}
			room := tt.o.Room
			if !cut {
				room += tt.o.Slack // no note: the text may use the slack
			}
			if body, _, _ := strings.Cut(got, Truncated); tt.o.Cut && int64(len(body)) > room {
				t.Errorf("show returned %d bytes of text, more than the room of %d", len(body), room)
			}
			if note := len(got) - len(strings.SplitN(got, Truncated, 2)[0]); note > len("f.txt")+MaxNote {
				t.Errorf("the note is %d bytes, more than len(path)+MaxNote", note)
			}
			if cut {
				body, _, _ := strings.Cut(got, Truncated)
				if body != "" && !strings.HasSuffix(body, "\n") {
					t.Errorf("cut inside a line: %q", body)
				}
			}
		})
	}
}

// TestShowEmpty: an empty file, or an empty range of one, is shown whole.
func TestShowEmpty(t *testing.T) {
	for _, o := range []Options{{Cut: true}, {Room: 10, Cut: true, LineNumbers: true}, {}} {
		if got, cut, shown := show(nil, 1, o, false, "e.txt", 0); got != "" || cut || !shown {
			t.Errorf("show(empty, %+v) = %q, cut %v, shown %v; want \"\", not cut, shown", o, got, cut, shown)
		}
	}
	if got, _, shown := show(nil, 1, Options{Room: 100, Cut: true}, true, "big.txt", 1<<20); shown || !strings.Contains(got, "not even line 1 fits") {
		t.Errorf("a first line past the read limit: %q, shown %v; want the note alone, not shown", got, shown)
	}
}

// TestSureToShow: a read is recorded as it is made only when whatever the
// file holds, some of it is shown; otherwise Read looks first.
func TestSureToShow(t *testing.T) {
	tests := []struct {
		name  string
		o     Options
		limit int64
		want  bool
	}{
		{"read_file: room for the read limit", Options{Room: 60 << 10, Slack: 4 << 10, Cut: true}, 64 << 10, true},
		{"one byte short of the read limit", Options{Room: 60 << 10, Slack: 4<<10 - 1, Cut: true}, 64 << 10, false},
		{"line numbers lengthen the text", Options{Room: 1 << 20, Cut: true, LineNumbers: true}, 64 << 10, false},
		{"partial files are cut", Options{Room: 1 << 20, Cut: true, Partial: true}, 64 << 10, false},
		{"max_bytes_each 1", Options{Room: 1, Cut: true, Partial: true}, 64 << 10, false},
		{"not cut", Options{Room: 100}, 64 << 10, true},
		{"not cut, no room for a binary byte", Options{Room: 20}, 64 << 10, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := sureToShow(tt.o, tt.limit); got != tt.want {
				t.Errorf("sureToShow(%+v, %d) = %v, want %v", tt.o, tt.limit, got, tt.want)
			}
		})
	}
}
