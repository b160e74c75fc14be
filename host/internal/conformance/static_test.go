package conformance

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/toolhost/toolhost/abi"
	"github.com/toolhost/toolhost/host/internal/runtime"
	"github.com/toolhost/toolhost/host/internal/wasmbin"
	"github.com/toolhost/toolhost/internal/testplugin"
)

// wasm builds a tiny module for the static checks: its types, function
// imports (module, name, type), defined functions (type indices) and
// exports (name → function index, or -1 for the memory). It has no code:
// the static checks never read any.
type wasm struct {
	types   []signature
	imports [][3]any // module, name, type index (a uint32), or kind byte for non-functions
	funcs   []uint32
	exports map[string]int
	memory  bool
	start   bool
}

func (w wasm) bytes() []byte {
	out := []byte(wasmbin.Header)
	name := func(b []byte, s string) []byte { return append(binary.AppendUvarint(b, uint64(len(s))), s...) }
	var body []byte
	body = binary.AppendUvarint(body, uint64(len(w.types)))
	for _, t := range w.types {
		body = append(body, 0x60)
		body = append(binary.AppendUvarint(body, uint64(len(t.params))), t.params...)
		body = append(binary.AppendUvarint(body, uint64(len(t.results))), t.results...)
	}
	out = wasmbin.AppendSection(out, wasmbin.SectionType, body)
	if len(w.imports) > 0 {
		body = binary.AppendUvarint(nil, uint64(len(w.imports)))
		for _, imp := range w.imports {
			body = name(name(body, imp[0].(string)), imp[1].(string))
			switch v := imp[2].(type) {
			case uint32:
				body = binary.AppendUvarint(append(body, wasmbin.KindFunc), uint64(v))
			case byte: // a memory
				body = append(body, v, 0x00, 0x01)
			}
		}
		out = wasmbin.AppendSection(out, wasmbin.SectionImport, body)
	}
	body = binary.AppendUvarint(nil, uint64(len(w.funcs)))
	for _, f := range w.funcs {
		body = binary.AppendUvarint(body, uint64(f))
	}
	out = wasmbin.AppendSection(out, sectionFunction, body)
	if w.memory {
		out = wasmbin.AppendSection(out, 5, []byte{1, 0x00, 0x01})
	}
	body = binary.AppendUvarint(nil, uint64(len(w.exports)))
	for n, idx := range w.exports {
		body = name(body, n)
		if idx < 0 {
			body = append(body, wasmbin.KindMemory, 0)
		} else {
			body = binary.AppendUvarint(append(body, wasmbin.KindFunc), uint64(idx))
		}
	}
	out = wasmbin.AppendSection(out, wasmbin.SectionExport, body)
	if w.start {
		out = wasmbin.AppendSection(out, wasmbin.SectionStart, []byte{0})
	}
	return out
}

// Types of the well-formed module.
var (
	tVoid    = signature{}
	tAlloc   = signature{[]byte{i32}, []byte{i32}}
	tDescr   = signature{nil, []byte{i64}}
	tCall    = signature{[]byte{i32, i32}, []byte{i64}}
	tFSRead  = signature{[]byte{i32, i32, i64, i64, i32}, []byte{i64}}
	tWrongFn = signature{[]byte{i32}, []byte{i64}}
)

// goodModule is a well-formed toolhost/v1 module importing fs_read and
// fs_stat: types 0 void, 1 alloc, 2 describe, 3 call, 4 fs_read,
// 5 fs_stat (= call's type).
func goodModule() wasm {
	return wasm{
		types: []signature{tVoid, tAlloc, tDescr, tCall, tFSRead},
		imports: [][3]any{
			{abi.HostModule, abi.FnFSRead, uint32(4)},
			{abi.HostModule, abi.FnFSStat, uint32(3)},
			{"wasi_snapshot_preview1", "fd_write", uint32(3)},
		},
		// 3 imported functions, then: _initialize, marker, alloc, describe, summary, call.
		funcs: []uint32{0, 0, 1, 2, 3, 3},
		exports: map[string]int{
			abi.StartFunction: 3, abi.ExportVersionMarker: 4, abi.ExportAlloc: 5,
			abi.ExportDescribe: 6, abi.ExportSummary: 7, abi.ExportCall: 8, "memory": -1,
		},
		memory: true,
	}
}

