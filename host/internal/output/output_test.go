package output

import (
	"strings"
	"testing"
	"unicode/utf8"
)

// T-OUT-01: the marker is inside the effective limit and no rune is split.
func TestTruncate_T_OUT_01(t *testing.T) {
	m := len(TruncationMarker)
	long := strings.Repeat("x", 100)
	cjk := strings.Repeat("界", 40)   // 3 bytes each
	emoji := strings.Repeat("🙂", 30) // 4 bytes each
	tests := []struct {
		name string
		s    string
		max  int
		want string
	}{
		{"empty", "", 0, ""},
		{"fits", "short", 10, "short"},
		{"exact fit", "12345", 5, "12345"},
		{"one over", "123456", 5, TruncationMarker[:5]},
		{"exact fit, longer than the marker", long, 100, long},
		{"one over, room for a body", long, 99, strings.Repeat("x", 99-m) + TruncationMarker},
		{"cut", long, m + 10, strings.Repeat("x", 10) + TruncationMarker},
		{"limit one above the marker", long, m + 1, "x" + TruncationMarker},
		{"limit equals the marker", long, m, TruncationMarker},
		{"limit one below the marker", long, m - 1, TruncationMarker[:m-1]},
		{"limit below the marker", long, 5, TruncationMarker[:5]},
		{"limit 1", long, 1, "\n"},
		{"zero", long, 0, ""},
		{"negative", long, -3, ""},
		{"negative, empty input", "", -1, ""},
		{"3-byte rune cut after 1 byte", cjk, m + 4, "界" + TruncationMarker},
		{"3-byte rune cut after 2 bytes", cjk, m + 5, "界" + TruncationMarker},
		{"3-byte runes exact", cjk, m + 6, "界界" + TruncationMarker},
		{"4-byte rune cut inside", emoji, m + 7, "🙂" + TruncationMarker},
		{"4-byte rune cut before any", emoji, m + 3, TruncationMarker},
		{"4-byte runes exact", emoji, m + 8, "🙂🙂" + TruncationMarker},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := Truncate(tt.s, tt.max)
			if got != tt.want {
				t.Errorf("Truncate(%d bytes, %d) = %q, want %q", len(tt.s), tt.max, got, tt.want)
			}
			if len(got) > max(tt.max, 0) {
				t.Errorf("%d bytes exceed the limit %d", len(got), tt.max)
			}
			if !utf8.ValidString(got) {
				t.Errorf("invalid UTF-8: %q", got)
			}
		})
	}
}

// T-OUT-02: terminal controls are removed, text is kept byte for byte.
func TestSanitize_T_OUT_02(t *testing.T) {
	tests := []struct{ name, in, want string }{
		{"plain", "hello\tworld\n", "hello\tworld\n"},
		{"empty", "", ""},
		{"colors", "\x1b[31mred\x1b[0m ok \x1b[1;38;5;208mX\x1b[m", "red ok X"},
		{"24-bit color", "\x1b[38;2;255;0;0mR", "R"},
		{"cursor moves", "a\x1b[2J\x1b[H\x1b[10;20Hb\x1b[3Ac", "abc"},
		{"clear screen and scrollback", "\x1b[2J\x1b[3J\x1bcx", "x"},
		{"private mode", "\x1b[?25l\x1b[?1049hx", "x"},
		{"csi with intermediate", "\x1b[2 qx", "x"},
		{"osc title with BEL", "\x1b]0;pwned\x07text", "text"},
		{"osc title with ST", "\x1b]2;pwned\x1b\\text", "text"},
		{"osc title with 8-bit ST", "\x1b]2;pwned\u009ctext", "text"},
		{"osc 8 hyperlink", "\x1b]8;;http://evil\x1b\\click\x1b]8;;\x1b\\", "click"},
		{"osc 52 clipboard", "\x1b]52;c;cm0gLXJmIH4=\x07ok", "ok"},
		{"osc ended by another escape", "\x1b]0;t\x1b[31mx", "x"},
		{"osc aborted by CAN", "\x1b]0;t\x18x", "x"},
		{"osc unterminated keeps text", "a\x1b]0;title", "a0;title"},
		{"dcs", "\x1bP1$r0m\x1b\\after", "after"},
		{"sos pm apc", "\x1bXs\x1b\\\x1b^p\x1b\\\x1b_a\x1b\\x", "x"},
		{"two-byte escapes", "a\x1b7b\x1b8c\x1bMd", "abcd"},
		{"nF charset escape", "\x1b(Bx\x1b)0y", "xy"},
		{"esc at end", "abc\x1b", "abc"},
		{"esc esc", "a\x1b\x1b[1mb", "ab"},
		{"csi at end", "abc\x1b[12", "abc"},
		{"csi broken by newline", "a\x1b[3\nb", "a\nb"},
		{"c1 csi as utf-8", "a\u009b31mb", "ab"},
		{"c1 csi as raw byte", "a\x9b31mb", "ab"},
		{"other c1 controls", "a\u0085b\u008dc\u009dd", "abcd"},
		{"bell backspace nul", "a\x07b\x08c\x00d", "abcd"},
		{"del", "a\x7fb", "ab"},
		{"vertical tab form feed", "a\x0bb\x0cc", "abc"},
		{"crlf kept, lone cr removed", "a\r\nb\rc\r", "a\r\nbc"},
		{"cr before escape then lf", "a\r\x1b[0m\nb", "a\nb"},
		{"invalid utf-8", "a\xffb\xc3", "a\uFFFDb\uFFFD"},
		{"surrogate encoding", "a\xed\xa0\x80b", "a\uFFFD\uFFFD\uFFFDb"},
		{"emoji and cjk", "🙂 日本語 é 👩‍💻", "🙂 日本語 é 👩‍💻"},
		{"replacement char kept", "a\uFFFDb", "a\uFFFDb"},
		{"non-breaking space and bidi text kept", "a\u00a0b \u05d0", "a\u00a0b \u05d0"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := Sanitize(tt.in); got != tt.want {
				t.Errorf("Sanitize(%q) = %q, want %q", tt.in, got, tt.want)
			}
		})
	}
}

