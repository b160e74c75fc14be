package conformance

import (
	"encoding/json"
	"slices"
	"testing"

	"github.com/toolhost/toolhost/abi"
	"github.com/toolhost/toolhost/host/internal/argpath"
)

// Paths inside arrays get the fixture paths, as top-level ones do, so
// that call.unnamed-files sees the files they name as named and
// call.escape has a place to put an escaping path.
func TestGeneratorFillsPathsInArrays(t *testing.T) {
	m := &abi.Manifest{Name: "t", PathArgs: []string{"paths/*", "edits/*/path"}, Parameters: json.RawMessage(`{"type":"object","properties":{
		"paths":{"type":"array","items":{"type":"string"}},
		"edits":{"type":"array","minItems":1,"items":{"type":"object","properties":{"path":{"type":"string"},"old":{"type":"string"}},"required":["path","old"]}}},
		"required":["paths","edits"]}`)}
	g := newGenerator(m, pathFixtures())
	_, props := g.properties()
	filled := 0
	for _, args := range g.valid(generatedSets) {
		found, err := argpath.Find(m.PathArgs, args, 0)
		if err != nil {
			t.Fatal(err)
		}
		named := namedPaths(g, props, args)
		for _, f := range found {
			if f.Absent {
				continue
			}
			filled++
			if !slices.Contains(pathFixtures(), f.Text) {
				t.Errorf("%s = %q in %s, not a fixture path", f.Pointer, f.Text, mustJSON(args))
			}
			if !slices.Contains(named, f.Text) && f.Text != "." {
				t.Errorf("namedPaths %q lacks %s = %q", named, f.Pointer, f.Text)
			}
		}
	}
	if filled == 0 {
		t.Fatal("no generated arguments had a path inside an array")
	}
	// The generator's candidates are shared between sets: filling one
	// must not change another's.
	if again := g.valid(generatedSets); string(mustJSON(again)) != string(mustJSON(g.valid(generatedSets))) {
		t.Error("the generator is not deterministic")
	}
}

func TestSetPaths(t *testing.T) {
	for _, tc := range []struct {
		sel, in string
		create  bool
		want    string
	}{
		{"paths/*", `{"paths":["a","b"]}`, false, `{"paths":["X","X"]}`},
		{"paths/*", `{"paths":[]}`, false, `{"paths":[]}`},
		{"paths/*", `{"paths":[]}`, true, `{"paths":["X"]}`},
		{"paths/*", `{}`, true, `{"paths":["X"]}`},
		{"paths/*", `{"paths":"a"}`, true, `{"paths":"a"}`},
		{"edits/*/path", `{"edits":[{"path":"a","old":"o"},{"old":"p"}]}`, false, `{"edits":[{"old":"o","path":"X"},{"old":"p"}]}`},
		{"edits/*/path", `{"edits":[{"old":"p"}]}`, true, `{"edits":[{"old":"p","path":"X"}]}`},
		{"edits/*/path", `{"n":1}`, true, `{"edits":[{"path":"X"}],"n":1}`},
	} {
		var v any
		if err := json.Unmarshal([]byte(tc.in), &v); err != nil {
			t.Fatal(err)
		}
		s, err := argpath.Parse(tc.sel)
		if err != nil {
			t.Fatal(err)
		}
		got, _ := setPaths(v, s.Keys(), func() string { return "X" }, tc.create)
		if string(mustJSON(got)) != tc.want {
			t.Errorf("setPaths(%s, %s, create %v) = %s, want %s", tc.in, tc.sel, tc.create, mustJSON(got), tc.want)
		}
	}
}