// commitModule is goodModule importing fs_commit alone (its type does
// not matter to the capability checks).
func commitModule() wasm {
	w := goodModule()
	w.imports = [][3]any{{abi.HostModule, abi.FnFSCommit, uint32(3)}, w.imports[2]}
	for k, v := range w.exports {
		if v > 0 {
			w.exports[k] = v - 1
		}
	}
	return w
}

func subjectOf(w wasm, caps ...abi.Capability) *subject {
	m := abi.Manifest{ABI: abi.Version, Name: "t", Capabilities: caps}
	return &subject{module: w.bytes(), kind: KindNative, described: []abi.Manifest{m}}
}

// expectResult checks a result's status and that its text matches each
// pattern.
func expectResult(t *testing.T, r Result, status Status, patterns ...string) {
	t.Helper()
	text := r.Detail + "\n" + strings.Join(r.Findings, "\n")
	if r.Status != status {
		t.Fatalf("status %s, want %s: %s", r.Status, status, text)
	}
	for _, p := range patterns {
		if !regexp.MustCompile(p).MatchString(text) {
			t.Errorf("result does not match %q:\n%s", p, text)
		}
	}
}

// The ABI checks read exports and imports from the binary and name what
// is wrong precisely.
func TestABIChecks(t *testing.T) {
	ctx := context.Background()
	for _, tc := range []struct {
		name     string
		module   func() wasm
		caps     []abi.Capability
		check    func(context.Context, *subject, *abi.Manifest) Result
		status   Status
		patterns []string
	}{
		{"exports good", goodModule, []abi.Capability{abi.CapFSRead}, checkExports, StatusPass, nil},
		{"call has the wrong type", func() wasm {
			w := goodModule()
			w.types = append(w.types, tWrongFn)
			w.funcs[5] = 5 // toolhost_call: (i32) -> i64
			return w
		}, nil, checkExports, StatusFail, []string{`toolhost_call has type \(i32\) -> i64, want \(i32, i32\) -> i64`}},
		{"missing alloc and memory", func() wasm {
			w := goodModule()
			delete(w.exports, abi.ExportAlloc)
			delete(w.exports, "memory")
			return w
		}, nil, checkExports, StatusFail, []string{`toolhost_alloc is not exported: export a function \(i32\) -> i32`, `no memory is exported`}},
		{"start section", func() wasm { w := goodModule(); w.start = true; return w }, nil, checkExports, StatusFail, []string{`start section`, `reactor`}},
		{"version good", goodModule, nil, checkVersion, StatusPass, nil},
		{"marker with a type", func() wasm {
			w := goodModule()
			w.exports[abi.ExportVersionMarker] = 5 // alloc
			return w
		}, nil, checkVersion, StatusFail, []string{`toolhost_abi_v1 must be a function \(\) -> \(\), got \(i32\) -> i32`}},
		{"imports granted", goodModule, []abi.Capability{abi.CapFSRead}, checkImports, StatusPass, nil},
		{"fs_read without fs.read", goodModule, []abi.Capability{abi.CapFSList}, checkImports, StatusFail,
			[]string{`toolhost_v1\.fs_read, which needs capability fs\.read`}},
		{"an env import, an unknown host function, a wrong type, a memory", func() wasm {
			w := goodModule()
			w.imports = append(w.imports[:2:2],
				[3]any{"env", "getrandom", uint32(3)},
				[3]any{abi.HostModule, "net_fetch", uint32(3)},
				[3]any{abi.HostModule, abi.FnFSList, uint32(3)},
				[3]any{"env", "memory", wasmbin.KindMemory})
			return w
		}, []abi.Capability{abi.CapFSRead, abi.CapFSList}, checkImports, StatusFail, []string{
			`imports env\.getrandom: plugins may import only from toolhost_v1 and wasi_snapshot_preview1`,
			`imports toolhost_v1\.net_fetch, which toolhost/v1 does not define`,
			`imports toolhost_v1\.fs_list with type \(i32, i32\) -> i64, want \(i32, i32, i32, i32, i32\) -> i64`,
			`imports a memory env\.memory`,
		}},
		{"every capability used", goodModule, []abi.Capability{abi.CapFSRead}, checkLeastPrivilege, StatusPass, []string{`fs\.read \(fs_stat, fs_read\)`}},
		{"an unused capability", goodModule, []abi.Capability{abi.CapFSRead, abi.CapProcExec}, checkLeastPrivilege, StatusFail,
			[]string{`capability proc\.exec is declared but no import uses it \(it grants proc_run, proc_exec\): remove "proc\.exec"`}},
		{"a capability only for what another grants", goodModule, []abi.Capability{abi.CapFSRead, abi.CapFSList}, checkLeastPrivilege, StatusFail,
			[]string{`capability fs\.list is declared but the other capabilities already grant what it is used for \(fs_stat\)`}},
		{"no capability", func() wasm { w := goodModule(); w.imports = nil; return w }, nil, checkLeastPrivilege, StatusPass, []string{`no capability`}},
		{"fs.delete without fs_commit", goodModule, []abi.Capability{abi.CapFSRead, abi.CapFSDelete}, checkLeastPrivilege, StatusFail,
			[]string{`capability fs\.delete is declared but the other capabilities already grant what it is used for \(fs_stat\)`}},
		{"fs.delete unused", func() wasm { w := goodModule(); w.imports = w.imports[:1]; return w }, []abi.Capability{abi.CapFSRead, abi.CapFSDelete}, checkLeastPrivilege, StatusFail,
			[]string{`capability fs\.delete is declared but no import uses it \(it grants fs_stat, fs_commit\): remove "fs\.delete"`}},
		{"fs.delete and fs.write share fs_commit", commitModule, []abi.Capability{abi.CapFSWrite, abi.CapFSDelete}, checkLeastPrivilege, StatusPass,
			[]string{`fs\.delete \(fs_commit\); fs\.write \(fs_commit\)`}},
		{"fs.delete alone commits", commitModule, []abi.Capability{abi.CapFSDelete}, checkLeastPrivilege, StatusPass, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := subjectOf(tc.module(), tc.caps...)
			expectResult(t, tc.check(ctx, s, nil), tc.status, tc.patterns...)
		})
	}
}

