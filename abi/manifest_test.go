package abi

import "testing"

// The hints clients are told (MCP's tool annotations) follow the
// manifest: only an additive tool's side effects are not destructive,
// and fs.delete, like the other fs capabilities, keeps the world closed.
func TestManifestHints(t *testing.T) {
	for _, tc := range []struct {
		name string
		m    Manifest
		want Hints
	}{
		{"reads", Manifest{Capabilities: []Capability{CapFSRead}}, Hints{ReadOnly: true, Idempotent: true}},
		{"writes", Manifest{SideEffecting: true, Capabilities: []Capability{CapFSWrite}}, Hints{Destructive: true}},
		{"deletes", Manifest{SideEffecting: true, Capabilities: []Capability{CapFSDelete}}, Hints{Destructive: true}},
		{"creates directories", Manifest{SideEffecting: true, Additive: true, Idempotent: true, Capabilities: []Capability{CapFSWrite}}, Hints{Idempotent: true}},
		{"runs commands", Manifest{SideEffecting: true, Capabilities: []Capability{CapProcExec}}, Hints{Destructive: true, OpenWorld: true}},
		{"says open", Manifest{OpenWorld: true}, Hints{ReadOnly: true, Idempotent: true, OpenWorld: true}},
	} {
		if got := tc.m.Hints(); got != tc.want {
			t.Errorf("%s: Hints() = %+v, want %+v", tc.name, got, tc.want)
		}
	}
}

// fs.delete grants fs_commit (the removals and moves are its operations)
// and nothing that fs.write or fs.read alone would not.
func TestDeleteCapabilityGrantsCommit(t *testing.T) {
	got := CapabilityFunctions()[CapFSDelete]
	if len(got) != 2 || got[0] != FnFSStat || got[1] != FnFSCommit {
		t.Errorf("fs.delete grants %v, want [fs_stat fs_commit]", got)
	}
}
