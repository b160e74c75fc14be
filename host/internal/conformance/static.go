package conformance

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"regexp"
	"slices"
	"sort"
	"strings"

	"github.com/tetratelabs/wazero/imports/wasi_snapshot_preview1"

	"github.com/toolhost/toolhost/abi"
	"github.com/toolhost/toolhost/host/internal/argpath"
	"github.com/toolhost/toolhost/host/internal/engine"
	"github.com/toolhost/toolhost/host/internal/hostfn"
	"github.com/toolhost/toolhost/host/internal/registry"
	"github.com/toolhost/toolhost/host/internal/runtime"
	"github.com/toolhost/toolhost/host/internal/wasmbin"
)

// staticChecks read the module and its manifest without calling it
// (ABI and manifest honesty). The manifest checks read
// the manifest as the plugin states it, not as the host raised it: a
// plugin that understates itself is what they exist to catch.
func staticChecks() []check {
	return []check{
		{id: "abi.exports", nativeOnly: true, static: true, run: checkExports},
		{id: "abi.version", nativeOnly: true, static: true, run: checkVersion},
		{id: "abi.imports", nativeOnly: true, static: true, run: checkImports},
		{id: "abi.least-privilege", nativeOnly: true, static: true, run: checkLeastPrivilege},
		{id: "manifest.fields", perTool: true, static: true, run: checkFields},
		{id: "manifest.schema", perTool: true, static: true, run: checkSchema},
		{id: "manifest.path-args", perTool: true, static: true, run: checkPathArgs},
		{id: "manifest.effects", perTool: true, static: true, run: checkEffects},
		{id: "manifest.section", nativeOnly: true, static: true, run: checkSection},
	}
}

// i32 and i64 are the value types of the ABI's signatures.
const (
	i32 byte = 0x7f
	i64 byte = 0x7e
)

// requiredExports are the functions every toolhost/v1 module exports,
// with their signatures (abi/README.md, Exports).
var requiredExports = []struct {
	name string
	sig  signature
}{
	{abi.StartFunction, signature{}},
	{abi.ExportAlloc, signature{[]byte{i32}, []byte{i32}}},
	{abi.ExportDescribe, signature{nil, []byte{i64}}},
	{abi.ExportSummary, signature{[]byte{i32, i32}, []byte{i64}}},
	{abi.ExportCall, signature{[]byte{i32, i32}, []byte{i64}}},
}

// moduleOf returns the parsed module, reading it once.
func (s *subject) moduleOf() (*moduleInfo, error) {
	if s.info == nil && s.infoErr == nil {
		s.info, s.infoErr = readModule(s.module)
	}
	return s.info, s.infoErr
}

func checkExports(_ context.Context, s *subject, _ *abi.Manifest) Result {
	m, err := s.moduleOf()
	if err != nil {
		return fail("the module does not parse: " + err.Error())
	}
	var findings []string
	for _, want := range requiredExports {
		sig, found, isFunc := m.exportedFunc(want.name)
		switch {
		case !found:
			findings = append(findings, fmt.Sprintf("%s is not exported: export a function %s (abi/README.md, Exports)", want.name, want.sig))
		case !isFunc:
			findings = append(findings, fmt.Sprintf("%s is exported but is not a function: export a function %s", want.name, want.sig))
		case !sig.equal(want.sig):
			findings = append(findings, fmt.Sprintf("%s has type %s, want %s", want.name, sig, want.sig))
		}
	}
	if e, ok := m.exports["memory"]; !ok || e.Kind != wasmbin.KindMemory {
		findings = append(findings, "no memory is exported as \"memory\": the host reads arguments and results through it; export the module's memory")
	}
	if m.start {
		findings = append(findings, "the module has a wasm start section, which runs while it is instantiated where no deadline can stop it: build a WASI reactor (Go: -buildmode=c-shared; C: -mexec-model=reactor)")
	}
	if len(findings) > 0 {
		return fail(fmt.Sprintf("%d required export(s) missing or wrong", len(findings)), findings...)
	}
	return pass("_initialize, toolhost_alloc, toolhost_describe, toolhost_summary, toolhost_call and memory are exported with the ABI's signatures")
}