// A module whose manifest could not be read still gets its imports
// checked, without claiming a capability verdict.
func TestImportsWithoutManifest(t *testing.T) {
	s := &subject{module: goodModule().bytes(), kind: KindNative}
	expectResult(t, checkImports(context.Background(), s, nil), StatusPass, `capability coverage is unchecked`)
	expectResult(t, checkLeastPrivilege(context.Background(), s, nil), StatusSkip)
}

func manifestWith(edit func(*abi.Manifest)) abi.Manifest {
	m := abi.Manifest{
		ABI: abi.Version, Name: "tool", Version: "1.0.0", Description: "A tool.",
		Parameters: json.RawMessage(`{"type":"object","properties":{"path":{"type":"string"},"n":{"type":"integer"}}}`),
		RiskLevel:  abi.RiskLow, PathArgs: []string{"path"}, Capabilities: []abi.Capability{abi.CapFSRead},
	}
	edit(&m)
	return m
}

// The manifest checks hold a manifest to what its capabilities allow
// and to what the host needs to check its arguments.
func TestManifestChecks(t *testing.T) {
	ctx := context.Background()
	native := &subject{kind: KindNative}
	for _, tc := range []struct {
		name     string
		edit     func(*abi.Manifest)
		check    func(context.Context, *subject, *abi.Manifest) Result
		status   Status
		patterns []string
	}{
		{"fields good", func(*abi.Manifest) {}, checkFields, StatusPass, nil},
		{"bad name, no description, no version, bad risk, long timeout, unknown capability", func(m *abi.Manifest) {
			m.Name, m.Description, m.Version, m.RiskLevel, m.TimeoutMillis = "Bad-Name", " ", "", "none", 1<<40
			m.Capabilities = append(m.Capabilities, "net.http")
		}, checkFields, StatusFail, []string{`name "Bad-Name" must match`, `description is empty`, `version is empty`,
			`risk_level "none"`, `timeout_ms \d+ is more than`, `capability "net\.http" is unknown`}},
		// A 10 MB description, and escape sequences
		// or a bidi override in the text people and models are shown.
		{"a 10 MB description", func(m *abi.Manifest) { m.Description = strings.Repeat("Reads. ", 10<<20/7) }, checkFields, StatusFail,
			[]string{`description is \d+ bytes, more than 8192`}},
		{"escapes in description and version", func(m *abi.Manifest) {
			m.Description, m.Version = "Reads.\x1b]0;owned\x07", "1.0\u202e"
		}, checkFields, StatusFail, []string{`description holds a control .*byte 6`, `version holds a control`}},
		{"schema good", func(*abi.Manifest) {}, checkSchema, StatusPass, nil},
		{"schema not an object type", func(m *abi.Manifest) { m.Parameters = json.RawMessage(`{"type":"array"}`) }, checkSchema, StatusFail,
			[]string{`type is "array", want "object"`}},
		{"schema without type", func(m *abi.Manifest) { m.Parameters = json.RawMessage(`{"properties":{}}`) }, checkSchema, StatusFail,
			[]string{`type is missing`}},
		{"schema does not compile", func(m *abi.Manifest) {
			m.Parameters = json.RawMessage(`{"type":"object","properties":{"n":{"type":"integer","minimum":"one"}}}`)
		}, checkSchema, StatusFail, []string{`does not compile as JSON Schema Draft 2020-12`}},
		{"schema of another draft", func(m *abi.Manifest) {
			m.Parameters = json.RawMessage(`{"$schema":"http://json-schema.org/draft-07/schema#","type":"object"}`)
		}, checkSchema, StatusFail, []string{`\$schema is "http://json-schema.org/draft-07/schema#"`}},
		{"schema missing", func(m *abi.Manifest) { m.Parameters = nil }, checkSchema, StatusFail, []string{`parameters is missing`}},
		{"path args good", func(*abi.Manifest) {}, checkPathArgs, StatusPass, nil},
		{"path arg not in the schema, or not a string", func(m *abi.Manifest) {
			m.PathArgs = []string{"path", "dest", "n"}
		}, checkPathArgs, StatusFail, []string{`path_args names "dest", which is not a property`, `path_args names "n", whose schema type is not string`}},
		{"path args inside arrays", func(m *abi.Manifest) {
			m.Parameters = json.RawMessage(`{"type":"object","properties":{"paths":{"type":"array","items":{"type":"string"}},"edits":{"type":"array","items":{"type":"object","properties":{"path":{"type":"string"}}}}}}`)
			m.PathArgs = []string{"paths/*", "edits/*/path"}
		}, checkPathArgs, StatusPass, []string{`path arguments paths/\*, edits/\*/path are string properties`}},
		{"path args inside arrays the schema does not have", func(m *abi.Manifest) {
			m.Parameters = json.RawMessage(`{"type":"object","properties":{"paths":{"type":"string"},"edits":{"type":"array","items":{"type":"object","properties":{"file":{"type":"string"}}}},"ns":{"type":"array","items":{"type":"integer"}}}}`)
			m.PathArgs = []string{"paths/*", "edits/*/path", "ns/*", "none/*"}
		}, checkPathArgs, StatusFail, []string{`path_args names "paths/\*", but the schema of "paths" is not an array with items`,
			`path_args names "edits/\*/path", but "path" is not a property of the schema of "edits/\*"`,
			`path_args names "ns/\*", whose schema type is not string`, `path_args names "none/\*", which is not a property of the schema`}},
		{"a path property the host would not check", func(m *abi.Manifest) {
			m.Parameters = json.RawMessage(`{"type":"object","properties":{"path":{"type":"string"},"out_file":{"type":"string"},"cwd":{}}}`)
		}, checkPathArgs, StatusFail, []string{`property "out_file" is named like a path but is not in path_args`, `property "cwd"`}},
		{"path-like names without file access", func(m *abi.Manifest) {
			m.PathArgs, m.Capabilities = nil, nil
		}, checkPathArgs, StatusPass, nil},
		{"effects good", func(*abi.Manifest) {}, checkEffects, StatusPass, nil},
		{"fs.write claiming no side effects and low risk", func(m *abi.Manifest) {
			m.Capabilities = []abi.Capability{abi.CapFSWrite}
		}, checkEffects, StatusFail, []string{`holds fs\.write but side_effecting is false`, `holds fs\.write but risk_level is "low"`}},
		{"proc.exec without approval", func(m *abi.Manifest) {
			m.Capabilities, m.SideEffecting, m.RiskLevel = []abi.Capability{abi.CapProcExec}, true, abi.RiskHigh
		}, checkEffects, StatusFail, []string{`holds proc\.exec but requires_approval is false`}},
		{"fs.delete claiming low risk and additive", func(m *abi.Manifest) {
			m.Capabilities, m.SideEffecting, m.Additive = []abi.Capability{abi.CapFSDelete}, true, true
		}, checkEffects, StatusFail, []string{`holds fs\.delete but says it is additive`, `holds fs\.delete but risk_level is "low"`}},
		{"an additive fs.write tool may be low risk", func(m *abi.Manifest) {
			m.Capabilities, m.SideEffecting, m.Additive = []abi.Capability{abi.CapFSWrite}, true, true
		}, checkEffects, StatusPass, nil},
		{"honest fs.write", func(m *abi.Manifest) {
			m.Capabilities, m.SideEffecting, m.RiskLevel = []abi.Capability{abi.CapFSWrite}, true, abi.RiskMedium
		}, checkEffects, StatusPass, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m := manifestWith(tc.edit)
			expectResult(t, tc.check(ctx, native, &m), tc.status, tc.patterns...)
		})
	}
}

