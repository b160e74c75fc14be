package registry

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/toolhost/toolhost/abi"
)

func manifest(name string) abi.Manifest {
	return abi.Manifest{
		ABI: abi.Version, Name: name, Description: "d", RiskLevel: abi.RiskLow,
		Parameters: []byte(`{"type":"object","properties":{"path":{"type":"string","minLength":1},"n":{"type":"integer","minimum":1}},"required":["path"],"additionalProperties":false}`),
	}
}

func TestValidateManifest(t *testing.T) {
	tests := []struct {
		name   string
		mutate func(*abi.Manifest)
		want   string // substring of the error; "" means valid
	}{
		{"valid", func(*abi.Manifest) {}, ""},
		{"uppercase name", func(m *abi.Manifest) { m.Name = "Read" }, "must match"},
		{"name too long", func(m *abi.Manifest) { m.Name = "a" + strings.Repeat("b", 64) }, "must match"},
		{"leading digit", func(m *abi.Manifest) { m.Name = "1tool" }, "must match"},
		{"no description", func(m *abi.Manifest) { m.Description = " " }, "description is empty"},
		{"bad risk", func(m *abi.Manifest) { m.RiskLevel = "extreme" }, "risk_level"},
		{"bad timeout class", func(m *abi.Manifest) { m.TimeoutClass = "forever" }, "timeout_class"},
		{"schema not JSON", func(m *abi.Manifest) { m.Parameters = []byte(`{`) }, "not valid JSON"},
		{"schema invalid", func(m *abi.Manifest) { m.Parameters = []byte(`{"type":"nonsense"}`) }, "Draft 2020-12"},
		{"schema missing", func(m *abi.Manifest) { m.Parameters = nil }, "missing"},
		{"timeout past any bound", func(m *abi.Manifest) { m.TimeoutMillis = 1 << 62 }, "timeout_ms 4611686018427387904 is more than 3600000"},
		{"timeout of an hour", func(m *abi.Manifest) { m.TimeoutMillis = 3600000 }, ""},
		{"unnamed writes without fs.write", func(m *abi.Manifest) { m.WritesUnnamedPaths = true }, "writes_unnamed_paths"},
		{"path args inside arrays", func(m *abi.Manifest) {
			m.PathArgs, m.CreateArgs = []string{"path", "paths/*", "edits/*/path"}, []string{"edits/*/path"}
		}, ""},
		{"a path arg with an empty segment", func(m *abi.Manifest) { m.PathArgs = []string{"edits//path"} }, `path_args: path argument "edits//path" has an empty segment`},
		{"a path arg with another wildcard", func(m *abi.Manifest) { m.PathArgs = []string{"paths/**"} }, `path_args: path argument "paths/**" has "**" inside a key`},
		{"a create arg that starts with a wildcard", func(m *abi.Manifest) { m.PathArgs, m.CreateArgs = []string{"*/path"}, []string{"*/path"} }, `create_args: path argument "*/path" starts with "*"`},
		{"a create arg not in path_args", func(m *abi.Manifest) { m.PathArgs, m.CreateArgs = []string{"paths/*"}, []string{"paths"} }, `create_args names "paths", which is not in path_args`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m := manifest("read_file")
			tt.mutate(&m)
			_, err := NewTool(m, nil)
			switch {
			case tt.want == "" && err != nil:
				t.Fatalf("unexpected error: %v", err)
			case tt.want != "" && (err == nil || !strings.Contains(err.Error(), tt.want)):
				t.Fatalf("err = %v, want it to mention %q", err, tt.want)
			}
		})
	}
}

// A manifest cannot understate what its capabilities allow: side effects
// and risk are raised to what fs.write and proc.exec imply, so the planner
// asks about such a tool and never runs it in parallel (FR-APR-04d,
// FR-APR-06, FR-EXE-01).
func TestCapabilitiesImplySideEffectsAndRisk(t *testing.T) {
	tests := []struct {
		name     string
		caps     []abi.Capability
		risk     abi.RiskLevel
		side     bool
		approval bool
		want     string // side_effecting/requires_approval/risk after loading
	}{
		{"read-only stays as declared", []abi.Capability{abi.CapFSRead, abi.CapFSList}, abi.RiskLow, false, false, "false/false/low"},
		{"fs.write is side-effecting, at least medium", []abi.Capability{abi.CapFSWrite}, abi.RiskLow, false, false, "true/false/medium"},
		{"fs.write keeps a higher risk", []abi.Capability{abi.CapFSWrite}, abi.RiskHigh, false, false, "true/false/high"},
		{"proc.exec is a shell tool", []abi.Capability{abi.CapProcExec}, abi.RiskLow, false, false, "true/true/high"},
		{"an honest manifest is kept", []abi.Capability{abi.CapFSWrite}, abi.RiskMedium, true, true, "true/true/medium"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m := manifest("liar")
			m.Capabilities, m.RiskLevel, m.SideEffecting, m.RequiresApproval = tt.caps, tt.risk, tt.side, tt.approval
			tool, err := NewTool(m, nil)
			if err != nil {
				t.Fatal(err)
			}
			got := tool.Manifest
			if s := fmt.Sprintf("%v/%v/%s", got.SideEffecting, got.RequiresApproval, got.RiskLevel); s != tt.want {
				t.Errorf("loaded as %s, want %s", s, tt.want)
			}
		})
	}
}

