package engine

import (
	"bytes"
	"encoding/json"
	"log/slog"
	"strings"
	"testing"

	"github.com/toolhost/toolhost/abi"
	"github.com/toolhost/toolhost/host/internal/registry"
)

// A structured result is passed on as the host's own encoding of one JSON
// object: compact, sorted, a repeated name once, its strings and names
// sanitized as text is (escaped or not, a control sequence is gone: a
// client decodes escapes before it shows a string). Anything else fails
// the call as the plugin's fault.
func TestStructuredIsOneSanitizedObject(t *testing.T) {
	tests := []struct {
		name, raw, want, fail string
	}{
		{"object", `{"b":1,"a":[true,null,"x"]}`, `{"a":[true,null,"x"],"b":1}`, ""},
		{"whitespace", " \n{ \"a\" : 1 }\r\n", `{"a":1}`, ""},
		{"empty object", `{}`, `{}`, ""},
		{"big integer exact", `{"n":12345678901234567890123}`, `{"n":12345678901234567890123}`, ""},
		{"repeated name", `{"path":"a.txt","path":"../../etc/passwd"}`, `{"path":"../../etc/passwd"}`, ""},
		{"html kept", `{"s":"<a&b>"}`, `{"s":"<a&b>"}`, ""},
		{"escaped escape sequence in a string", "{\"s\":\"\\u001b[31mred\\u001b]0;title\\u0007\"}", `{"s":"red"}`, ""},
		{"C1 control raw in a string", "{\"s\":\"a\u009b31mb\"}", `{"s":"ab"}`, ""},
		{"C1 control in a name", "{\"a\\u0085\":1}", `{"a":1}`, ""},
		{"DEL raw", "{\"s\":\"a\x7fb\"}", `{"s":"ab"}`, ""},
		{"line breaks and tabs kept", `{"s":"a\nb\tc\r\nd"}`, `{"s":"a\nb\tc\r\nd"}`, ""},
		{"invalid UTF-8", "{\"s\":\"a\xffb\"}", "{\"s\":\"a\uFFFDb\"}", ""},
		{"array", `[{"a":1}]`, "", "an array"},
		{"string", `"{}"`, "", "a string"},
		{"number", `42`, "", "a number"},
		{"null", `null`, "", "null"},
		{"two objects", `{"a":1}{"b":2}`, "", "more follows"},
		{"not JSON", `{"a":`, "", "not one JSON object"},
		{"trailing garbage", `{"a":1} x`, "", "more follows"},
	}
	e := New(Config{})
	tool := structuredTool(t, false, "")
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			call := Call{ID: "c1", Name: "shape"}
			got, terr := e.structured(call, tool, abi.Result{Structured: []byte(tt.raw)}, 5, 1000)
			if tt.fail != "" {
				if terr == nil || terr.Kind != abi.KindExecutionFailed || !strings.Contains(terr.Message, tt.fail) ||
					!strings.Contains(terr.Message, "shape failed") || !strings.Contains(terr.Message, "plugin's fault") {
					t.Fatalf("structured(%q) = %s, %+v; want ExecutionFailed blaming the plugin, saying %q", tt.raw, got, terr, tt.fail)
				}
				return
			}
			if terr != nil || string(got) != tt.want {
				t.Fatalf("structured(%q) = %s, %+v; want %s", tt.raw, got, terr, tt.want)
			}
		})
	}
}