func checkVersion(_ context.Context, s *subject, _ *abi.Manifest) Result {
	m, err := s.moduleOf()
	if err != nil {
		return fail("the module does not parse: " + err.Error())
	}
	var findings []string
	switch sig, found, isFunc := m.exportedFunc(abi.ExportVersionMarker); {
	case !found:
		findings = append(findings, fmt.Sprintf("no export %s: a toolhost/v1 module exports it (a function () -> (), never called)", abi.ExportVersionMarker))
	case !isFunc || !sig.equal(signature{}):
		findings = append(findings, fmt.Sprintf("%s must be a function () -> (), got %s", abi.ExportVersionMarker, describeExport(m, abi.ExportVersionMarker)))
	}
	if len(s.described) == 0 {
		findings = append(findings, "the manifest could not be read, so its abi field is unknown (see load)")
	}
	for _, d := range s.described {
		if d.ABI != abi.Version {
			findings = append(findings, fmt.Sprintf("manifest abi is %q, this host speaks %q: set \"abi\": %q", d.ABI, abi.Version, abi.Version))
		}
	}
	if len(findings) > 0 {
		return fail("the module does not declare ABI "+abi.Version+" consistently", findings...)
	}
	return pass(abi.ExportVersionMarker + " exported and manifest abi is " + abi.Version)
}

func describeExport(m *moduleInfo, name string) string {
	sig, _, isFunc := m.exportedFunc(name)
	if !isFunc {
		return "an export that is not a function"
	}
	return sig.String()
}

// hostSignatures are the toolhost/v1 host functions and their types.
func hostSignatures() map[string]signature {
	out := map[string]signature{abi.FnResponseTake: {[]byte{i32, i32}, []byte{i64}}}
	for _, f := range hostfn.Functions() {
		params := make([]byte, len(f.Params))
		for i, p := range f.Params {
			params[i] = byte(p)
		}
		out[f.Name] = signature{params, []byte{i64}}
	}
	return out
}

// grantedBy returns the capabilities that grant host function fn, sorted;
// none for the ungated ones.
func grantedBy(fn string) []abi.Capability {
	var caps []abi.Capability
	for c, fns := range abi.CapabilityFunctions() {
		if slices.Contains(fns, fn) {
			caps = append(caps, c)
		}
	}
	slices.Sort(caps)
	return caps
}

// declaredCapabilities returns what the plugin's manifest declares, and
// false when the manifest could not be read.
func (s *subject) declaredCapabilities() ([]abi.Capability, bool) {
	if len(s.described) == 0 {
		return nil, false
	}
	var caps []abi.Capability
	for _, d := range s.described {
		caps = append(caps, d.Capabilities...)
	}
	slices.Sort(caps)
	return slices.Compact(caps), true
}

// checkImports: every import comes from toolhost_v1 or WASI, and every
// toolhost_v1 import is a known function of the right type that a
// declared capability grants.
func checkImports(_ context.Context, s *subject, _ *abi.Manifest) Result {
	m, err := s.moduleOf()
	if err != nil {
		return fail("the module does not parse: " + err.Error())
	}
	caps, known := s.declaredCapabilities()
	granted, err := runtime.Granted(caps)
	if err != nil {
		// An unknown capability is manifest.fields' finding; judge the
		// imports by the capabilities that exist.
		granted, _ = runtime.Granted(slices.DeleteFunc(slices.Clone(caps), func(c abi.Capability) bool {
			_, ok := abi.CapabilityFunctions()[c]
			return !ok
		}))
	}
	sigs := hostSignatures()
	var findings []string
	for _, imp := range m.imports {
		if f := importFinding(m, imp, sigs, granted, known); f != "" {
			findings = append(findings, f)
		}
	}
	if len(findings) > 0 {
		return fail(fmt.Sprintf("%d import(s) the host would refuse", len(findings)), findings...)
	}
	detail := fmt.Sprintf("%d import(s), all from %s or %s", len(m.imports), abi.HostModule, wasi_snapshot_preview1.ModuleName)
	if !known {
		return pass(detail + "; the manifest could not be read, so capability coverage is unchecked (see load)")
	}
	return pass(detail + ", each host function granted by a declared capability")
}

