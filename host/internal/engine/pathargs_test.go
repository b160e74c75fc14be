package engine

import (
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/toolhost/toolhost/abi"
	"github.com/toolhost/toolhost/host/internal/hostfn"
	"github.com/toolhost/toolhost/host/internal/registry"
	"github.com/toolhost/toolhost/host/internal/sandbox"
)

// arrayTool is a manifest whose path arguments sit inside arrays, as
// read_multiple_files' and multi_edit's do.
func arrayTool(t testing.TB, caps ...abi.Capability) *registry.Tool {
	t.Helper()
	m := abi.Manifest{
		ABI: abi.Version, Name: "many", Description: "d", RiskLevel: abi.RiskMedium,
		Parameters: json.RawMessage(`{"type":"object","properties":{
			"paths":{"type":"array","items":{"type":"string"}},
			"edits":{"type":"array","items":{"type":"object","properties":{"path":{"type":"string"},"text":{"type":"string"}}}},
			"opaque":{}}}`),
		PathArgs: []string{"paths/*", "edits/*/path"}, CreateArgs: []string{"edits/*/path"},
		Capabilities: caps,
	}
	tool, err := registry.NewTool(m, nil)
	if err != nil {
		t.Fatal(err)
	}
	return tool
}

// Every string an array selector reaches is checked against the sandbox
// before the plugin runs (FR-VAL-02); a refusal names the one refused by
// its JSON pointer, and a value the host cannot check is refused rather
// than passed on unchecked.
func TestPreflightPathArgsInArrays_FR_VAL_02(t *testing.T) {
	f := newFixture(t, abi.Limits{})
	f.write(t, "a.txt", "a\n")
	tool := arrayTool(t, abi.CapFSRead, abi.CapFSWrite)
	many := func(n int) string {
		ps := make([]string, n)
		for i := range ps {
			ps[i] = fmt.Sprintf("%q", fmt.Sprintf("f%d.txt", i))
		}
		return `{"paths":[` + strings.Join(ps, ",") + `]}`
	}
	for _, tc := range []struct {
		name, args string
		kind       abi.ErrorKind // "" for a call that passes
		says       []string
		resolved   []string // the texts resolved, for one that passes
	}{
		{"every path resolved", `{"paths":["a.txt","b/c.txt","a.txt"],"edits":[{"path":"new.txt","text":"x"},{"path":"a.txt"}]}`, "", nil, []string{"a.txt", "b/c.txt", "new.txt"}},
		{"empty and absent arrays", `{"paths":[]}`, "", nil, []string{}},
		{"an element without a path", `{"edits":[{"text":"x"}]}`, "", nil, []string{}},
		{"a denied path in an array", `{"paths":["a.txt","../etc/passwd"]}`, abi.KindSandboxViolation, []string{`argument "/paths/1"`}, nil},
		{"a denied path in an array of objects", `{"edits":[{"path":"a.txt"},{"path":"ok.txt"},{"path":".ssh/id_rsa"}]}`, abi.KindSandboxViolation, []string{`argument "/edits/2/path"`}, nil},
		{"a number among the paths", `{"paths":["a.txt",3]}`, abi.KindBadArgs, []string{`"/paths/1" is a number`, `"paths/*" needs a string`}, nil},
		{"a string where the array is", `{"edits":"a.txt"}`, abi.KindBadArgs, []string{`argument "edits" is a string`, "needs an array", `send an array as "edits"`}, nil},
		{"at the bound", many(maxPathArgs), "", nil, nil},
		{"past the bound", many(maxPathArgs + 1), abi.KindSandboxViolation, []string{"1001 paths", "more than the 1000 one call may name", "Split the work into calls of at most 1000"}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var decoded any
			if err := json.Unmarshal([]byte(tc.args), &decoded); err != nil {
				t.Fatal(err)
			}
			resolved, terr := f.eng.preflight(Call{ID: "c1", Name: "many", Arguments: json.RawMessage(tc.args)}, tool.Manifest, decoded)
			if tc.kind == "" {
				if terr != nil {
					t.Fatalf("refused: %+v", terr)
				}
				if tc.resolved != nil {
					if got := slices.Sorted(maps.Keys(resolved)); !slices.Equal(got, tc.resolved) {
						t.Errorf("resolved %q, want %q", got, tc.resolved)
					}
				}
				return
			}
			if terr == nil || terr.Kind != tc.kind {
				t.Fatalf("preflight = %+v, want %s", terr, tc.kind)
			}
			for _, s := range tc.says {
				if !strings.Contains(terr.Message, s) {
					t.Errorf("message %q does not say %q", terr.Message, s)
				}
			}
			if strings.Contains(tc.name, "bound") && !strings.Contains(string(terr.Details), `"reason":"LimitsExceeded"`) {
				t.Errorf("details %s, want the reason LimitsExceeded", terr.Details)
			}
		})
	}
}

