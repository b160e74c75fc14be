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
	tests = append(tests, everyField(t))
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

// everyField is a manifest with every field set, so a field added to
// abi.Manifest that appendManifest does not write fails the test above
// instead of vanishing from every plugin's manifest.
func everyField(t *testing.T) abi.Manifest {
	var m abi.Manifest
	v := reflect.ValueOf(&m).Elem()
	for i := range v.NumField() {
		f := v.Field(i)
		switch {
		case f.Type() == reflect.TypeFor[json.RawMessage]():
			f.Set(reflect.ValueOf(json.RawMessage(`{"type":"object","title":"` + v.Type().Field(i).Name + `"}`)))
		case f.Kind() == reflect.String:
			f.SetString("v-" + v.Type().Field(i).Name)
		case f.Kind() == reflect.Bool:
			f.SetBool(true)
		case f.Kind() == reflect.Int64:
			f.SetInt(int64(1000 + i))
		case f.Kind() == reflect.Slice && f.Type().Elem().Kind() == reflect.String:
			s := reflect.MakeSlice(f.Type(), 2, 2)
			s.Index(0).SetString("a")
			s.Index(1).SetString("b/*/c")
			f.Set(s)
		default:
			t.Fatalf("abi.Manifest.%s is a %s, which this test does not know how to set; teach it", v.Type().Field(i).Name, f.Type())
		}
	}
	return m
}