// importFinding says what is wrong with one import, or "".
func importFinding(m *moduleInfo, imp wasmbin.Import, sigs map[string]signature, granted []string, capsKnown bool) string {
	full := imp.Module + "." + imp.Name
	if imp.Kind != wasmbin.KindFunc {
		return fmt.Sprintf("imports %s %s: plugins define their own memory, tables and globals and import only functions", importKindName(imp.Kind), full)
	}
	switch imp.Module {
	case wasi_snapshot_preview1.ModuleName:
		return ""
	case abi.HostModule:
	default:
		return fmt.Sprintf("imports %s: plugins may import only from %s and %s; remove the import", full, abi.HostModule, wasi_snapshot_preview1.ModuleName)
	}
	want, ok := sigs[imp.Name]
	if !ok {
		names := slices.Sorted(maps.Keys(sigs))
		return fmt.Sprintf("imports %s, which toolhost/v1 does not define (its functions: %s)", full, strings.Join(names, ", "))
	}
	if got, ok := m.importType(imp); !ok || !got.equal(want) {
		return fmt.Sprintf("imports %s with type %s, want %s (abi/README.md, Functions)", full, got, want)
	}
	if !capsKnown || slices.Contains(granted, imp.Name) {
		return ""
	}
	need := grantedBy(imp.Name)
	names := make([]string, len(need))
	for i, c := range need {
		names[i] = string(c)
	}
	return fmt.Sprintf("imports %s, which needs capability %s: declare it in the manifest's capabilities, or remove the import",
		full, strings.Join(names, " or "))
}

func importKindName(k byte) string {
	switch k {
	case wasmbin.KindTable:
		return "a table"
	case wasmbin.KindMemory:
		return "a memory"
	case wasmbin.KindGlobal:
		return "a global"
	case wasmbin.KindTag:
		return "a tag"
	}
	return fmt.Sprintf("an import of kind %#x", k)
}

// checkLeastPrivilege: each declared capability is needed by an import
// (manifests stay least-privilege). A capability is
// needed when, without it, some imported host function would be ungranted;
// one whose functions another declared capability also grants is
// reported as well, so the manifest asks for no more than it uses.
func checkLeastPrivilege(_ context.Context, s *subject, _ *abi.Manifest) Result {
	m, err := s.moduleOf()
	if err != nil {
		return fail("the module does not parse: " + err.Error())
	}
	caps, known := s.declaredCapabilities()
	if !known {
		return skip("the manifest could not be read, so its capabilities are unknown (see load)")
	}
	if len(caps) == 0 {
		return pass("declares no capability")
	}
	imported := map[string]bool{}
	for _, imp := range m.imports {
		if imp.Module == abi.HostModule && imp.Kind == wasmbin.KindFunc {
			imported[imp.Name] = true
		}
	}
	byCap := abi.CapabilityFunctions()
	var findings, used []string
	keep := slices.Clone(caps)
	for _, c := range caps {
		fns, ok := byCap[c]
		if !ok {
			continue // manifest.fields names it
		}
		var uses []string
		for _, fn := range fns {
			if imported[fn] {
				uses = append(uses, fn)
			}
		}
		if len(uses) == 0 {
			findings = append(findings, fmt.Sprintf("capability %s is declared but no import uses it (it grants %s): remove %q from capabilities",
				c, strings.Join(fns, ", "), c))
			keep = slices.DeleteFunc(keep, func(k abi.Capability) bool { return k == c })
			continue
		}
		without := slices.DeleteFunc(slices.Clone(keep), func(k abi.Capability) bool { return k == c })
		granted, _ := runtime.Granted(without)
		if commitOps(c) && slices.Contains(uses, abi.FnFSCommit) {
			// fs.write and fs.delete grant different operations of
			// fs_commit (writing; removing and moving), which an
			// import cannot tell apart: neither makes the other
			// redundant.
			granted = slices.DeleteFunc(granted, func(fn string) bool { return fn == abi.FnFSCommit })
		}
		if covered(uses, granted) {
			findings = append(findings, fmt.Sprintf("capability %s is declared but the other capabilities already grant what it is used for (%s): remove %q from capabilities",
				c, strings.Join(uses, ", "), c))
			keep = without
			continue
		}
		used = append(used, fmt.Sprintf("%s (%s)", c, strings.Join(uses, ", ")))
	}
	if len(findings) > 0 {
		return fail(fmt.Sprintf("%d declared capability(ies) unused", len(findings)), findings...)
	}
	return pass("every capability is used: " + strings.Join(used, "; "))
}