// Every built-in plugin passes every static check.
func TestBuiltInsPassStaticChecks(t *testing.T) {
	dir := testplugin.BuiltIns(t)
	mods, _ := filepath.Glob(filepath.Join(dir, "*.wasm"))
	if len(mods) < 5 {
		t.Fatalf("built-ins: %v", mods)
	}
	ctx := context.Background()
	for _, mod := range mods {
		t.Run(filepath.Base(mod), func(t *testing.T) {
			s, err := load(ctx, Plugin{Module: mod}, Options{CacheDir: testplugin.CacheDir(t)})
			t.Cleanup(s.cleanup)
			if err != nil || s.loadErr != nil {
				t.Fatalf("load: %v / %v", err, s.loadErr)
			}
			var results []Result
			runChecks(ctx, s, staticChecks(), func(r Result) { results = append(results, r) })
			if len(results) != len(staticChecks()) {
				t.Errorf("%d results for %d checks", len(results), len(staticChecks()))
			}
			for _, r := range results {
				if r.Status == StatusFail || r.Status == StatusSkip && r.Check != "manifest.section" {
					t.Errorf("%s: %s %s %v", r.Check, r.Status, r.Detail, r.Findings)
				}
			}
		})
	}
}

// A packed manifest that lies about the module is caught by comparing it
// with what describe returns, naming the field; a module without one is
// skipped, saying how to pack it.
func TestManifestSection(t *testing.T) {
	src, err := os.ReadFile(filepath.Join(testplugin.BuiltIns(t), "read_file.wasm"))
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	packed, err := runtime.Pack(ctx, src)
	if err != nil {
		t.Fatal(err)
	}
	expectResult(t, checkSection(ctx, &subject{module: packed, kind: KindNative}, nil), StatusPass)

	raw, _, err := wasmbin.CustomSection(packed, abi.ManifestSection)
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(raw, &m); err != nil {
		t.Fatal(err)
	}
	m["risk_level"] = "high"
	lie, _ := json.Marshal(m)
	lying, err := wasmbin.WithCustomSection(packed, abi.ManifestSection, lie)
	if err != nil {
		t.Fatal(err)
	}
	expectResult(t, checkSection(ctx, &subject{module: lying, kind: KindNative}, nil), StatusFail,
		`differs from describe`, `risk_level: packed "high", describe "low"`, `toolhost plugin pack`)

	expectResult(t, checkSection(ctx, &subject{module: withoutSection(t, packed, abi.ManifestSection), kind: KindNative}, nil), StatusSkip, `toolhost plugin pack`)
}