// A key spelled like one a selector names, in another case at any level,
// is refused: the plugin might take the value the host never checked.
func TestPathArgumentCaseRefusedInArrays(t *testing.T) {
	tool := arrayTool(t, abi.CapFSRead)
	e := &Engine{cfg: Config{MaxArgsBytes: 1 << 20}}
	for args, want := range map[string]string{
		`{"edits":[{"path":"a.txt"},{"PATH":"/etc/passwd"}]}`: `argument "/edits/1/PATH" (key "PATH") is not many's path argument "edits/*/path"`,
		`{"Paths":["/etc/passwd"]}`:                           `argument "Paths" is not many's path argument "paths"`,
	} {
		_, terr := e.validateArgs(Call{ID: "c1", Name: "many", Arguments: json.RawMessage(args)}, tool)
		if terr == nil || terr.Kind != abi.KindBadArgs || !strings.Contains(terr.Message, want) {
			t.Errorf("%s: %+v, want BadArgs saying %q", args, terr, want)
		}
	}
	if _, terr := e.validateArgs(Call{ID: "c2", Name: "many", Arguments: json.RawMessage(`{"edits":[{"path":"a.txt","text":"PATH"}]}`)}, tool); terr != nil {
		t.Errorf("exact keys refused: %+v", terr)
	}
}

// The paths inside arrays are the call's write grants and read scope, a
// call only creates when none of its create paths exists, and an
// approval shows each with its canonical path.
func TestPathArgsInArraysGrantScopeAndApproval(t *testing.T) {
	f := newFixture(t, abi.Limits{})
	f.write(t, "a.txt", "a\n")
	tool := arrayTool(t, abi.CapFSRead, abi.CapFSWrite)
	m := tool.Manifest
	plan := func(args string) (any, map[string]string) {
		t.Helper()
		var decoded any
		if err := json.Unmarshal([]byte(args), &decoded); err != nil {
			t.Fatal(err)
		}
		resolved, terr := f.eng.preflight(Call{ID: "c", Name: "many", Arguments: json.RawMessage(args)}, m, decoded)
		if terr != nil {
			t.Fatal(terr)
		}
		abs := map[string]string{}
		for given, p := range resolved {
			abs[given] = p.Abs
		}
		return decoded, abs
	}

	fresh := `{"paths":["a.txt"],"edits":[{"path":"n1.txt","text":"x"},{"path":"d/n2.txt"}]}`
	decoded, abs := plan(fresh)
	resolved, _ := f.eng.preflight(Call{ID: "c"}, m, decoded)
	if !onlyCreates(m, decoded, resolved) {
		t.Error("a call whose create paths are all new does not only create")
	}
	grants := writeGrants(m, decoded, resolved, true)
	want := map[string]hostfn.WriteGrant{abs["n1.txt"]: hostfn.WriteCreateOnly, abs["d/n2.txt"]: hostfn.WriteCreateOnly}
	if !maps.Equal(grants, want) {
		t.Errorf("grants %v, want %v (the read path a.txt is no write grant)", grants, want)
	}
	scope := f.eng.readScope(m, Call{Arguments: json.RawMessage(fresh)}, resolved)
	for _, given := range []string{"a.txt", "n1.txt", "d/n2.txt"} {
		if !scope.Paths[abs[given]] {
			t.Errorf("read scope %v lacks %s", scope.Paths, given)
		}
	}
	args := f.eng.arguments(m, json.RawMessage(fresh), resolved)
	shown := map[string]string{}
	for _, a := range args {
		if len(a.Paths) == 1 {
			shown[a.Name] = a.Paths[0].String()
		}
	}
	if want := map[string]string{"paths[0]": "a.txt", "edits[0].path": "n1.txt", "edits[1].path": "d/n2.txt"}; !maps.Equal(shown, want) {
		t.Errorf("approval shows paths %v, want %v", shown, want)
	}

	for name, args := range map[string]string{
		"one create path exists":         `{"edits":[{"path":"n1.txt"},{"path":"a.txt"}]}`,
		"an element without a path":      `{"edits":[{"path":"n1.txt"},{"text":"x"}]}`,
		"no create path at all":          `{"paths":["n1.txt"]}`,
		"an empty array of create paths": `{"edits":[]}`,
	} {
		decoded, _ := plan(args)
		resolved, _ := f.eng.preflight(Call{ID: "c"}, m, decoded)
		if onlyCreates(m, decoded, resolved) {
			t.Errorf("%s: planned as only creating", name)
		}
	}
	decoded, abs = plan(`{"edits":[{"path":"a.txt"},{"path":"n1.txt"}]}`)
	resolved, _ = f.eng.preflight(Call{ID: "c"}, m, decoded)
	if got := writeGrants(m, decoded, resolved, false); !maps.Equal(got, map[string]hostfn.WriteGrant{abs["a.txt"]: hostfn.WriteAny, abs["n1.txt"]: hostfn.WriteAny}) {
		t.Errorf("replacing: grants %v", got)
	}
}