// commitOps reports whether c grants operations of fs_commit of its own.
func commitOps(c abi.Capability) bool { return c == abi.CapFSWrite || c == abi.CapFSDelete }

func covered(fns, granted []string) bool {
	for _, fn := range fns {
		if !slices.Contains(granted, fn) {
			return false
		}
	}
	return true
}

// checkFields: the fields registry.ValidateManifest requires, a version,
// and capabilities toolhost/v1 knows (SRD FR-REG-01).
func checkFields(_ context.Context, s *subject, m *abi.Manifest) Result {
	var findings []string
	if err := registry.ValidateManifest(*m); err != nil {
		_, list, _ := strings.Cut(err.Error(), ": ")
		findings = append(findings, strings.Split(list, "; ")...)
	}
	if strings.TrimSpace(m.Version) == "" {
		findings = append(findings, "version is empty: give the tool a version such as \"1.0.0\"")
	}
	findings = append(findings, textFindings(m)...)
	if s.kind == KindNative {
		known := abi.CapabilityFunctions()
		for _, c := range m.Capabilities {
			if _, ok := known[c]; !ok {
				findings = append(findings, fmt.Sprintf("capability %q is unknown (toolhost/v1 has %s)", c, strings.Join(capabilityNames(), ", ")))
			}
		}
	}
	if len(findings) > 0 {
		return fail("manifest fields invalid", findings...)
	}
	return pass(fmt.Sprintf("name, description, version %s, risk %s and timeout are valid", cut(m.Version, 64), m.RiskLevel))
}

// maxDescription bounds a tool's description: a model reads it with every
// request, and the built-ins' are under 1 KiB.
const maxDescription = 8 << 10

// textFindings are what is wrong with the manifest's free text: a
// description too long to be anything but a payload (a model reads it
// with every request), and control characters (escape sequences, bidi
// overrides) in the text toolhost shows people and models.
func textFindings(m *abi.Manifest) []string {
	var out []string
	if n := len(m.Description); n > maxDescription {
		out = append(out, fmt.Sprintf("description is %d bytes, more than %d: a model reads it with every request; say what the tool does in a few sentences", n, maxDescription))
	}
	for _, f := range []struct{ name, text string }{{"description", m.Description}, {"version", m.Version}} {
		if i := strings.IndexFunc(f.text, invisible); i >= 0 {
			out = append(out, fmt.Sprintf("%s holds a control or invisible character (%s at byte %d), which a terminal or a model would act on: remove it", f.name, engine.Visible(string([]rune(f.text[i:])[0])), i))
		}
	}
	if len(m.Version) > 64 {
		out = append(out, fmt.Sprintf("version is %d bytes: give a version such as \"1.0.0\"", len(m.Version)))
	}
	return out
}

// invisible reports a rune that engine.Visible would write out: a control
// or format character other than a line break or tab.
func invisible(r rune) bool {
	switch {
	case r == '\n' || r == '\t':
		return false
	case r < 0x20 || r == 0x7f:
		return true
	case r < 0x80:
		return false // printable ASCII: most text, checked without rendering
	}
	return engine.Visible(string(r)) != string(r)
}

