package output

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"
)

// In a JSON result, a character Sanitize strips is
// escaped where it stands in a string, so a U+009B in a file name cannot
// swallow the punctuation after it, and the name decodes to the real one.
func TestSanitizeJSON(t *testing.T) {
	tests := []struct{ name, in, want string }{
		{"clean", `{"a":"b"}`, `{"a":"b"}`},
		{"c1 csi in a name swallows nothing",
			"{\"entries\":[{\"name\":\"\u009b\\\"},{\\\"name\\\":\\\"fake\"},{\"name\":\"b\"}]}",
			`{"entries":[{"name":"\u009b\"},{\"name\":\"fake"},{"name":"b"}]}`},
		{"raw 8-bit csi byte", "[\"a\x9b\\\"\"]", `["a\ufffd\""]`},
		{"del and other c1", "[\"a\x7fb\u0085c\u009cd\"]", `["a\u007fb\u0085c\u009cd"]`},
		{"invalid utf-8", "{\"k\":\"a\xffb\"}", `{"k":"a\ufffdb"}`},
		{"escapes kept", `{"k":"\u001b[2J\n\\"}`, `{"k":"\u001b[2J\n\\"}`},
		{"whitespace", "{\r\n\t\"k\" :\r[1,\n2]\r}\r", "{\r\n\t\"k\" :[1,\n2]}"},
		{"printable unicode kept", "{\"k\":\"日本 🙂 \u202e\u00a0\u009b\"}", "{\"k\":\"日本 🙂 \u202e\u00a0\\u009b\"}"},
		{"not json: plain text", "a\u009b\"}b", "ab"},
		{"not json: a string", "\"a\u009b\"", "\"a"},
		{"not json: broken object", "{\"a\":\"\u009b\"", "{\"a\":\""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := SanitizeJSON(tt.in)
			if got != tt.want {
				t.Fatalf("SanitizeJSON(%q) = %q, want %q", tt.in, got, tt.want)
			}
			if Sanitize(got) != got {
				t.Errorf("%q still has something Sanitize strips", got)
			}
			if isJSONContainer(tt.in) {
				checkSameJSON(t, tt.in, got)
			}
		})
	}
}

func checkSameJSON(t *testing.T, in, out string) {
	t.Helper()
	var a, b any
	if err := json.Unmarshal([]byte(out), &b); err != nil {
		t.Fatalf("SanitizeJSON(%q) = %q: not JSON: %v", in, out, err)
	}
	if err := json.Unmarshal([]byte(in), &a); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(a, b) {
		t.Fatalf("SanitizeJSON(%q) = %q decodes to %#v, want %#v", in, out, b, a)
	}
}

func TestSanitizeJSON_CleanDoesNotAllocate(t *testing.T) {
	s := strings.Repeat(`{"name":"日本語 🙂","size":1},`, 100)
	if n := testing.AllocsPerRun(100, func() { SanitizeJSON(s) }); n != 0 {
		t.Errorf("%v allocations for clean JSON", n)
	}
}

func FuzzSanitizeJSON(f *testing.F) {
	for _, s := range []string{`{"a":"b"}`, "[\"\u009b\\\"\"]", "{\"k\":\"\x7f\x9b\xff\"}", "{\r}", "a\u009b"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		out := SanitizeJSON(s)
		if Sanitize(out) != out {
			t.Fatalf("SanitizeJSON(%q) = %q keeps what Sanitize strips", s, out)
		}
		if isJSONContainer(s) {
			checkSameJSON(t, s, out)
		} else if out != Sanitize(s) {
			t.Fatalf("SanitizeJSON(%q) = %q, not Sanitize's %q", s, out, Sanitize(s))
		}
	})
}

func BenchmarkSanitizeJSON(b *testing.B) {
	entry := `{"name":"file_` + "\u009b" + `.go","path":"src/file.go","type":"file","size":123,"modified":"2024-01-01T00:00:00Z"},`
	s := `{"entries":[` + strings.Repeat(entry, (100<<10)/len(entry)) + `{}]}`
	b.SetBytes(int64(len(s)))
	for b.Loop() {
		SanitizeJSON(s)
	}
}