// fs.delete implies side effects and at least medium risk as fs.write
// does; an additive fs.write tool (held by fs_commit to only creating)
// keeps its low risk, unless it also holds fs.delete, which can never be
// additive.
func TestAdditiveAndDeleteCapabilities(t *testing.T) {
	for _, tt := range []struct {
		name     string
		caps     []abi.Capability
		additive bool
		want     string // side_effecting/additive/risk after loading
	}{
		{"fs.delete is side-effecting, at least medium", []abi.Capability{abi.CapFSDelete}, false, "true/false/medium"},
		{"an additive fs.write tool stays low", []abi.Capability{abi.CapFSWrite}, true, "true/true/low"},
		{"fs.delete is never additive", []abi.Capability{abi.CapFSWrite, abi.CapFSDelete}, true, "true/false/medium"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			m := manifest("liar")
			m.Capabilities, m.RiskLevel, m.Additive = tt.caps, abi.RiskLow, tt.additive
			tool, err := NewTool(m, nil)
			if err != nil {
				t.Fatal(err)
			}
			got := tool.Manifest
			if s := fmt.Sprintf("%v/%v/%s", got.SideEffecting, got.Additive, got.RiskLevel); s != tt.want {
				t.Errorf("loaded as %s, want %s", s, tt.want)
			}
		})
	}
}

func TestDuplicateToolRejected(t *testing.T) {
	a, _ := NewTool(manifest("same"), nil)
	b, _ := NewTool(manifest("same"), nil)
	_, err := New(a, b)
	var dup *DuplicateToolError
	if !errors.As(err, &dup) || dup.Name != "same" {
		t.Fatalf("err = %v, want DuplicateToolError for %q", err, "same")
	}
}

// NFR-MAIN-03: definitions are sorted by name whatever the load order.
func TestToolsSortedByName(t *testing.T) {
	var tools []*Tool
	for _, n := range []string{"zeta", "alpha", "mid"} {
		tool, err := NewTool(manifest(n), nil)
		if err != nil {
			t.Fatal(err)
		}
		tools = append(tools, tool)
	}
	r, err := New(tools...)
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(r.Names(), ","); got != "alpha,mid,zeta" {
		t.Fatalf("Names() = %s", got)
	}
	if _, ok := r.Lookup("mid"); !ok {
		t.Fatal("Lookup(mid) failed")
	}
}

// FR-VAL-01: every violation is reported with its JSON pointer.
func TestValidateArgs_T_VAL_02(t *testing.T) {
	tool, err := NewTool(manifest("t"), nil)
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		args     string
		pointers []string
	}{
		{`{"path":"a"}`, nil},
		{`{"path":"a","n":3}`, nil},
		{`{}`, []string{""}},
		{`{"path":"","n":0}`, []string{"/n", "/path"}},
		{`{"path":"a","extra":1}`, []string{""}},
		{`{"path":7}`, []string{"/path"}},
	}
	for _, tt := range tests {
		var v any
		if err := json.Unmarshal([]byte(tt.args), &v); err != nil {
			t.Fatal(err)
		}
		got := tool.ValidateArgs(v)
		var ptrs []string
		for _, g := range got {
			ptrs = append(ptrs, g.Pointer)
			if g.Message == "" {
				t.Errorf("%s: violation at %q has no message", tt.args, g.Pointer)
			}
		}
		if strings.Join(ptrs, " ") != strings.Join(tt.pointers, " ") {
			t.Errorf("%s: violations at %q, want %q (%+v)", tt.args, ptrs, tt.pointers, got)
		}
	}
}

func TestDefinitionsFormats(t *testing.T) {
	tool, _ := NewTool(manifest("read_file"), nil)
	r, _ := New(tool)
	for _, f := range Formats() {
		defs, err := r.Definitions(f)
		if err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		b, err := json.Marshal(defs)
		if err != nil || !strings.Contains(string(b), `"read_file"`) {
			t.Errorf("%s: %s %v", f, b, err)
		}
		if f == "gemini" && strings.Contains(string(b), "additionalProperties") {
			t.Errorf("gemini definitions keep additionalProperties, which Gemini rejects: %s", b)
		}
	}
	if _, err := r.Definitions("xml"); err == nil {
		t.Error("unknown format accepted")
	}
}

