package conformance

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/santhosh-tekuri/jsonschema/v5"

	"github.com/toolhost/toolhost/abi"
	"github.com/toolhost/toolhost/internal/testplugin"
	"github.com/toolhost/toolhost/tests/extism"
)

// runDynamic loads the plugin at module and runs the dynamic checks on
// it, as runPlugin does.
func runDynamic(t *testing.T, module string) []Result {
	t.Helper()
	ctx := context.Background()
	s, err := load(ctx, Plugin{Module: module}, Options{CacheDir: testplugin.CacheDir(t), Timeout: time.Second})
	if err != nil {
		t.Fatalf("load %s: %v", module, err)
	}
	var out []Result
	for _, c := range dynamicChecks() {
		if !c.perTool {
			out = append(out, timed(ctx, c, s, nil))
			continue
		}
		for i := range s.tools {
			out = append(out, timed(ctx, c, s, &s.tools[i]))
		}
	}
	return out
}

func text(r Result) string {
	return r.Check + " " + string(r.Status) + ": " + r.Detail + "\n\t" + strings.Join(r.Findings, "\n\t")
}

// issue 13 item 1: every built-in plugin passes every dynamic check, and
// the suite on one plugin takes seconds. A skip must say why, and only
// the manifest's own declarations may cause one.
func TestAttackChecksPassBuiltIns(t *testing.T) {
	dir := testplugin.BuiltIns(t)
	mods, _ := filepath.Glob(filepath.Join(dir, "*.wasm"))
	if len(mods) == 0 {
		t.Fatal("no built-in plugins")
	}
	allowedSkips := map[string]string{
		"run_command call.deterministic": "nondeterministic",
		"run_command call.unnamed-files": "proc.exec",
		"apply_patch call.unnamed-files": "writes_unnamed_paths",
	}
	for _, mod := range mods {
		t.Run(filepath.Base(mod), func(t *testing.T) {
			start := time.Now()
			for _, r := range runDynamic(t, mod) {
				switch r.Status {
				case StatusFail:
					t.Errorf("%s", text(r))
				case StatusSkip:
					want := allowedSkips[r.Tool+" "+r.Check]
					if want == "" || !strings.Contains(r.Detail, want) {
						t.Errorf("unexpected skip: %s", text(r))
					}
				}
				t.Logf("%-8s %-20s %6dms %s", r.Status, r.Check, r.Elapsed.Milliseconds(), r.Detail)
			}
			t.Logf("%s: dynamic checks took %s", filepath.Base(mod), time.Since(start).Round(time.Millisecond))
		})
	}
}

// issue 13 items 1 and 2: each deliberately broken plugin fails the
// dynamic check that is about its fault, naming what it did, and no
// dynamic check its fault does not explain; the control plugin (good)
// fails none.
func TestAttackChecksFailBroken(t *testing.T) {
	tests := []struct {
		name    string
		check   string // "" for none
		reasons []string
		also    []string
	}{
		{name: "good"},
		{name: "unchecked_path", also: []string{"call.escape", "call.unnamed-files"}},
		{name: "spin_loop", check: "call.deadline", reasons: []string{`3s deadline`, `stopped`}},
		{name: "spin_init", check: "start.spin", reasons: []string{`_initialize`}},
		{name: "trap_bad_input", check: "call.generated", reasons: []string{`"word":""`, `panicked`}},
		{name: "output_flood", check: "call.output-cap", reasons: []string{`1048576 bytes`, `cap of \d+`, `no_truncate`}},
		{
			name: "escape_attempt", check: "call.escape",
			reasons: []string{`"\.\./\.\./etc/passwd"`, `"/etc/passwd"`, `"\.\./state"`, `outside the root`},
			also:    []string{"call.unnamed-files"},
		},
		{name: "unnamed_write", check: "call.unnamed-files", reasons: []string{`fs_write "other\.txt"`}},
		{name: "summary_io", check: "summary.pure", reasons: []string{`fs_stat "a\.txt"`}},
		{name: "nondeterministic_liar", check: "call.deterministic", reasons: []string{`lucky \d+`}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			results := runDynamic(t, buildBroken(t, tc.name))
			var all []string
			for _, r := range results {
				all = append(all, text(r))
			}
			found := tc.check == ""
			for _, r := range results {
				switch {
				case r.Check == tc.check:
					found = true
					if r.Status != StatusFail {
						t.Fatalf("%s is %s, want fail; results:\n%s", tc.check, r.Status, strings.Join(all, "\n"))
					}
					for _, reason := range tc.reasons {
						if !regexp.MustCompile(reason).MatchString(text(r)) {
							t.Errorf("%s failed without naming %s:\n%s", tc.check, reason, text(r))
						}
					}
				case r.Status == StatusFail && !slices.Contains(tc.also, r.Check):
					t.Errorf("%s also failed, which its fault does not explain: %s", r.Check, text(r))
				}
			}
			if !found {
				t.Fatalf("no %s result; results:\n%s", tc.check, strings.Join(all, "\n"))
			}
		})
	}
}