// The text comes first in the output limit: an object that does not fit
// beside it is left out (and logged), counted on the plugin's bytes and
// again on the host's encoding, which escaping can make longer.
func TestStructuredWithinTheLimitWithText(t *testing.T) {
	var logged bytes.Buffer
	e := New(Config{Logger: slog.New(slog.NewTextHandler(&logged, nil))})
	call := Call{ID: "c1", Name: "shape"}
	obj := []byte(`{"a":"` + strings.Repeat("x", 90) + `"}`) // 98 bytes
	tests := []struct {
		name    string
		raw     []byte
		textLen int
		kept    bool
	}{
		{"fits", obj, 0, true},
		{"exactly the limit", obj, 2, true},
		{"over with the text", obj, 3, false},
		{"text alone at the limit", []byte(`{}`), 100, false},
		{"longer once encoded", []byte("{\"a\":\"" + strings.Repeat("\u2028", 30) + "\"}"), 0, false},
		{"cut by the runtime, never parsed", bytes.Repeat([]byte("{"), 500), 0, false},
	}
	for _, tt := range tests {
		logged.Reset()
		got, terr := e.structured(call, structuredTool(t, false, ""), abi.Result{Structured: tt.raw}, tt.textLen, 100)
		if terr != nil {
			t.Errorf("%s: %+v", tt.name, terr)
			continue
		}
		if tt.kept != (got != nil) {
			t.Errorf("%s: structured = %q, want kept %v", tt.name, got, tt.kept)
		}
		if !tt.kept && !strings.Contains(logged.String(), "does not fit beside its text") {
			t.Errorf("%s: left out without a log line: %q", tt.name, logged.String())
		}
	}
}

// A side-effecting call whose object is refused says that it may have
// acted: a model retrying it blindly could apply a change twice.
func TestStructuredRefusedSaysTheCallMayHaveActed(t *testing.T) {
	e := New(Config{})
	_, terr := e.structured(Call{ID: "c1", Name: "edit"}, structuredTool(t, true, ""), abi.Result{Structured: []byte(`[]`)}, 0, 100)
	if terr == nil || !strings.Contains(terr.Message, "may have changed files") {
		t.Fatalf("refusal of a side-effecting call's object: %+v", terr)
	}
}

// structuredTool is a tool as the registry makes it, side-effecting or
// not, with outputSchema ("" for none).
func structuredTool(t *testing.T, sideEffecting bool, outputSchema string) *registry.Tool {
	t.Helper()
	m := abi.Manifest{Name: "shape", Version: "1", Description: "Shapes.", Parameters: json.RawMessage(`{"type":"object"}`),
		RiskLevel: abi.RiskMedium, SideEffecting: sideEffecting}
	if outputSchema != "" {
		m.OutputSchema = json.RawMessage(outputSchema)
	}
	tool, err := registry.NewTool(m, nil)
	if err != nil {
		t.Fatal(err)
	}
	return tool
}

// A tool declaring an output_schema promises an object matching it with
// every result: one that breaks it, none at all, or one left out for the
// limit fails the call as the plugin's fault, saying why.
func TestStructuredHeldToTheOutputSchema(t *testing.T) {
	e := New(Config{})
	tool := structuredTool(t, false, `{"type":"object","properties":{"files":{"type":"integer","maximum":9007199254740993}},"required":["files"]}`)
	tests := []struct {
		name, raw string
		textLen   int
		want      string // the object passed on; "" when the call fails
		fail      string
	}{
		{"matches", `{"files":2}`, 0, `{"files":2}`, ""},
		{"big integer", `{"files":9007199254740993}`, 0, `{"files":9007199254740993}`, ""},
		{"wrong type", `{"files":"two"}`, 0, "", "does not match its output_schema; at /files"},
		{"missing member", `{"file":2}`, 0, "", "does not match its output_schema; at (root)"},
		{"none", "", 0, "", "returned no structured result, which its output_schema promises"},
		{"over the limit with the text", `{"files":2}`, 95, "", "does not fit beside its 95 bytes of text in the call's 100-byte output limit"},
	}
	for _, tt := range tests {
		got, terr := e.structured(Call{ID: "c1", Name: "shape"}, tool, abi.Result{Structured: []byte(tt.raw)}, tt.textLen, 100)
		switch {
		case tt.fail == "" && (terr != nil || string(got) != tt.want):
			t.Errorf("%s: %s, %+v; want %s", tt.name, got, terr, tt.want)
		case tt.fail != "" && (terr == nil || !strings.Contains(terr.Message, tt.fail) || !strings.Contains(terr.Message, "plugin's fault")):
			t.Errorf("%s: %s, %+v; want a failure saying %q", tt.name, got, terr, tt.fail)
		}
	}
}
