package conformance

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/santhosh-tekuri/jsonschema/v5"

	"github.com/toolhost/toolhost/abi"
	"github.com/toolhost/toolhost/host/internal/config"
	"github.com/toolhost/toolhost/host/internal/tests/extism"
	"github.com/toolhost/toolhost/internal/testplugin"
)

// unconfined is a configuration whose commands run without run_command's
// sandbox, for the suite's tests that call tools with AllowExec: they test
// the checks, and the sandbox has its own suites (host/internal/confine, host/internal/tests/confine). Without it the suite's commands would fail
// closed (no Launcher here), and checks could pass on calls that never
// ran. Sandbox "off" takes network "on" with it, as the configuration
// requires.
func unconfined() *config.Config {
	cfg := config.Default()
	cfg.Tools.RunCommand.Sandbox = config.SandboxOff
	cfg.Tools.RunCommand.Network = config.NetworkOn
	return cfg
}

// runDynamic loads the plugin at module and runs the dynamic checks on
// it, as runPlugin does.
func runDynamic(t *testing.T, module string) []Result {
	t.Helper()
	return runDynamicOn(t, module, nil)
}

// runDynamicOn runs the dynamic checks that only allows (tool, check),
// every one when only is nil.
func runDynamicOn(t *testing.T, module string, only func(tool, check string) bool) []Result {
	t.Helper()
	ctx := context.Background()
	s, err := load(ctx, Plugin{Module: module}, Options{CacheDir: testplugin.CacheDir(t), Timeout: time.Second, AllowExec: true, Config: unconfined()})
	if err != nil {
		t.Fatalf("load %s: %v", module, err)
	}
	t.Cleanup(s.cleanup)
	var out []Result
	for _, c := range dynamicChecks() {
		if !c.perTool {
			if only == nil || only("", c.id) {
				out = append(out, timed(ctx, c, s, nil))
			}
			continue
		}
		for i := range s.tools {
			if only == nil || only(s.tools[i].Name, c.id) {
				out = append(out, timed(ctx, c, s, &s.tools[i]))
			}
		}
	}
	return out
}

func text(r Result) string {
	return r.Check + " " + string(r.Status) + ": " + r.Detail + "\n\t" + strings.Join(r.Findings, "\n\t")
}

// Built-in plugins pass every dynamic check, and the
// suite on one plugin takes seconds. A skip must say why, and only the
// manifest's own declarations may cause one. The two built-ins whose
// manifests cause skips run here; host/internal/tests/e2e runs the whole suite on
// every built-in through toolhost test, and make test again, so running
// all five here too would triple the slowest part of the tests.
func TestAttackChecksPassBuiltIns(t *testing.T) {
	dir := testplugin.BuiltIns(t)
	mods := []string{filepath.Join(dir, "apply_patch.wasm"), filepath.Join(dir, "run_command.wasm")}
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

// The deliberately broken plugins are run through the
// whole suite by host/internal/tests/conformance, through toolhost test itself: each
// must fail the check about its fault, naming it, and no other. Running
// them here as well doubled the package's time for no coverage.

// buildBroken builds host/internal/tests/conformance/broken/<name>; one whose start-up
// never ends cannot describe itself, so its manifest.json is packed into
// the module's toolhost.manifest section.
func buildBroken(t *testing.T, name string) string {
	t.Helper()
	wasm := testplugin.Build(t, t.TempDir(), "host/internal/tests/conformance/broken/"+name)
	manifest, err := os.ReadFile(filepath.Join(testplugin.ModuleRoot(t), "host", "internal", "tests", "conformance", "broken", name, "manifest.json"))
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

// What the generator calls valid, the schema accepts,
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

// The dynamic checks apply to Extism MCP plugins
// too, through the same host: a well-behaved one passes every check, and
// a tool that spins fails call.deadline. (make test runs toolhost test on
// every Extism test plugin, the servlet included.)
func TestAttackChecksExtism(t *testing.T) {
	for _, r := range runDynamic(t, extism.Build(t, extism.HyperTools)) {
		if r.Status == StatusFail {
			t.Errorf("%s: %s %s", extism.HyperTools, r.Tool, text(r))
		}
	}
	var spin *Result
	results := runDynamicOn(t, extism.Build(t, extism.Misbehave), func(tool, check string) bool {
		return tool == "spin" && check == "call.deadline"
	})
	for i, r := range results {
		if r.Tool == "spin" && r.Check == "call.deadline" {
			spin = &results[i]
		}
	}
	if spin == nil || spin.Status != StatusFail || !strings.Contains(text(*spin), "deadline") {
		t.Fatalf("misbehave's spin: call.deadline %+v, want a failure naming the deadline", spin)
	}
}