// buildBroken builds tests/conformance/broken/<name>; one whose start-up
// never ends cannot describe itself, so its manifest.json is packed into
// the module's toolhost.manifest section.
func buildBroken(t *testing.T, name string) string {
	t.Helper()
	wasm := testplugin.Build(t, t.TempDir(), "tests/conformance/broken/"+name)
	manifest, err := os.ReadFile(filepath.Join(testplugin.ModuleRoot(t), "tests", "conformance", "broken", name, "manifest.json"))
	if os.IsNotExist(err) {
		return wasm
	}
	if err != nil {
		t.Fatal(err)
	}
	module, err := os.ReadFile(wasm)
	if err != nil {
		t.Fatal(err)
	}
	body := binary.AppendUvarint(nil, uint64(len(abi.ManifestSection)))
	body = append(append(body, abi.ManifestSection...), bytes.TrimSpace(manifest)...)
	module = binary.AppendUvarint(append(module, 0), uint64(len(body)))
	if err := os.WriteFile(wasm, append(module, body...), 0o644); err != nil {
		t.Fatal(err)
	}
	return wasm
}

// issue 13 item 1: what the generator calls valid, the schema accepts,
// and what it calls invalid (but for bytes that are not JSON), the schema
// refuses; the same schema gives the same arguments every time.
func TestGeneratorFollowsSchema(t *testing.T) {
	schemas := []string{
		`{"type":"object","properties":{"path":{"type":"string","minLength":1},"start_line":{"type":"integer","minimum":1,"maximum":4294967295}},"required":["path"],"additionalProperties":false}`,
		`{"type":"object","properties":{"depth":{"type":"integer","minimum":1,"maximum":16},"mode":{"enum":["a","b"]},"name":{"type":"string","maxLength":3},"ratio":{"type":"number","exclusiveMinimum":0},"tags":{"type":"array","items":{"type":"string"},"minItems":1},"opt":{"type":["boolean","null"]}},"required":["depth","tags"]}`,
		`{"type":"object","properties":{"inner":{"type":"object","properties":{"k":{"type":"string","minLength":2}},"required":["k"]}},"required":["inner"],"additionalProperties":false}`,
	}
	for i, raw := range schemas {
		c := jsonschema.NewCompiler()
		c.Draft = jsonschema.Draft2020
		if err := c.AddResource("s.json", strings.NewReader(raw)); err != nil {
			t.Fatal(err)
		}
		schema := c.MustCompile("s.json")
		m := &abi.Manifest{Name: "t", Parameters: json.RawMessage(raw), PathArgs: []string{"path"}}
		g := newGenerator(m, pathFixtures())
		valid := g.valid(generatedSets)
		again := newGenerator(m, pathFixtures()).valid(generatedSets)
		if string(mustJSON(valid)) != string(mustJSON(again)) {
			t.Errorf("schema %d: the generator is not deterministic:\n%s\n%s", i, mustJSON(valid), mustJSON(again))
		}
		for _, args := range valid {
			var v any
			json.Unmarshal(mustJSON(args), &v)
			if err := schema.Validate(v); err != nil {
				t.Errorf("schema %d: generated %s is invalid: %v", i, mustJSON(args), err)
			}
		}
		for _, inv := range g.invalid(valid[0]) {
			var v any
			if json.Unmarshal(inv.args, &v) != nil {
				continue // not JSON: the host refuses it before any schema
			}
			if schema.Validate(v) == nil {
				t.Errorf("schema %d: %s (%s) is valid", i, inv.args, inv.why)
			}
		}
	}
}

// issue 13 items 1 and 5: the dynamic checks apply to Extism MCP plugins
// too, through the same host: the well-behaved ones pass every check, and
// a tool that spins fails call.deadline.
func TestAttackChecksExtism(t *testing.T) {
	for _, name := range []string{extism.HyperTools, extism.Servlet} {
		for _, r := range runDynamic(t, extism.Build(t, name)) {
			if r.Status == StatusFail {
				t.Errorf("%s: %s %s", name, r.Tool, text(r))
			}
		}
	}
	var spin *Result
	results := runDynamic(t, extism.Build(t, extism.Misbehave))
	for i, r := range results {
		if r.Tool == "spin" && r.Check == "call.deadline" {
			spin = &results[i]
		}
	}
	if spin == nil || spin.Status != StatusFail || !strings.Contains(text(*spin), "deadline") {
		t.Fatalf("misbehave's spin: call.deadline %+v, want a failure naming the deadline", spin)
	}
}
