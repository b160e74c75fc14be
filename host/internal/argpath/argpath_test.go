package argpath

import (
	"encoding/json"
	"errors"
	"reflect"
	"strings"
	"testing"
)

func TestParse(t *testing.T) {
	for _, tc := range []struct {
		in      string
		keys    []string
		problem string // "" for a selector that parses
	}{
		{in: "path", keys: []string{"path"}},
		{in: "paths/*", keys: []string{"paths", "*"}},
		{in: "edits/*/path", keys: []string{"edits", "*", "path"}},
		{in: "a/b/c", keys: []string{"a", "b", "c"}},
		{in: "grid/*/*", keys: []string{"grid", "*", "*"}},
		{in: "", problem: "empty path argument name"},
		{in: "a//b", problem: "empty segment"},
		{in: "/path", problem: "empty segment"},
		{in: "paths/", problem: "empty segment"},
		{in: "*", problem: "starts with"},
		{in: "*/path", problem: "starts with"},
		{in: "paths/**", problem: "no other wildcard"},
		{in: "pa*th", problem: "no other wildcard"},
	} {
		s, err := Parse(tc.in)
		if tc.problem != "" {
			if err == nil || !strings.Contains(err.Error(), tc.problem) {
				t.Errorf("Parse(%q) = %v, %v; want an error saying %q", tc.in, s, err, tc.problem)
			}
			continue
		}
		if err != nil || !reflect.DeepEqual(s.Keys(), tc.keys) || s.String() != tc.in || s.TopLevel() != (len(tc.keys) == 1) {
			t.Errorf("Parse(%q) = %v (keys %q), %v; want keys %q", tc.in, s, s.Keys(), err, tc.keys)
		}
	}
}

func decode(t *testing.T, s string) any {
	t.Helper()
	var v any
	if err := json.Unmarshal([]byte(s), &v); err != nil {
		t.Fatal(err)
	}
	return v
}

// at renders found places as "pointer=text", "pointer absent".
func at(found []Found) []string {
	var out []string
	for _, f := range found {
		if f.Absent {
			out = append(out, f.Pointer+" absent")
			continue
		}
		out = append(out, f.Pointer+"="+f.Text)
	}
	return out
}

func TestFind(t *testing.T) {
	for _, tc := range []struct {
		name      string
		selectors []string
		args      string
		want      []string
		typeErr   string // the pointer of a *TypeError, "" for none
	}{
		{"top level", []string{"path"}, `{"path":"a.txt","n":1}`, []string{"/path=a.txt"}, ""},
		{"top level absent", []string{"path"}, `{"n":1}`, []string{"/path absent"}, ""},
		{"top level null", []string{"path"}, `{"path":null}`, []string{"/path absent"}, ""},
		{"top level empty string", []string{"path"}, `{"path":""}`, []string{"/path="}, ""},
		{"two top level in selector order", []string{"source", "destination"}, `{"destination":"b","source":"a"}`, []string{"/source=a", "/destination=b"}, ""},
		{"array", []string{"paths/*"}, `{"paths":["a","b/c","a"]}`, []string{"/paths/0=a", "/paths/1=b/c", "/paths/2=a"}, ""},
		{"empty array", []string{"paths/*"}, `{"paths":[]}`, nil, ""},
		{"absent array", []string{"paths/*"}, `{}`, nil, ""},
		{"null array", []string{"paths/*"}, `{"paths":null}`, nil, ""},
		{"null element", []string{"paths/*"}, `{"paths":["a",null]}`, []string{"/paths/0=a", "/paths/1 absent"}, ""},
		{"objects in an array", []string{"edits/*/path"}, `{"edits":[{"path":"a","old":"x"},{"path":"b"}]}`, []string{"/edits/0/path=a", "/edits/1/path=b"}, ""},
		{"an element without the key", []string{"edits/*/path"}, `{"edits":[{"path":"a"},{"old":"x"}]}`, []string{"/edits/0/path=a", "/edits/1/path absent"}, ""},
		{"a null element of objects", []string{"edits/*/path"}, `{"edits":[null]}`, []string{"/edits/0 absent"}, ""},
		{"absent array of objects", []string{"edits/*/path"}, `{"dry_run":true}`, nil, ""},
		{"nested objects", []string{"opts/out/file"}, `{"opts":{"out":{"file":"o.txt"}}}`, []string{"/opts/out/file=o.txt"}, ""},
		{"absent nested object", []string{"opts/out/file"}, `{}`, []string{"/opts absent"}, ""},
		{"arrays of arrays", []string{"grid/*/*"}, `{"grid":[["a","b"],[],["c"]]}`, []string{"/grid/0/0=a", "/grid/0/1=b", "/grid/2/0=c"}, ""},
		{"a key with a slash or tilde is escaped", []string{"m~x"}, `{"m~x":"a"}`, []string{"/m~0x=a"}, ""},
		// The schema validation ran before: a value of another type at a
		// place is refused rather than skipped, since the host cannot
		// check it and a lenient plugin might take it as a path.
		{"number where a path is", []string{"path"}, `{"path":5}`, nil, "/path"},
		{"number in the array", []string{"paths/*"}, `{"paths":["a",7]}`, nil, "/paths/1"},
		{"object in the array", []string{"paths/*"}, `{"paths":[{"p":"a"}]}`, nil, "/paths/0"},
		{"a string where the array is", []string{"paths/*"}, `{"paths":"a"}`, nil, "/paths"},
		{"an array where the object is", []string{"edits/*/path"}, `{"edits":[["a"]]}`, nil, "/edits/0"},
		{"a string element where objects are", []string{"edits/*/path"}, `{"edits":["a"]}`, nil, "/edits/0"},
		{"arguments that are an array", []string{"path"}, `["a"]`, nil, "/"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			found, err := Find(tc.selectors, decode(t, tc.args), 0)
			var te *TypeError
			switch {
			case tc.typeErr != "":
				if !errors.As(err, &te) || te.Pointer != tc.typeErr {
					t.Fatalf("Find = %q, %v; want a type error at %s", at(found), err, tc.typeErr)
				}
				if !strings.Contains(err.Error(), Name(tc.typeErr)) || !strings.Contains(err.Error(), te.Want) {
					t.Errorf("the error %q should name %s and what belongs there", err, tc.typeErr)
				}
			case err != nil:
				t.Fatalf("Find: %v", err)
			case !reflect.DeepEqual(at(found), tc.want):
				t.Errorf("Find = %q, want %q", at(found), tc.want)
			}
			for _, f := range found {
				if f.Selector == "" {
					t.Errorf("%s: no selector", f.Pointer)
				}
			}
		})
	}
}