func capabilityNames() []string {
	var names []string
	for c := range abi.CapabilityFunctions() {
		names = append(names, string(c))
	}
	sort.Strings(names)
	return names
}

// draft202012 is the meta-schema URI of JSON Schema Draft 2020-12.
const draft202012 = "https://json-schema.org/draft/2020-12/schema"

// checkSchema: the parameters compile as JSON Schema Draft 2020-12 and
// describe an object (SRD FR-VAL-01a).
func checkSchema(_ context.Context, _ *subject, m *abi.Manifest) Result {
	raw := bytes.TrimSpace(m.Parameters)
	if len(raw) == 0 {
		return fail("parameters is missing: give a JSON Schema with \"type\": \"object\"")
	}
	var top map[string]any
	if err := json.Unmarshal(raw, &top); err != nil {
		return fail("parameters is not a JSON object: " + err.Error())
	}
	var findings []string
	if uri, ok := top["$schema"].(string); ok && strings.TrimSuffix(uri, "#") != draft202012 {
		findings = append(findings, fmt.Sprintf("$schema is %q: toolhost validates arguments as Draft 2020-12; remove $schema or set it to %q", uri, draft202012))
	}
	if t, _ := top["type"].(string); t != "object" {
		findings = append(findings, fmt.Sprintf("the schema's type is %s, want \"object\": tool arguments are a JSON object", jsonText(top["type"])))
	}
	if _, err := registry.CompileSchema(m.Name, raw); err != nil {
		findings = append(findings, oneLine(err.Error()))
	}
	if len(findings) > 0 {
		return fail("parameters schema invalid", findings...)
	}
	return pass("Draft 2020-12 schema of type object")
}

func jsonText(v any) string {
	if v == nil {
		return "missing"
	}
	b, _ := json.Marshal(v)
	return string(b)
}

func oneLine(s string) string { return strings.Join(strings.Fields(s), " ") }

// pathLike matches a property name that holds a path.
var pathLike = regexp.MustCompile(`^(path|file|filename|dir|directory|cwd)$|_(path|file|dir)$`)

// checkPathArgs: every path_args entry reaches a string property of the
// schema (through arrays' items for "paths/*", "edits/*/path"), and no
// property named like a path escapes path_args, where the host would not
// check it against the sandbox (SRD FR-VAL-07, FR-VAL-04). A tool without
// filesystem or process capabilities reaches no file, so its property
// names are not held against it.
func checkPathArgs(_ context.Context, _ *subject, m *abi.Manifest) Result {
	var schema struct {
		Properties map[string]json.RawMessage `json:"properties"`
	}
	if err := json.Unmarshal(m.Parameters, &schema); err != nil {
		return fail("parameters is not a JSON object: " + err.Error())
	}
	var findings []string
	for _, a := range m.PathArgs {
		prop, problem := selectorSchema(m.Parameters, a)
		switch {
		case problem != "":
			findings = append(findings, fmt.Sprintf("path_args names %q, %s: add the property or remove it from path_args", a, problem))
		case !isStringProperty(prop, true):
			findings = append(findings, fmt.Sprintf("path_args names %q, whose schema type is not string: path arguments are strings", a))
		}
	}
	if reachesFiles(m) {
		for _, name := range slices.Sorted(maps.Keys(schema.Properties)) {
			if pathLike.MatchString(name) && !slices.Contains(m.PathArgs, name) && isStringProperty(schema.Properties[name], false) {
				findings = append(findings, fmt.Sprintf("property %q is named like a path but is not in path_args, so the host does not check it against the sandbox: add %q to path_args", name, name))
			}
		}
	}
	if len(findings) > 0 {
		return fail("path arguments incomplete", findings...)
	}
	if len(m.PathArgs) == 0 {
		return pass("no path arguments")
	}
	return pass("path arguments " + strings.Join(m.PathArgs, ", ") + " are string properties")
}

