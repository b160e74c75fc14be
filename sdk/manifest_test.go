package sdk

import (
	"encoding/json"
	"reflect"
	"testing"

	"github.com/toolhost/toolhost/abi"
)

// The hand-written manifest encoder must say what encoding/json would.
func TestAppendManifestMatchesEncodingJSON(t *testing.T) {
	tests := []abi.Manifest{
		{ABI: abi.Version, Name: "read_file", Version: "1.0.0", Description: `Reads "files" <fast> \ UTF-8 é`,
			Parameters: []byte(`{"type":"object"}`), RiskLevel: abi.RiskLow, TimeoutClass: abi.TimeoutFile,
			PathArgs: []string{"path"}, Capabilities: []abi.Capability{abi.CapFSRead, abi.CapFSList}},
		{ABI: abi.Version, Name: "x", Parameters: []byte(`{}`), SideEffecting: true, RequiresApproval: true,
			RiskLevel: abi.RiskHigh, TimeoutMillis: 1500},
		{ABI: abi.Version, Name: "patch", Parameters: []byte(`{}`), SideEffecting: true, RiskLevel: abi.RiskMedium,
			WritesUnnamedPaths: true, Capabilities: []abi.Capability{abi.CapFSRead, abi.CapFSWrite}},
	}
	for _, m := range tests {
		var got, want abi.Manifest
		if err := json.Unmarshal(appendManifest(nil, m), &got); err != nil {
			t.Fatalf("not JSON: %v\n%s", err, appendManifest(nil, m))
		}
		ref, _ := json.Marshal(m)
		if err := json.Unmarshal(ref, &want); err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(got, want) {
			t.Errorf("got %+v\nwant %+v", got, want)
		}
	}
}