func TestFindLimit(t *testing.T) {
	args := decode(t, `{"path":"x","paths":["a","b","c"],"edits":[{"path":"d"},{}]}`)
	sels := []string{"path", "paths/*", "edits/*/path"}
	// Five strings: four paths in arrays and one at the top; the absent
	// path of the second edit is not a path.
	if found, err := Find(sels, args, 5); err != nil || len(found) != 6 {
		t.Fatalf("at the limit: %q, %v; want six places, no error", at(found), err)
	}
	found, err := Find(sels, args, 4)
	var le *LimitError
	if !errors.As(err, &le) || le.Count != 5 || le.Limit != 4 || found != nil {
		t.Fatalf("past the limit: %q, %v; want a LimitError of 5 over 4 and nothing found", at(found), err)
	}
	if _, err := Find([]string{"a//b"}, args, 0); err == nil {
		t.Error("a selector that does not parse was used")
	}
}

func TestFoundName(t *testing.T) {
	for ptr, want := range map[string]string{"/path": "path", "/edits/2/path": "/edits/2/path", "/a~1b": "a/b", "/paths/0": "/paths/0", "/": "/"} {
		if got := (Found{Pointer: ptr}).Name(); got != want {
			t.Errorf("Name of %s = %q, want %q", ptr, got, want)
		}
	}
}

func TestMismatched(t *testing.T) {
	for _, tc := range []struct {
		name      string
		selectors []string
		args      string
		want      string // the pointer of the mismatched key, "" for none
	}{
		{"exact", []string{"path"}, `{"path":"a"}`, ""},
		{"top level", []string{"path"}, `{"path":"a","PATH":"b"}`, "/PATH"},
		{"top level alone", []string{"path"}, `{"Path":"b"}`, "/Path"},
		{"the first of several, sorted", []string{"path"}, `{"pATH":"b","PAth":"c"}`, "/PAth"},
		{"inside an array", []string{"edits/*/path"}, `{"edits":[{"path":"a"},{"PATH":"b"}]}`, "/edits/1/PATH"},
		{"the array's key", []string{"edits/*/path"}, `{"Edits":[{"path":"a"}]}`, "/Edits"},
		{"an array's key beside the exact one", []string{"paths/*"}, `{"paths":["a"],"PATHS":["b"]}`, "/PATHS"},
		{"unrelated keys", []string{"edits/*/path"}, `{"edits":[{"path":"a","old":"x"}],"other":{"PATH":"b"}}`, ""},
		{"wrong types are Find's to refuse", []string{"edits/*/path"}, `{"edits":{"PATH":"a"}}`, ""},
	} {
		m, found := Mismatched(tc.selectors, decode(t, tc.args))
		switch {
		case tc.want == "" && found:
			t.Errorf("%s: Mismatched = %+v, want none", tc.name, m)
		case tc.want != "" && (!found || m.Pointer != tc.want || !strings.EqualFold(m.Given, m.Want) || m.Given == m.Want):
			t.Errorf("%s: Mismatched = %+v, %v; want %s", tc.name, m, found, tc.want)
		}
	}
}