// selectorSchema is the schema of the values a path_args selector reaches
// in arguments of schema params: each key a property of an object's
// schema, each "*" the items of an array's; problem says where the
// schema has no such place.
func selectorSchema(params json.RawMessage, selector string) (json.RawMessage, string) {
	sel, err := argpath.Parse(selector)
	if err != nil {
		return nil, "which is not a path argument selector (" + err.Error() + ")"
	}
	cur, at := params, ""
	for _, key := range sel.Keys() {
		var s struct {
			Properties map[string]json.RawMessage `json:"properties"`
			Items      json.RawMessage            `json:"items"`
		}
		_ = json.Unmarshal(cur, &s)
		next, ok := s.Properties[key]
		if key == argpath.Wildcard {
			next, ok = s.Items, len(s.Items) > 0 && string(s.Items) != "null"
		}
		if !ok {
			where := "the schema"
			if at != "" {
				where = fmt.Sprintf("the schema of %q", at)
			}
			if key == argpath.Wildcard {
				return nil, fmt.Sprintf("but %s is not an array with items", where)
			}
			if at == "" {
				return nil, "which is not a property of the schema"
			}
			return nil, fmt.Sprintf("but %q is not a property of %s", key, where)
		}
		if at != "" {
			at += "/"
		}
		at += key
		cur = next
	}
	return cur, ""
}

// reachesFiles reports whether a tool's capabilities reach the
// filesystem.
func reachesFiles(m *abi.Manifest) bool {
	for _, c := range m.Capabilities {
		if strings.HasPrefix(string(c), "fs.") || c == abi.CapProcExec {
			return true
		}
	}
	return false
}

// isStringProperty reports whether a property schema's type is, or
// includes, string. An untyped property counts as a string unless strict.
func isStringProperty(raw json.RawMessage, strict bool) bool {
	var p struct {
		Type any `json:"type"`
	}
	if json.Unmarshal(raw, &p) != nil {
		return false
	}
	switch t := p.Type.(type) {
	case nil:
		return !strict
	case string:
		return t == "string"
	case []any:
		return slices.Contains(t, any("string"))
	}
	return false
}

// checkEffects: side effects, risk and approval consistent with the
// capabilities (a plugin holding fs.write or proc.exec that claims no side effects, or low risk, fails; SRD FR-APR-03/06).
func checkEffects(_ context.Context, _ *subject, m *abi.Manifest) Result {
	var findings []string
	for _, c := range []abi.Capability{abi.CapFSWrite, abi.CapFSDelete, abi.CapProcExec} {
		if !slices.Contains(m.Capabilities, c) {
			continue
		}
		if !m.SideEffecting {
			findings = append(findings, fmt.Sprintf("holds %s but side_effecting is false: a tool that can change files has side effects; set \"side_effecting\": true", c))
		}
		if c == abi.CapFSDelete && m.Additive {
			findings = append(findings, "holds fs.delete but says it is additive: a tool that can remove or move files does more than add; remove \"additive\"")
		}
		// fs_commit holds an additive tool to only creating.
		if m.RiskLevel == abi.RiskLow && !(c == abi.CapFSWrite && m.Additive) {
			findings = append(findings, fmt.Sprintf("holds %s but risk_level is \"low\": set \"risk_level\" to \"medium\" or \"high\"", c))
		}
	}
	if slices.Contains(m.Capabilities, abi.CapProcExec) && !m.RequiresApproval {
		findings = append(findings, "holds proc.exec but requires_approval is false: a command can do anything the user can; set \"requires_approval\": true")
	}
	if len(findings) > 0 {
		return fail("the manifest understates what its capabilities allow", findings...)
	}
	return pass(fmt.Sprintf("side_effecting %t, risk %s, requires_approval %t fit capabilities [%s]",
		m.SideEffecting, m.RiskLevel, m.RequiresApproval, joinCaps(m.Capabilities)))
}

func joinCaps(caps []abi.Capability) string {
	names := make([]string, len(caps))
	for i, c := range caps {
		names[i] = string(c)
	}
	return strings.Join(names, " ")
}

