package engine

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/toolhost/toolhost/abi"
	"github.com/toolhost/toolhost/host/internal/registry"
)

// manyNames is an object of n members n0..n{n-1}, and one more named
// extra in upper case when extra is not empty.
func manyNames(n int, extra string) string {
	var b strings.Builder
	b.WriteString("{")
	for i := range n {
		fmt.Fprintf(&b, `"n%d":%d,`, i, i)
	}
	if extra != "" {
		fmt.Fprintf(&b, `%q:0,`, strings.ToUpper(extra))
	}
	return strings.TrimSuffix(b.String(), ",") + "}"
}

func TestAmbiguousKey(t *testing.T) {
	tests := []struct {
		raw           string
		ptr, a, b     string
		wantAmbiguous bool
	}{
		{raw: `{"path":"a","n":1}`},
		{raw: `{"a":{"x":1},"b":{"x":2},"c":[{"x":1},{"x":2}]}`}, // equal names in different objects
		{raw: `{"a":"path","path":"b"}`},                         // a value equal to a name
		{raw: `{"path":"sub/b.txt","path":"a.txt"}`, a: "path", b: "path", wantAmbiguous: true},
		{raw: `{"path":"a.txt","PATH":"/etc/passwd"}`, a: "path", b: "PATH", wantAmbiguous: true},
		{raw: `{"files":1,"fileſ":2}`, a: "files", b: "fileſ", wantAmbiguous: true},       // long s folds to s
		{raw: `{"kind":1,"\u212aind":2}`, a: "kind", b: "\u212aind", wantAmbiguous: true}, // Kelvin sign
		{raw: `{"o":{"k":[1,{"x":1,"y":{"z":1},"X":2}]}}`, ptr: "/o/k/1", a: "x", b: "X", wantAmbiguous: true},
		{raw: `{"s":"a\"b,{\"q\":1,\"q\":2}","t":1}`},                        // names inside a string value
		{raw: `{"a\u0062":1,"ab":2}`, a: "ab", b: "ab", wantAmbiguous: true}, // an escaped name
		{raw: manyNames(40, "n39"), a: "n39", b: "N39", wantAmbiguous: true}, // past the short list
		{raw: manyNames(40, "")},
		{raw: `{"a/b~":{"q":1,"q":2}}`, ptr: "/a~1b~0", a: "q", b: "q", wantAmbiguous: true},
		{raw: `[{"a":1},{"a":2}]`},
		{raw: `{"a":`}, // malformed: the JSON check refuses it first
	}
	for _, tt := range tests {
		ptr, a, b, found := ambiguousKey([]byte(tt.raw))
		if found != tt.wantAmbiguous || ptr != tt.ptr || a != tt.a || b != tt.b {
			t.Errorf("ambiguousKey(%s) = %q %q %q %v, want %q %q %q %v", tt.raw, ptr, a, b, found, tt.ptr, tt.a, tt.b, tt.wantAmbiguous)
		}
	}
}

// A path argument given twice is refused before the plugin runs: the
// host checks the last value, and a plugin that takes the first (a
// hand-written JSON parser) would read a path nobody checked (red team; FR-VAL-02).
func TestRepeatedArgumentRefused_FR_VAL_02(t *testing.T) {
	f := newFixture(t, abi.Limits{})
	f.write(t, "a.txt", "checked\n")
	for _, args := range []string{
		`{"path":"../outside.txt","path":"a.txt"}`,
		`{"path":"a.txt","start_line":1,"start_line":2}`,
	} {
		r := f.call(t, "read_file", args)
		wantError(t, r, abi.KindBadArgs, "twice")
		if !strings.Contains(r.Error.Message, "call_") {
			t.Errorf("%s: the refusal does not name the call: %s", args, r.Error.Message)
		}
	}
	r := f.call(t, "write_file", `{"path":"new.txt","content":"x","Path":"other.txt"}`)
	wantError(t, r, abi.KindBadArgs, "differ only in case")
	if _, err := os.Stat(filepath.Join(f.root, "new.txt")); !os.IsNotExist(err) {
		t.Fatalf("the plugin ran: %v", err)
	}
}

