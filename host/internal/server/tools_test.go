package server

import (
	"encoding/json"
	"testing"

	"github.com/toolhost/toolhost/abi"
)

// TestAnnotations: all four hints follow from the manifest: read-only tools pass clients' review modes, writers are
// destructive, and only a tool reaching past the sandbox's files is open.
func TestAnnotations(t *testing.T) {
	for _, tc := range []struct {
		name                                         string
		m                                            abi.Manifest
		readOnly, destructive, idempotent, openWorld bool
		composes                                     bool
	}{
		{name: "read_file", m: abi.Manifest{Capabilities: []abi.Capability{abi.CapFSRead}}, readOnly: true, idempotent: true},
		{name: "list_directory", m: abi.Manifest{Capabilities: []abi.Capability{abi.CapFSList}}, readOnly: true, idempotent: true, composes: true},
		{name: "write_file", m: abi.Manifest{SideEffecting: true, Capabilities: []abi.Capability{abi.CapFSWrite}}, destructive: true, composes: true},
		{name: "apply_patch", m: abi.Manifest{SideEffecting: true, Capabilities: []abi.Capability{abi.CapFSRead, abi.CapFSWrite}}, destructive: true},
		{name: "run_command", m: abi.Manifest{SideEffecting: true, Capabilities: []abi.Capability{abi.CapProcExec}}, destructive: true, openWorld: true},
		{name: "compute only", m: abi.Manifest{}, readOnly: true, idempotent: true, composes: true},
		{name: "create_directory", m: abi.Manifest{SideEffecting: true, Additive: true, Idempotent: true, Capabilities: []abi.Capability{abi.CapFSWrite}}, idempotent: true, composes: true},
		{name: "edit_file", m: abi.Manifest{SideEffecting: true, Capabilities: []abi.Capability{abi.CapFSRead, abi.CapFSWrite}}, destructive: true},
		{name: "delete_file", m: abi.Manifest{SideEffecting: true, Capabilities: []abi.Capability{abi.CapFSWrite, abi.CapFSDelete}}, destructive: true, composes: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a := annotations(tc.m)
			if a.ReadOnlyHint != tc.readOnly || *a.DestructiveHint != tc.destructive || a.IdempotentHint != tc.idempotent || *a.OpenWorldHint != tc.openWorld {
				t.Errorf("hints readOnly %v destructive %v idempotent %v openWorld %v; want %v %v %v %v",
					a.ReadOnlyHint, *a.DestructiveHint, a.IdempotentHint, *a.OpenWorldHint, tc.readOnly, tc.destructive, tc.idempotent, tc.openWorld)
			}
			if got := composesOutput(tc.m); got != tc.composes {
				t.Errorf("composesOutput %v, want %v", got, tc.composes)
			}
		})
	}
}

// TestToolForSchema: the manifest's schema is the inputSchema as is; a
// tool whose arguments are not an object cannot be offered over MCP.
func TestToolForSchema(t *testing.T) {
	schema := `{"type":"object","properties":{"path":{"type":"string"}},"required":["path"]}`
	tool, err := toolFor(abi.Manifest{Name: "read_file", Parameters: json.RawMessage(schema)})
	if err != nil {
		t.Fatal(err)
	}
	if got := string(tool.InputSchema.(json.RawMessage)); got != schema {
		t.Errorf("inputSchema %s, want %s", got, schema)
	}
	if tool.OutputSchema != nil {
		t.Errorf("outputSchema %v for a tool without output_schema", tool.OutputSchema)
	}
	out := `{"type":"object","properties":{"lines":{"type":"integer"}}}`
	tool, err = toolFor(abi.Manifest{Name: "read_file", Parameters: json.RawMessage(schema), OutputSchema: json.RawMessage(out)})
	if err != nil || string(tool.OutputSchema.(json.RawMessage)) != out {
		t.Errorf("outputSchema %v (%v), want %s", tool.OutputSchema, err, out)
	}
	for _, bad := range []string{`{"type":"string"}`, `not json`} {
		if _, err := toolFor(abi.Manifest{Name: "odd", Parameters: json.RawMessage(bad)}); err == nil {
			t.Errorf("schema %s: offered, want an error naming the tool", bad)
		}
	}
}