// Clean output, the common case, costs no allocation.
func TestSanitize_CleanDoesNotAllocate(t *testing.T) {
	s := strings.Repeat("plain text 日本語 🙂\r\n\t", 100)
	if got := Sanitize(s); got != s {
		t.Fatal("clean text changed")
	}
	if n := testing.AllocsPerRun(100, func() { Sanitize(s) }); n != 0 {
		t.Errorf("%v allocations for clean text", n)
	}
}

func FuzzSanitize(f *testing.F) {
	for _, s := range []string{
		"plain", "\x1b[31mx", "\x1b]0;t\x07", "\x1b]0;t", "a\r\nb\r", "\x9b1m", "\xff\xfe", "\u009c",
		"\x1bP\x1b\\", "\x1b(B", "\r\x1b[m\n", "日本\x1b[1m語", "\xc2", "\x1b[\xc2\x9b",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		out := Sanitize(s)
		if !utf8.ValidString(out) {
			t.Fatalf("Sanitize(%q) = %q: invalid UTF-8", s, out)
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
		// The fast path agrees with the slow one.
		if clean(s) != (strip(s) == s) {
			t.Fatalf("clean(%q) = %v, but strip gives %q", s, clean(s), strip(s))
		}
		if len(out) > 3*len(s) { // only U+FFFD (3 bytes) replaces a byte
			t.Fatalf("Sanitize(%q) grew to %d bytes", s, len(out))
		}
	})
}

func FuzzTruncate(f *testing.F) {
	f.Add("hello world", 5)
	f.Add(strings.Repeat("界", 20), 30)
	f.Add(strings.Repeat("🙂", 20), len(TruncationMarker)+3)
	f.Add("", -1)
	f.Fuzz(func(t *testing.T, s string, n int) {
		out := Truncate(s, n)
		if len(out) > max(n, 0) {
			t.Fatalf("Truncate(%q, %d) = %d bytes", s, n, len(out))
		}
		if utf8.ValidString(s) && !utf8.ValidString(out) {
			t.Fatalf("Truncate(%q, %d) = %q: split a rune", s, n, out)
		}
		switch {
		case len(s) <= n && out != s:
			t.Fatalf("Truncate(%q, %d) changed input that fits", s, n)
		case len(s) > n && n > len(TruncationMarker) && (!strings.HasSuffix(out, TruncationMarker) || !strings.HasPrefix(s, strings.TrimSuffix(out, TruncationMarker))):
			t.Fatalf("Truncate(%q, %d) = %q: not a prefix plus the marker", s, n, out)
		}
	})
}

func BenchmarkSanitize(b *testing.B) {
	const size = 100 << 10
	inputs := map[string]string{
		"clean":   strings.Repeat("the quick brown fox jumps over the lazy dog\n", size/44),
		"unicode": strings.Repeat("日本語のテキストと emoji 🙂 mixed in\n", size/48),
		"colored": strings.Repeat("\x1b[32mok\x1b[0m the quick brown fox\n", size/34),
	}
	for name, s := range inputs {
		b.Run(name, func(b *testing.B) {
			b.SetBytes(int64(len(s)))
			b.ReportAllocs()
			for b.Loop() {
				Sanitize(s)
			}
		})
	}
}

func TestProse(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"plain text, é 漢字\n", "plain text, é 漢字\n"},
		{"a\x1b[2Jb", "ab"},
		{"a\x1b]52;c;eA==\x07b", "ab"},
		{"a\u009b31mb", "ab"},
		{"abc\u202edef\u2066x\u2069", "abcdefx"},
		{"\u200dzero-width joiner kept", "\u200dzero-width joiner kept"},
	} {
		if got := Prose(tc.in); got != tc.want {
			t.Errorf("Prose(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}