// A tool whose schema admits other members still cannot be handed its
// path argument under another case ("PATH" for "path"), which a decoder
// matching names regardless of case would take while the sandbox checked
// nothing.
func TestPathArgumentCaseRefused(t *testing.T) {
	m := abi.Manifest{
		ABI: abi.Version, Name: "open_schema", Description: "d", RiskLevel: abi.RiskLow,
		Parameters: json.RawMessage(`{"type":"object","properties":{"path":{"type":"string"}}}`),
		PathArgs:   []string{"path"},
	}
	tool, err := registry.NewTool(m, nil)
	if err != nil {
		t.Fatal(err)
	}
	e := &Engine{cfg: Config{MaxArgsBytes: 1 << 20}}
	_, terr := e.validateArgs(Call{ID: "c1", Name: "open_schema", Arguments: json.RawMessage(`{"PATH":"/etc/passwd"}`)}, tool)
	if terr == nil || terr.Kind != abi.KindBadArgs || !strings.Contains(terr.Message, `"PATH"`) || !strings.Contains(terr.Message, "c1") {
		t.Fatalf("validateArgs = %+v, want BadArgs naming PATH and the call", terr)
	}
	if _, terr := e.validateArgs(Call{ID: "c2", Name: "open_schema", Arguments: json.RawMessage(`{"path":"a.txt","other":1}`)}, tool); terr != nil {
		t.Fatalf("exact names refused: %+v", terr)
	}
}

// BenchmarkAmbiguousKey is what the repeated-name check adds to every
// call: a read_file's arguments, and a 64 KiB patch.
func BenchmarkAmbiguousKey(b *testing.B) {
	patch, _ := json.Marshal(map[string]string{"patch": "LP1\nF a.txt\nT\n" + strings.Repeat("line of the file\n", 4096) + ".\nEND\n"})
	for _, c := range []struct {
		name string
		raw  []byte
	}{
		{"read_file", []byte(`{"path":"src/main.go","start_line":10,"end_line":80}`)},
		{"patch_64KiB", patch},
	} {
		b.Run(c.name, func(b *testing.B) {
			for b.Loop() {
				if _, _, _, found := ambiguousKey(c.raw); found {
					b.Fatal("found")
				}
			}
		})
	}
}

// FuzzAmbiguousKey holds the byte scanner to a plain reading of the same
// JSON through encoding/json's tokens: for every valid document both find
// a repeated name, or neither does.
func FuzzAmbiguousKey(f *testing.F) {
	for _, s := range []string{`{"a":1,"A":2}`, `{"a":{"b":[{"c":1,"c":2}]}}`, `{"s":"\"k\":1,\"k\":2"}`, `[{"ſ":1,"S":2}]`, `{"a\u0062":1,"ab":2}`, manyNames(20, "n3")} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		if !json.Valid(raw) {
			return
		}
		_, _, _, got := ambiguousKey(raw)
		if want := repeatsName(raw); got != want {
			t.Fatalf("ambiguousKey(%s) found %v, encoding/json's tokens say %v", raw, got, want)
		}
	})
}

// repeatsName reports whether an object in raw names a member twice, up
// to case, reading raw as encoding/json's tokens.
func repeatsName(raw []byte) bool {
	dec := json.NewDecoder(bytes.NewReader(raw))
	type frame struct {
		object, expectName bool
		names              []string
	}
	var stack []*frame
	valueDone := func() {
		if n := len(stack); n > 0 && stack[n-1].object {
			stack[n-1].expectName = true
		}
	}
	for {
		tok, err := dec.Token()
		if err != nil {
			return false
		}
		switch t := tok.(type) {
		case json.Delim:
			if t == '{' || t == '[' {
				stack = append(stack, &frame{object: t == '{', expectName: t == '{'})
				continue
			}
			stack = stack[:len(stack)-1]
			valueDone()
		case string:
			if n := len(stack); n > 0 && stack[n-1].object && stack[n-1].expectName {
				top := stack[n-1]
				for _, name := range top.names {
					if strings.EqualFold(name, t) {
						return true
					}
				}
				top.names, top.expectName = append(top.names, t), false
				continue
			}
			valueDone()
		default:
			valueDone()
		}
	}
}