// A call that would write a read-only path named inside an array is
// refused while it is planned, before anyone is asked, naming the path.
func TestReadOnlyPathInArrayRefusedBeforeAsking(t *testing.T) {
	f := newFixture(t, abi.Limits{})
	tool := arrayTool(t, abi.CapFSRead, abi.CapFSWrite)
	args := `{"edits":[{"path":"ok.txt"},{"path":"frozen/x.txt"}]}`
	var decoded any
	if err := json.Unmarshal([]byte(args), &decoded); err != nil {
		t.Fatal(err)
	}
	resolved, terr := f.eng.preflight(Call{ID: "c"}, tool.Manifest, decoded)
	if terr != nil {
		t.Fatal(terr)
	}
	terr = f.eng.readOnlyCheck(Call{ID: "c"}, tool.Manifest, decoded, resolved)
	if terr == nil || terr.Kind != abi.KindSandboxViolation || !strings.Contains(string(terr.Details), "frozen/x.txt") {
		t.Fatalf("readOnlyCheck = %+v, want a SandboxViolation naming frozen/x.txt", terr)
	}
}

// BenchmarkPreflightPathArgs is what checking the paths of one call
// costs before its plugin runs, up to the bound (maxPathArgs): each
// resolved through the sandbox, half of them existing files.
func BenchmarkPreflightPathArgs(b *testing.B) {
	root := b.TempDir()
	sb, err := sandbox.New(sandbox.Config{Roots: []string{root}, IncludeDefaultDenies: true})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { sb.Close() })
	e := &Engine{cfg: Config{Sandbox: sb}}
	tool := arrayTool(b, abi.CapFSRead)
	for _, n := range []int{1, 100, maxPathArgs} {
		ps := make([]any, n)
		for i := range ps {
			name := fmt.Sprintf("d%d/f%d.txt", i%10, i)
			if i%2 == 0 {
				if err := os.MkdirAll(filepath.Join(root, filepath.Dir(name)), 0o755); err != nil {
					b.Fatal(err)
				}
				if err := os.WriteFile(filepath.Join(root, name), []byte("x\n"), 0o644); err != nil {
					b.Fatal(err)
				}
			}
			ps[i] = name
		}
		decoded := map[string]any{"paths": ps}
		b.Run(fmt.Sprint(n), func(b *testing.B) {
			for b.Loop() {
				if _, terr := e.preflight(Call{ID: "c"}, tool.Manifest, decoded); terr != nil {
					b.Fatal(terr)
				}
			}
		})
	}
}