// The MCP definitions carry all four behaviour hints, the same ones
// toolhost serve gives (abi.Manifest.Hints), so `toolhost tools --format
// mcp` shows what a client will see.
func TestMCPDefinitionsCarryEveryHint(t *testing.T) {
	read := manifest("read_file")
	run := manifest("run_command")
	run.SideEffecting, run.Capabilities = true, []abi.Capability{abi.CapProcExec}
	defs, err := Definitions([]abi.Manifest{read, run}, "mcp")
	if err != nil {
		t.Fatal(err)
	}
	b, _ := json.Marshal(defs)
	var got []struct {
		Name        string          `json:"name"`
		Annotations map[string]bool `json:"annotations"`
	}
	if err := json.Unmarshal(b, &got); err != nil {
		t.Fatalf("%v: %s", err, b)
	}
	want := map[string]map[string]bool{
		"read_file":   {"readOnlyHint": true, "destructiveHint": false, "idempotentHint": true, "openWorldHint": false},
		"run_command": {"readOnlyHint": false, "destructiveHint": true, "idempotentHint": false, "openWorldHint": true},
	}
	if len(got) != 2 {
		t.Fatalf("tools: %s", b)
	}
	for _, tool := range got {
		if !reflect.DeepEqual(tool.Annotations, want[tool.Name]) {
			t.Errorf("%s: annotations %v, want %v", tool.Name, tool.Annotations, want[tool.Name])
		}
	}
}

// A manifest's schema is read whole from the manifest: a $ref, $schema or
// $id naming a file makes the compiler read nothing from the host's disk
// (a secret there would come back in argument errors; a FIFO would hang
// the start), and the tool is refused naming the reference (found attacking Extism plugins; native plugins share the compiler).
func TestSchemaReadsNoHostFile(t *testing.T) {
	secret := filepath.Join(t.TempDir(), "secret.json")
	if err := os.WriteFile(secret, []byte(`{"const":"TOPSECRET"}`), 0o600); err != nil {
		t.Fatal(err)
	}
	uri := "file://" + secret
	for name, schema := range map[string]string{
		"$ref":    `{"type":"object","properties":{"p":{"$ref":"` + uri + `"}}}`,
		"$schema": `{"$schema":"` + uri + `","type":"object"}`,
		"$id":     `{"$id":"file://` + filepath.Dir(secret) + `/","type":"object","properties":{"p":{"$ref":"secret.json"}}}`,
	} {
		t.Run(name, func(t *testing.T) {
			m := manifest("t")
			m.Parameters = []byte(schema)
			tool, err := NewTool(m, nil)
			if err == nil {
				v := tool.ValidateArgs(map[string]any{"p": "x"})
				t.Fatalf("a schema referring to %s compiled; validation says %v", uri, v)
			}
			if !strings.Contains(err.Error(), secret) || !strings.Contains(err.Error(), "inline it") {
				t.Fatalf("the refusal does not name the file and what to do: %v", err)
			}
		})
	}
}

// A manifest's text is made safe to show once, at load: controls and bidi
// overrides leave the description, version and schema strings; a
// property name holding them refuses the tool; a description that was
// nothing but controls is empty.
func TestNewToolCleansManifestText(t *testing.T) {
	m := abi.Manifest{
		Name: "t", Version: "1\x1b]0;x\x07", Description: "Does\x1b[2J \u202ethings.", RiskLevel: abi.RiskLow,
		Parameters: []byte(`{"type":"object","properties":{"a":{"type":"string","description":"A\u009b1m\u2066","default":"x\u001b[0m","maximum":12345678901234567890}}}`),
	}
	tool, err := NewTool(m, nil)
	if err != nil {
		t.Fatal(err)
	}
	if got := tool.Manifest.Description; got != "Does things." {
		t.Errorf("description %q", got)
	}
	if got := tool.Manifest.Version; got != "1" {
		t.Errorf("version %q", got)
	}
	want := `{"properties":{"a":{"default":"x","description":"A","maximum":12345678901234567890,"type":"string"}},"type":"object"}`
	if got := string(tool.Manifest.Parameters); got != want {
		t.Errorf("parameters\n got %s\nwant %s", got, want)
	}

	clean := abi.Manifest{Name: "t", Description: "d", RiskLevel: abi.RiskLow, Parameters: []byte(`{"type": "object",  "properties": {}}`)}
	if tool, err := NewTool(clean, nil); err != nil || string(tool.Manifest.Parameters) != string(clean.Parameters) {
		t.Errorf("a clean schema was rewritten: %s, %v", tool.Manifest.Parameters, err)
	}

	bad := m
	bad.Parameters = []byte(`{"type":"object","properties":{"a\u001b[2J":{"type":"string"}}}`)
	if _, err := NewTool(bad, nil); err == nil || !strings.Contains(err.Error(), "control or bidi") {
		t.Errorf("a property name with controls: err = %v", err)
	}
	only := m
	only.Description = "\x1b[2J\u202e"
	if _, err := NewTool(only, nil); err == nil || !strings.Contains(err.Error(), "description is empty") {
		t.Errorf("a description of controls only: err = %v", err)
	}
}

