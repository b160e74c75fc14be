package engine

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/toolhost/toolhost/abi"
	"github.com/toolhost/toolhost/host/internal/registry"
)

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
		{raw: `{"o":{"k":[1,{"x":1,"y":{"z":1},"X":2}]}}`, ptr: "/o/k/-", a: "x", b: "X", wantAmbiguous: true},
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
// hand-written JSON parser) would read a path nobody checked (issue 13,
// red team; FR-VAL-02).
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
// nothing (issue 13, red team).
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
