package output

import (
	"strings"
	"testing"
	"unicode/utf8"
)

// streamed is what a Stream makes of chunks, Flush included.
func streamed(chunks ...string) string {
	var s Stream
	var b strings.Builder
	for _, c := range chunks {
		b.WriteString(s.Write(c))
	}
	b.WriteString(s.Flush())
	return b.String()
}

// splitSequences are the sequences a chunk boundary must not split past
// the sanitizer, each between text.
var splitSequences = []struct{ name, in string }{
	{"osc 52 clipboard write", "a\x1b]52;c;aGk=\x07b"},
	{"clear screen", "a\x1b[2Jb"},
	{"window title", "a\x1b]0;pwned\x07b"},
	{"title ended by ESC \\", "a\x1b]2;pwned\x1b\\b"},
	{"title ended by 8-bit ST", "a\x1b]2;pwned\u009cb"},
	{"title ended by another escape", "a\x1b]2;t\x1b[31mb"},
	{"unterminated title at the end", "a\x1b]0;title"},
	{"c1 csi as utf-8", "a\u009b2Jb"},
	{"c1 csi as raw byte", "a\x9b2Jb"},
	{"nF escape", "a\x1b(Bb"},
	{"dcs", "a\x1bP1$r0m\x1b\\b"},
	{"3-byte rune", "a界b"},
	{"4-byte rune", "a🙂b"},
	{"2-byte rune", "aéb"},
	{"crlf and lone cr", "a\r\nb\rc\r"},
	{"invalid utf-8", "a\xe2\x82b\xff"},
	{"incomplete lead before c1 csi byte", "a\xe2\x9b2Jb"},
	{"esc at the end", "ab\x1b"},
	{"csi at the end", "ab\x1b[12"},
}

// Cut anywhere, once or twice, a stream sanitizes to
// exactly what the whole output does (FR-OUT-02).
func TestStream_EverySplit(t *testing.T) {
	for _, tt := range splitSequences {
		t.Run(tt.name, func(t *testing.T) {
			want := Sanitize(tt.in)
			for i := 0; i <= len(tt.in); i++ {
				if got := streamed(tt.in[:i], tt.in[i:]); got != want {
					t.Errorf("split at %d: %q + %q gives %q, want %q", i, tt.in[:i], tt.in[i:], got, want)
				}
				for j := i; j <= len(tt.in); j++ {
					if got := streamed(tt.in[:i], tt.in[i:j], tt.in[j:]); got != want {
						t.Errorf("split at %d and %d: gives %q, want %q", i, j, got, want)
					}
				}
			}
			bytewise := make([]string, len(tt.in))
			for i := 0; i < len(tt.in); i++ {
				bytewise[i] = tt.in[i : i+1]
			}
			if got := streamed(bytewise...); got != want {
				t.Errorf("byte by byte: %q, want %q", got, want)
			}
		})
	}
}

// A Stream is reusable after Flush, and a clean chunk costs nothing.
func TestStream_FlushResets(t *testing.T) {
	var s Stream
	if got := s.Write("a\x1b]0;t"); got != "a" {
		t.Fatalf("Write = %q, want %q", got, "a")
	}
	if got := s.Flush(); got != "0;t" {
		t.Fatalf("Flush = %q, want the unterminated string's text %q", got, "0;t")
	}
	if got := s.Write("\x07x"); got != "x" {
		t.Errorf("after Flush, Write = %q: the old string leaked into the new stream", got)
	}
	plain := "plain 日本語\n"
	if n := testing.AllocsPerRun(100, func() { s.Write(plain) }); n != 0 {
		t.Errorf("%v allocations for a clean chunk", n)
	}
}

// A sequence that never ends cannot make a Stream hold
// more than maxHeld bytes beyond the chunk it is given; what outgrows the
// bound is dropped, and the output after its end comes through.
func TestStream_HoldsAtMostMaxHeld(t *testing.T) {
	const chunk = 1000
	tests := []struct {
		name, open, fill, end, want string
	}{
		{"osc never ended", "\x1b]52;c;", "QUFB", "", ""},
		{"osc ended late", "\x1b]52;c;", "QUFB", "\x07after", "after"},
		{"osc ended late by ESC \\", "\x1b]0;", "t", "\x1b\\after", "after"},
		{"osc ended late by 8-bit ST", "\x1b]0;", "t", "\u009cafter", "after"},
		{"csi parameters", "\x1b[", "1;", "mafter", "after"},
		{"c1 csi parameters", "\u009b", "1;", "mafter", "after"},
		{"escape intermediates", "\x1b", " ", "Bafter", "after"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var s Stream
			var out strings.Builder
			out.WriteString(s.Write("before"))
			out.WriteString(s.Write(tt.open))
			body := strings.Repeat(tt.fill, (1<<20)/len(tt.fill))
			for len(body) > 0 {
				n := min(chunk, len(body))
				out.WriteString(s.Write(body[:n]))
				body = body[n:]
				if len(s.held) > maxHeld+chunk {
					t.Fatalf("holds %d bytes, more than %d", len(s.held), maxHeld+chunk)
				}
			}
			// The terminator split across chunks as well.
			for i := 0; i < len(tt.end); i++ {
				out.WriteString(s.Write(tt.end[i : i+1]))
			}
			out.WriteString(s.Flush())
			if got := out.String(); got != "before"+tt.want {
				t.Errorf("got %q (%d bytes), want %q", got[:min(len(got), 80)], len(got), "before"+tt.want)
			}
		})
	}
}

func FuzzStream(f *testing.F) {
	for _, tt := range splitSequences {
		f.Add(tt.in, []byte{1, 3, 2})
	}
	f.Add("\x1b]0;\x1b", []byte{4})
	f.Add("\x1b]0;\xc2\x9c", []byte{5})
	f.Fuzz(func(t *testing.T, s string, cuts []byte) {
		if len(s) > maxHeld {
			t.Skip("the bound may drop a long control string that Sanitize keeps as text")
		}
		var chunks []string
		rest := s
		for _, c := range cuts {
			n := min(int(c), len(rest))
			chunks, rest = append(chunks, rest[:n]), rest[n:]
		}
		chunks = append(chunks, rest)
		got, want := streamed(chunks...), Sanitize(s)
		if got != want {
			t.Fatalf("chunks %q give %q, want Sanitize of the whole, %q", chunks, got, want)
		}
		if !utf8.ValidString(got) {
			t.Fatalf("invalid UTF-8: %q", got)
		}
	})
}