// An output_schema is compiled like the parameters, must describe an
// object (MCP's outputSchema describes structuredContent), has its text
// cleaned, reaches the MCP definitions, and is what ValidateStructured
// holds an object to.
func TestOutputSchema(t *testing.T) {
	for name, schema := range map[string]string{
		"not an object schema": `{"type":"array"}`,
		"no type":              `{"properties":{}}`,
		"not JSON":             `{"type":`,
		"does not compile":     `{"type":"object","properties":{"a":{"type":7}}}`,
		"reads a host file":    `{"type":"object","properties":{"a":{"$ref":"file:///etc/passwd"}}}`,
	} {
		m := manifest("t")
		m.OutputSchema = []byte(schema)
		if _, err := NewTool(m, nil); err == nil || !strings.Contains(err.Error(), "output_schema") {
			t.Errorf("%s: err = %v, want a refusal naming output_schema", name, err)
		}
	}
	m := manifest("t")
	m.OutputSchema = []byte(`{"type":"object","description":"Counts\u001b[2J.","properties":{"files":{"type":"integer"}},"required":["files"]}`)
	tool, err := NewTool(m, nil)
	if err != nil {
		t.Fatal(err)
	}
	if want := `{"description":"Counts.","properties":{"files":{"type":"integer"}},"required":["files"],"type":"object"}`; string(tool.Manifest.OutputSchema) != want {
		t.Errorf("output_schema %s, want %s", tool.Manifest.OutputSchema, want)
	}
	if !tool.HasOutputSchema() || tool.ValidateStructured(map[string]any{"files": json.Number("2")}) != nil {
		t.Errorf("a matching object: %v", tool.ValidateStructured(map[string]any{"files": json.Number("2")}))
	}
	if v := tool.ValidateStructured(map[string]any{"files": "2"}); len(v) != 1 || v[0].Pointer != "/files" {
		t.Errorf("a string where an integer is: %+v", v)
	}
	plain, _ := NewTool(manifest("p"), nil)
	if plain.HasOutputSchema() || plain.ValidateStructured([]any{}) != nil {
		t.Error("a tool without output_schema holds objects to one")
	}
	defs, _ := Definitions([]abi.Manifest{tool.Manifest, plain.Manifest}, "mcp")
	b, _ := json.Marshal(defs)
	if strings.Count(string(b), `"outputSchema"`) != 1 || !strings.Contains(string(b), `"outputSchema":{"description":"Counts."`) {
		t.Errorf("MCP definitions: %s", b)
	}
}

// A tool has a dry run an approval can show when it has side effects and
// its parameters declare "dry_run" a boolean; read once, at load.
func TestHasDryRun(t *testing.T) {
	for _, tt := range []struct {
		name   string
		caps   []abi.Capability
		params string
		want   bool
	}{
		{"writer with a boolean dry_run", []abi.Capability{abi.CapFSWrite}, `{"type":"object","properties":{"dry_run":{"type":"boolean"}}}`, true},
		{"writer without one", []abi.Capability{abi.CapFSWrite}, `{"type":"object","properties":{"path":{"type":"string"}}}`, false},
		{"dry_run of another type", []abi.Capability{abi.CapFSWrite}, `{"type":"object","properties":{"dry_run":{"type":"string"}}}`, false},
		{"reader with a boolean dry_run", []abi.Capability{abi.CapFSRead}, `{"type":"object","properties":{"dry_run":{"type":"boolean"}}}`, false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			m := manifest("dry")
			m.Capabilities, m.Parameters = tt.caps, json.RawMessage(tt.params)
			tool, err := NewTool(m, nil)
			if err != nil {
				t.Fatal(err)
			}
			if got := tool.HasDryRun(); got != tt.want {
				t.Errorf("HasDryRun() = %v, want %v", got, tt.want)
			}
		})
	}
}
