package jsontext

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
	"unicode/utf8"
)

func TestAppendString(t *testing.T) {
	for _, s := range []string{"", "plain", "quote\" back\\ nl\n tab\t", "\x00\x1f", "é 日本 🙂", "\u2028\u2029", "bad \xff utf8", "<html>&"} {
		var want bytes.Buffer
		enc := json.NewEncoder(&want)
		enc.SetEscapeHTML(false)
		enc.Encode(s)
		if got := string(AppendString(nil, s)); got != strings.TrimSuffix(want.String(), "\n") {
			t.Errorf("AppendString(%q) = %s, want %s", s, got, want.String())
		}
	}
}

// DEL, C1 controls, bidi and zero-width characters are
// escaped, so the host's sanitizer finds nothing to strip in the JSON (a
// raw U+009B would swallow the punctuation after it), and the escape
// shows what a raw one would hide; decoded, the string is unchanged.
func TestAppendString_EscapesInvisible(t *testing.T) {
	tests := []struct{ in, want string }{
		{"a\x7fb", `"a\u007fb"`},
		{"\u009b\"},{\"name\":\"fake", `"\u009b\"},{\"name\":\"fake"`},
		{"x\u0085\u009c", `"x\u0085\u009c"`},
		{"evil\u202etxt.exe", `"evil\u202etxt.exe"`},
		{"\u2066a\u2069\u200e\u200f\u061c", `"\u2066a\u2069\u200e\u200f\u061c"`},
		{"zero\u200bwidth\u200d\u2060\ufeff", `"zero\u200bwidth\u200d\u2060\ufeff"`},
		{"keep é \u00a0 \u05d0 🙂", "\"keep é \u00a0 \u05d0 🙂\""},
	}
	for _, tt := range tests {
		got := string(AppendString(nil, tt.in))
		if got != tt.want {
			t.Errorf("AppendString(%q) = %s, want %s", tt.in, got, tt.want)
		}
		var back string
		if err := json.Unmarshal([]byte(got), &back); err != nil || back != tt.in {
			t.Errorf("AppendString(%q) decodes to %q (%v)", tt.in, back, err)
		}
	}
}

func FuzzAppendString(f *testing.F) {
	f.Add("hello\n\"world\"")
	f.Fuzz(func(t *testing.T, s string) {
		var back string
		if err := json.Unmarshal(AppendString(nil, s), &back); err != nil {
			t.Fatalf("AppendString(%q) is not JSON: %v", s, err)
		}
		if utf8.ValidString(s) && back != s {
			t.Fatalf("round trip %q -> %q", s, back)
		}
	})
}