// withoutSection returns module without its custom sections called name.
func withoutSection(t *testing.T, module []byte, name string) []byte {
	t.Helper()
	sections, err := wasmbin.Sections(module)
	if err != nil {
		t.Fatal(err)
	}
	out := []byte(wasmbin.Header)
	for _, sec := range sections {
		if n, _, _ := sec.Custom(); sec.ID == wasmbin.SectionCustom && n == name {
			continue
		}
		out = wasmbin.AppendSection(out, sec.ID, sec.Body)
	}
	return out
}

// A plugin the host refuses to load (an ungranted import) still has its
// manifest judged, as the plugin states it, and the load failure is its
// own result (the broken plugin fails for its reason).
func TestRefusedPluginStillChecked(t *testing.T) {
	mod := testplugin.Build(t, t.TempDir(), "host/internal/tests/conformance/broken/ungranted_import")
	reports, err := Run(context.Background(), []string{mod}, Options{CacheDir: testplugin.CacheDir(t)})
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]Result{}
	for _, r := range reports[0].Results {
		got[r.Check] = r
	}
	expectResult(t, got["abi.imports"], StatusFail, `proc_run`, `proc\.exec`)
	expectResult(t, got["load"], StatusFail, `proc_run`)
	for _, c := range []string{"abi.exports", "abi.version", "abi.least-privilege", "manifest.fields", "manifest.schema", "manifest.path-args", "manifest.effects"} {
		if got[c].Status != StatusPass {
			t.Errorf("%s: %s %s %v", c, got[c].Status, got[c].Detail, got[c].Findings)
		}
	}
	if len(reports[0].Tools) != 1 || reports[0].Tools[0] != "ungranted_import" {
		t.Errorf("tools %v", reports[0].Tools)
	}
}