// checkSection: the packed toolhost.manifest section, which hosts list the
// tool by, says what describe says.
func checkSection(ctx context.Context, s *subject, _ *abi.Manifest) Result {
	packed, ok, err := wasmbin.CustomSection(s.module, abi.ManifestSection)
	switch {
	case err != nil:
		return fail("the module does not parse: " + err.Error())
	case !ok:
		return skip("no " + abi.ManifestSection + " section: hosts call describe to list the tool (toolhost plugin pack stores the manifest)")
	}
	// describe runs after the start-up: one that spins would hold it to
	// the interpreter's whole start-up limit and fail it for a fault
	// start.spin reports (red team item b).
	if s.loadErr == nil {
		if r := s.startProbe(ctx); r.stuck {
			return skip("describe cannot run, because the plugin's start-up does not finish (see start.spin)")
		}
	}
	got, err := s.describeOutput(ctx)
	if err != nil {
		return fail("describe failed, so the packed manifest cannot be compared with it", oneLine(err.Error()))
	}
	if bytes.Equal(packed, got) {
		return pass("the packed manifest equals describe's output")
	}
	findings := manifestDiff(packed, got)
	return fail("the packed "+abi.ManifestSection+" section differs from describe's output: the module changed after packing; pack it again (toolhost plugin pack)", findings...)
}

// describeOutput is the manifest JSON the module's describe export
// returns, run in the interpreter with every host function refused, so
// that a module the host would refuse (an ungranted import) or one
// whose manifest section lies can still be asked. It runs once.
func (s *subject) describeOutput(ctx context.Context) ([]byte, error) {
	if s.describedJSON == nil && s.describeErr == nil {
		s.describedJSON, s.describeErr = describeModule(ctx, s.module)
	}
	return s.describedJSON, s.describeErr
}

func describeModule(ctx context.Context, module []byte) ([]byte, error) {
	packed, err := runtime.Pack(ctx, module)
	if err != nil {
		return nil, err
	}
	raw, _, err := wasmbin.CustomSection(packed, abi.ManifestSection)
	return raw, err
}

// manifestDiff lists the top-level fields that differ between two
// manifests.
func manifestDiff(packed, described []byte) []string {
	var a, b map[string]json.RawMessage
	if json.Unmarshal(packed, &a) != nil || json.Unmarshal(described, &b) != nil {
		return []string{fmt.Sprintf("packed %s; describe %s", cut(string(packed), 200), cut(string(described), 200))}
	}
	keys := slices.Sorted(maps.Keys(a))
	for k := range b {
		if _, ok := a[k]; !ok {
			keys = append(keys, k)
		}
	}
	var out []string
	for _, k := range keys {
		pa, pb := compactJSON(a[k]), compactJSON(b[k])
		if pa != pb {
			out = append(out, fmt.Sprintf("%s: packed %s, describe %s", k, cut(orMissing(pa), 120), cut(orMissing(pb), 120)))
		}
	}
	if len(out) == 0 {
		out = append(out, "the same fields, encoded differently (key order or spacing)")
	}
	return out
}

func compactJSON(raw json.RawMessage) string {
	if raw == nil {
		return ""
	}
	var b bytes.Buffer
	if json.Compact(&b, raw) != nil {
		return string(raw)
	}
	return b.String()
}

func orMissing(s string) string {
	if s == "" {
		return "(missing)"
	}
	return s
}

// statedManifest fills in the manifest of a native plugin the host could
// not load (an ungranted import refuses it before describe's output is
// kept): the static checks judge what the plugin states even then.
func (s *subject) statedManifest(ctx context.Context) {
	if s.kind != KindNative || len(s.described) > 0 {
		return
	}
	raw, ok, err := wasmbin.CustomSection(s.module, abi.ManifestSection)
	if err != nil {
		return
	}
	if !ok {
		if raw, err = s.describeOutput(ctx); err != nil {
			return
		}
	}
	var m abi.Manifest
	if json.Unmarshal(raw, &m) == nil {
		s.described = []abi.Manifest{m}
	}
}
