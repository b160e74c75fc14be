package output

import (
	"strings"
	"testing"
	"unicode/utf8"
)

// T-OUT-01: the marker is inside the effective limit and no rune is split.
func TestTruncate_T_OUT_01(t *testing.T) {
	long := strings.Repeat("x", 100)
	cjk := strings.Repeat("界", 40) // 3 bytes each
	m := len(TruncationMarker)
	tests := []struct {
		name string
		s    string
		max  int
		want string
	}{
		{"fits", "short", 10, "short"},
		{"exact fit", "12345", 5, "12345"},
		{"cut", long, m + 10, strings.Repeat("x", 10) + TruncationMarker},
		{"limit equals marker", long, m, TruncationMarker},
		{"limit below marker", long, 5, TruncationMarker[:5]},
		{"zero", long, 0, ""},
		{"negative", long, -3, ""},
		{"multibyte boundary", cjk, m + 4, "界" + TruncationMarker},
		{"multibyte exact", cjk, m + 6, "界界" + TruncationMarker},
	}
	for _, tt := range tests {
		got := Truncate(tt.s, tt.max)
		if got != tt.want {
			t.Errorf("%s: Truncate = %q, want %q", tt.name, got, tt.want)
		}
		if len(got) > max(tt.max, 0) {
			t.Errorf("%s: %d bytes exceed the limit %d", tt.name, len(got), tt.max)
		}
	}
}

// T-OUT-02: terminal controls are removed, text is kept byte for byte.
func TestSanitize_T_OUT_02(t *testing.T) {
	tests := []struct{ name, in, want string }{
		{"plain", "hello\tworld\n", "hello\tworld\n"},
		{"colors", "\x1b[31mred\x1b[0m ok", "red ok"},
		{"cursor moves", "a\x1b[2J\x1b[H\x1b[10;20Hb", "ab"},
		{"osc title bel", "\x1b]0;pwned\x07text", "text"},
		{"osc title st", "\x1b]2;pwned\x1b\\text", "text"},
		{"osc 8 hyperlink", "\x1b]8;;http://evil\x1b\\click\x1b]8;;\x1b\\", "click"},
		{"dcs", "\x1bP1$r0m\x1b\\after", "after"},
		{"c1 csi utf8", "a\u009b31mb", "ab"},
		{"c1 csi raw byte", "a\x9b31mb", "ab"},
		{"bell backspace nul del", "a\x07b\x08c\x00d\x7fe", "abcde"},
		{"crlf kept, lone cr removed", "a\r\nb\rc", "a\r\nbc"},
		{"two-byte escape", "a\x1b7b\x1b8c", "abc"},
		{"invalid utf8", "a\xffb", "a\uFFFDb"},
		{"emoji and cjk", "🙂 日本語 é", "🙂 日本語 é"},
		{"esc at end", "abc\x1b", "abc"},
	}
	for _, tt := range tests {
		if got := Sanitize(tt.in); got != tt.want {
			t.Errorf("%s: Sanitize(%q) = %q, want %q", tt.name, tt.in, got, tt.want)
		}
	}
}

func FuzzSanitize(f *testing.F) {
	for _, s := range []string{"plain", "\x1b[31mx", "\x1b]0;t\x07", "a\r\nb\r", "\x9b1m", "\xff\xfe", "\u009c"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		out := Sanitize(s)
		if !utf8.ValidString(out) {
			t.Fatalf("invalid UTF-8 out of %q", s)
		}
		for i, r := range out {
			bad := (r < 0x20 && r != '\n' && r != '\t' && r != '\r') || r == 0x7f || (r >= 0x80 && r <= 0x9f)
			if r == '\r' && !strings.HasPrefix(out[i:], "\r\n") {
				bad = true
			}
			if bad {
				t.Fatalf("Sanitize(%q) = %q keeps control %U", s, out, r)
			}
		}
		if again := Sanitize(out); again != out {
			t.Fatalf("not idempotent: %q -> %q -> %q", s, out, again)
		}
	})
}

func FuzzTruncate(f *testing.F) {
	f.Add("hello world", 5)
	f.Add(strings.Repeat("界", 20), 30)
	f.Fuzz(func(t *testing.T, s string, n int) {
		out := Truncate(s, n)
		if len(out) > max(n, 0) {
			t.Fatalf("Truncate(%q, %d) = %d bytes", s, n, len(out))
		}
		if utf8.ValidString(s) && !utf8.ValidString(out) && len(out) > len(TruncationMarker) {
			t.Fatalf("Truncate split a rune: %q", out)
		}
	})
}

func BenchmarkSanitizeClean(b *testing.B) {
	s := strings.Repeat("the quick brown fox jumps over the lazy dog\n", 2400)
	b.SetBytes(int64(len(s)))
	for b.Loop() {
		Sanitize(s)
	}
}

func BenchmarkSanitizeColored(b *testing.B) {
	s := strings.Repeat("\x1b[32mok\x1b[0m the quick brown fox\n", 4000)
	b.SetBytes(int64(len(s)))
	for b.Loop() {
		Sanitize(s)
	}
}