// The suite tells a module's kind by serve's rule
// (extism.Detect): describe and call make an Extism servlet only with an
// import from Extism's kernel. Without one, serve hands the module to the
// native runtime, so the suite must not report it as an Extism plugin.
func TestKindOf(t *testing.T) {
	servletExports := map[string]int{"describe": 0, "call": 1, "memory": -1}
	bare := wasm{types: []signature{tVoid}, funcs: []uint32{0, 0}, exports: servletExports, memory: true}
	servlet := wasm{types: []signature{tVoid, tDescr}, funcs: []uint32{0, 0},
		imports: [][3]any{{"extism:host/env", "input_length", uint32(1)}},
		exports: map[string]int{"describe": 1, "call": 2, "memory": -1}, memory: true}
	hyper := wasm{types: []signature{tVoid}, funcs: []uint32{0, 0}, exports: map[string]int{"list_tools": 0, "call_tool": 1}}
	for _, c := range []struct {
		name    string
		module  wasm
		want    Kind
		wantErr string
	}{
		{"native", goodModule(), KindNative, ""},
		{"describe and call without Extism imports", bare, "", abi.ExportVersionMarker},
		{"servlet", servlet, KindExtism, ""},
		{"hyper-mcp", hyper, KindExtism, ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			got, err := kindOf(c.module.bytes())
			if c.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), c.wantErr) {
					t.Fatalf("kindOf = %q, %v; want an error naming %s", got, err, c.wantErr)
				}
				return
			}
			if err != nil || got != c.want {
				t.Fatalf("kindOf = %q, %v; want %q", got, err, c.want)
			}
		})
	}
}
