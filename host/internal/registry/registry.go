// Package registry holds the tools a host offers: each plugin's validated
// manifest and its argument schema, compiled once at load (NFR-PERF-03),
// looked up by name in O(1) (NFR-PERF-01), listed sorted by name
// (NFR-MAIN-03). It never runs a tool.
package registry

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	goruntime "runtime"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/santhosh-tekuri/jsonschema/v5"

	"github.com/toolhost/toolhost/abi"
	"github.com/toolhost/toolhost/host/internal/argpath"
	"github.com/toolhost/toolhost/host/internal/hostfn"
	"github.com/toolhost/toolhost/host/internal/runtime"
)

// Tool is a registered tool.
type Tool struct {
	Manifest abi.Manifest
	Plugin   Plugin
	schema   *jsonschema.Schema
	output   *jsonschema.Schema // nil: the manifest declares no output_schema
	dryRun   bool               // see HasDryRun
}

// HasDryRun reports a tool with side effects whose parameters declare a
// boolean "dry_run" (write_file, apply_patch, the edit tools,
// delete_file, move_file): with "dry_run": true it describes the change
// it would make and makes none. Read from the manifest once, at load.
func (t *Tool) HasDryRun() bool { return t.dryRun }

// declaresDryRun reports m's parameters declaring a boolean "dry_run".
func declaresDryRun(m abi.Manifest) bool {
	var schema struct {
		Properties map[string]struct {
			Type any `json:"type"`
		} `json:"properties"`
	}
	if json.Unmarshal(m.Parameters, &schema) != nil {
		return false
	}
	p, ok := schema.Properties["dry_run"]
	return ok && p.Type == "boolean"
}

// Plugin is the code behind a tool: a native toolhost module
// (*runtime.Plugin[hostfn.Env]) or a module written for another host's ABI behind an
// adapter (an Extism plugin). The engine calls every kind the same way, so
// policy, approvals, deadlines, caps and the journal apply to all alike.
type Plugin interface {
	// Path is the module's file, for messages.
	Path() string
	// Compile prepares the module, so a call's deadline is not spent on it.
	Compile(ctx context.Context) error
	// Warm readies n instances ahead of calls.
	Warm(ctx context.Context, n int) error
	// Summary returns the approval text for args; it does no I/O.
	Summary(ctx context.Context, args []byte) (abi.Result, error)
	// Call runs one call; state is the call's host-function state (nil:
	// every host function refuses).
	Call(ctx context.Context, state *hostfn.Env, req abi.Request) (abi.Result, error)
}

// Registry maps tool names to tools. It is immutable after Load.
type Registry struct {
	byName map[string]*Tool
	sorted []*Tool
}

// DuplicateToolError reports two plugins declaring the same tool name
// (SRD 4.1 DuplicateTool).
type DuplicateToolError struct {
	Name          string
	First, Second string // plugin files
}

func (e *DuplicateToolError) Error() string {
	return fmt.Sprintf("duplicate tool %q: declared by %s and %s; remove or rename one", e.Name, e.First, e.Second)
}

// Load registers every *.wasm plugin in dir. Manifests are read without
// compiling any module.
func Load(ctx context.Context, rt *runtime.Runtime[hostfn.Env], dir string) (*Registry, error) {
	return LoadWith(ctx, rt, dir, Options{})
}

// Options are what LoadWith needs beyond the native runtime.
type Options struct {
	// Foreign loads modules written for another host's ABI (Extism MCP
	// plugins); nil loads native modules only.
	Foreign ForeignLoader
}

// ForeignLoader loads modules that speak another host's ABI. The
// composition root provides it, so the registry knows no such ABI.
type ForeignLoader interface {
	// Load returns the tools of the module at path (dir is its own
	// folder, or ""), or ok false when the module is not of its kind.
	Load(ctx context.Context, path, dir string) (tools []ForeignTool, ok bool, err error)
}

// ForeignTool is one tool of a foreign module: its manifest as the
// loader derived it, and its code.
type ForeignTool interface {
	Plugin
	Manifest() abi.Manifest
}

// LoadWith registers every plugin in dir: each DIR/*.wasm, and the one
// module of each subdirectory (DIR/<name>/*.wasm, a plugin in a folder of
// its own). Native modules are read without being compiled; a module the
// foreign loader claims (an Extism module, told apart by its exports)
// gives one registry tool per tool it lists.
func LoadWith(ctx context.Context, rt *runtime.Runtime[hostfn.Env], dir string, opts Options) (*Registry, error) {
	mods, err := Modules(dir)
	if err != nil {
		return nil, err
	}
	loaded := make([][]*Tool, len(mods))
	errs := make([]error, len(mods))
	// Compiling the schemas is most of a start's work before it can list
	// its tools (measured: 1 ms a plugin, each schema checked against
	// the draft's metaschema), and the modules do not depend on each
	// other: they load on every core. Modules are taken in path order,
	// and none past a failed one is taken, so the failure reported is the
	// first by path, as when they loaded one by one, and a broken
	// directory or an ended ctx does not wait for the rest to load.
	var mu sync.Mutex
	next, firstFailed := 0, len(mods)
	take := func() (int, bool) {
		mu.Lock()
		defer mu.Unlock()
		if next >= firstFailed || ctx.Err() != nil {
			return 0, false
		}
		next++
		return next - 1, true
	}
	var wg sync.WaitGroup
	for range min(goruntime.GOMAXPROCS(0), len(mods)) {
		wg.Go(func() {
			for i, ok := take(); ok; i, ok = take() {
				if loaded[i], errs[i] = loadModule(ctx, rt, mods[i], opts); errs[i] != nil {
					mu.Lock()
					firstFailed = min(firstFailed, i)
					mu.Unlock()
				}
			}
		})
	}
	wg.Wait()
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("loading the plugins stopped: %w", context.Cause(ctx))
	}
	if firstFailed < len(mods) {
		return nil, errs[firstFailed]
	}
	return New(slices.Concat(loaded...)...)
}

// loadModule returns the tools of one module: a foreign one's, or a
// native plugin's one tool.
func loadModule(ctx context.Context, rt *runtime.Runtime[hostfn.Env], mod Module, opts Options) ([]*Tool, error) {
	if opts.Foreign != nil {
		ts, ok, err := loadForeign(ctx, opts.Foreign, mod)
		if err != nil || ok {
			return ts, err
		}
	}
	p, err := rt.Load(ctx, mod.Path)
	if err != nil {
		return nil, err
	}
	t, err := NewTool(p.Manifest(), p)
	if err != nil {
		return nil, fmt.Errorf("plugin %s: %w", mod.Path, err)
	}
	return []*Tool{t}, nil
}

// Module is one plugin module found in the plugin directory.
type Module struct {
	Path string
	Dir  string // its own folder, or "" for DIR/*.wasm
}

// Modules lists dir's plugin modules, sorted by path: DIR/*.wasm and the
// one *.wasm of each subdirectory (hidden ones skipped; one holding no
// module, like conformance/, is not a plugin).
func Modules(dir string) ([]Module, error) {
	paths, err := filepath.Glob(filepath.Join(dir, "*.wasm"))
	if err != nil {
		return nil, err
	}
	var out []Module
	for _, p := range paths {
		if st, err := os.Stat(p); err == nil && !st.IsDir() {
			out = append(out, Module{Path: p})
		}
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, fmt.Errorf("plugin directory: %w", err)
	}
	for _, e := range entries {
		if !e.IsDir() || strings.HasPrefix(e.Name(), ".") {
			continue
		}
		sub := filepath.Join(dir, e.Name())
		inner, err := filepath.Glob(filepath.Join(sub, "*.wasm"))
		if err != nil {
			return nil, err
		}
		switch len(inner) {
		case 0:
		case 1:
			out = append(out, Module{Path: inner[0], Dir: sub})
		default:
			return nil, fmt.Errorf("plugin folder %s holds %d modules (%s); a plugin's folder holds exactly one .wasm", sub, len(inner), strings.Join(inner, ", "))
		}
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("plugin directory %s holds no *.wasm plugins; build them with 'make plugins' or pass --plugins", dir)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Path < out[j].Path })
	return out, nil
}

// loadForeign registers the tools of a module the foreign loader claims.
func loadForeign(ctx context.Context, l ForeignLoader, mod Module) ([]*Tool, bool, error) {
	fts, ok, err := l.Load(ctx, mod.Path, mod.Dir)
	if err != nil || !ok {
		return nil, ok, err
	}
	tools := make([]*Tool, 0, len(fts))
	for _, ft := range fts {
		t, err := NewTool(ft.Manifest(), ft)
		if err != nil {
			return nil, true, fmt.Errorf("plugin %s: %w", mod.Path, err)
		}
		tools = append(tools, t)
	}
	return tools, true, nil
}

// New builds a registry from tools, rejecting duplicate names.
func New(tools ...*Tool) (*Registry, error) {
	r := &Registry{byName: make(map[string]*Tool, len(tools))}
	for _, t := range tools {
		if prev, ok := r.byName[t.Manifest.Name]; ok {
			return nil, &DuplicateToolError{Name: t.Manifest.Name, First: source(prev), Second: source(t)}
		}
		r.byName[t.Manifest.Name] = t
		r.sorted = append(r.sorted, t)
	}
	sort.Slice(r.sorted, func(i, j int) bool { return r.sorted[i].Manifest.Name < r.sorted[j].Manifest.Name })
	return r, nil
}

func source(t *Tool) string {
	if t.Plugin == nil {
		return "(built in)"
	}
	return t.Plugin.Path()
}

// Lookup returns the tool called name.
func (r *Registry) Lookup(name string) (*Tool, bool) {
	t, ok := r.byName[name]
	return t, ok
}

// Tools returns the tools sorted by name.
func (r *Registry) Tools() []*Tool { return r.sorted }

// Names returns the tool names, sorted.
func (r *Registry) Names() []string {
	names := make([]string, len(r.sorted))
	for i, t := range r.sorted {
		names[i] = t.Manifest.Name
	}
	return names
}

var validName = regexp.MustCompile(`^[a-z][a-z0-9_]{0,63}$`)

// NewTool validates a manifest and compiles its schema. The tool's
// manifest is the plugin's with its text made safe to show (cleanText)
// and side effects and risk raised to what its capabilities imply (see
// implied).
func NewTool(m abi.Manifest, p Plugin) (*Tool, error) {
	m, err := cleanText(m)
	if err != nil {
		return nil, fmt.Errorf("invalid manifest for tool %q: %w", m.Name, err)
	}
	if err := ValidateManifest(m); err != nil {
		return nil, err
	}
	m = implied(m)
	schema, err := compileSchema(m.Name, m.Parameters)
	if err != nil {
		return nil, err
	}
	output, err := compileOutputSchema(m.Name, m.OutputSchema)
	if err != nil {
		return nil, err
	}
	return &Tool{Manifest: m, Plugin: p, schema: schema, output: output, dryRun: m.SideEffecting && declaresDryRun(m)}, nil
}

// compileOutputSchema compiles a manifest's output_schema, which MCP
// requires to describe an object; nil when there is none.
func compileOutputSchema(name string, raw json.RawMessage) (*jsonschema.Schema, error) {
	if len(raw) == 0 {
		return nil, nil
	}
	var top map[string]any
	if err := json.Unmarshal(raw, &top); err != nil || top["type"] != "object" {
		return nil, fmt.Errorf(`tool %q: output_schema must be a JSON Schema object with "type": "object" (MCP's outputSchema describes structuredContent, an object)`, name)
	}
	return compileNamed(name, "output_schema", raw)
}

// maxManifestTimeout bounds the timeout a manifest may ask for.
const maxManifestTimeout = time.Hour

// ValidateManifest checks the fields every tool must have.
func ValidateManifest(m abi.Manifest) error {
	var problems []string
	if !validName.MatchString(m.Name) {
		problems = append(problems, fmt.Sprintf("name %q must match %s", m.Name, validName))
	}
	if strings.TrimSpace(m.Description) == "" {
		problems = append(problems, "description is empty")
	}
	switch m.RiskLevel {
	case abi.RiskLow, abi.RiskMedium, abi.RiskHigh:
	default:
		problems = append(problems, fmt.Sprintf("risk_level %q must be low, medium or high", m.RiskLevel))
	}
	switch m.TimeoutClass {
	case "", abi.TimeoutDefault, abi.TimeoutFile, abi.TimeoutShell:
	default:
		problems = append(problems, fmt.Sprintf("timeout_class %q must be default, file_operations or shell_commands", m.TimeoutClass))
	}
	switch {
	case m.TimeoutMillis < 0:
		problems = append(problems, "timeout_ms is negative")
	case m.TimeoutMillis > maxManifestTimeout.Milliseconds():
		// A plugin may not give itself an unbounded deadline (nor one
		// that overflows a time.Duration); the operator can, by override.
		problems = append(problems, fmt.Sprintf("timeout_ms %d is more than %d (%v); an operator who wants longer sets tools.overrides.%s.timeout_seconds",
			m.TimeoutMillis, maxManifestTimeout.Milliseconds(), maxManifestTimeout, m.Name))
	}
	for _, a := range m.PathArgs {
		if _, err := argpath.Parse(a); err != nil {
			problems = append(problems, fmt.Sprintf("path_args: %v", err))
		}
	}
	for _, a := range m.CreateArgs {
		if _, err := argpath.Parse(a); err != nil {
			problems = append(problems, fmt.Sprintf("create_args: %v", err))
		}
	}
	for _, a := range m.CreateArgs {
		if !slices.Contains(m.PathArgs, a) {
			problems = append(problems, fmt.Sprintf("create_args names %q, which is not in path_args", a))
		}
	}
	if m.WritesUnnamedPaths && !slices.Contains(m.Capabilities, abi.CapFSWrite) {
		problems = append(problems, "writes_unnamed_paths is set but the capabilities lack fs.write")
	}
	if len(problems) > 0 {
		return fmt.Errorf("invalid manifest for tool %q: %s", m.Name, strings.Join(problems, "; "))
	}
	return nil
}

// implied raises what m says about itself to what its capabilities imply,
// because approval and parallelism are decided on the manifest and a
// plugin that understates itself would otherwise run unasked or beside
// other calls: fs.write and fs.delete make a tool side-effecting and at
// least medium risk (an additive fs.write tool, which fs_commit holds to
// only creating, may stay low); proc.exec makes it side-effecting, high risk and approval-required,
// like run_command (SRD 3.6.10, FR-APR-06). Configuration can still lift
// requires_approval for a tool by name (tools.overrides).
func implied(m abi.Manifest) abi.Manifest {
	if slices.Contains(m.Capabilities, abi.CapFSDelete) {
		// Removing or moving is never only adding.
		m.Additive = false
	}
	for _, c := range []abi.Capability{abi.CapFSWrite, abi.CapFSDelete} {
		if !slices.Contains(m.Capabilities, c) {
			continue
		}
		m.SideEffecting = true
		// An additive tool is held to only creating by fs_commit, so it
		// may stay low risk.
		if m.RiskLevel == abi.RiskLow && !m.Additive {
			m.RiskLevel = abi.RiskMedium
		}
	}
	if slices.Contains(m.Capabilities, abi.CapProcExec) {
		m.SideEffecting = true
		m.RequiresApproval = true
		m.RiskLevel = abi.RiskHigh
	}
	return m
}

// CompileSchema compiles a tool's parameters as JSON Schema Draft 2020-12,
// refusing references to any other document.
func CompileSchema(name string, raw []byte) (*jsonschema.Schema, error) {
	return compileSchema(name, raw)
}

func compileSchema(name string, raw []byte) (*jsonschema.Schema, error) {
	if len(bytes.TrimSpace(raw)) == 0 {
		return nil, fmt.Errorf("tool %q: parameters schema is missing", name)
	}
	return compileNamed(name, "parameters", raw)
}

// compileNamed compiles raw, the schema of the manifest field what.
func compileNamed(name, what string, raw []byte) (*jsonschema.Schema, error) {
	c := jsonschema.NewCompiler()
	c.Draft = jsonschema.Draft2020
	// The compiler would read file:// references from the host's disk (a
	// secret whose values then come back in argument errors, a FIFO that
	// hangs the start): a schema is its manifest's, whole.
	c.LoadURL = func(u string) (io.ReadCloser, error) {
		return nil, fmt.Errorf("the schema refers to %s; toolhost loads no schema from outside the manifest: inline it", u)
	}
	url := "toolhost:///" + name + "/" + what + ".json"
	if err := c.AddResource(url, bytes.NewReader(raw)); err != nil {
		return nil, fmt.Errorf("tool %q: %s schema is not valid JSON: %w", name, what, err)
	}
	s, err := c.Compile(url)
	if err != nil {
		return nil, fmt.Errorf("tool %q: %s schema does not compile as JSON Schema Draft 2020-12: %w", name, what, err)
	}
	return s, nil
}

// Violation is one way arguments break a tool's schema.
type Violation struct {
	Pointer string `json:"pointer"` // JSON pointer into the arguments; "" is the whole object
	Message string `json:"message"`
}

// ValidateArgs checks decoded arguments (from json.Unmarshal into any)
// against the tool's schema and returns every violation (FR-VAL-01).
func (t *Tool) ValidateArgs(args any) []Violation { return violations(t.schema, args) }

// HasOutputSchema reports whether the manifest declares an output_schema.
func (t *Tool) HasOutputSchema() bool { return t.output != nil }

// ValidateStructured checks a structured object (decoded, numbers as
// json.Number or float64) against the tool's output_schema and returns
// every violation; none when it declares no output_schema.
func (t *Tool) ValidateStructured(obj any) []Violation {
	if t.output == nil {
		return nil
	}
	return violations(t.output, obj)
}

func violations(schema *jsonschema.Schema, v any) []Violation {
	err := schema.Validate(v)
	if err == nil {
		return nil
	}
	var ve *jsonschema.ValidationError
	if !errors.As(err, &ve) {
		return []Violation{{Message: err.Error()}}
	}
	var out []Violation
	collect(ve, &out)
	// The validator walks keywords in map order; sort so the same arguments
	// always get the same message.
	sort.Slice(out, func(i, j int) bool {
		if out[i].Pointer != out[j].Pointer {
			return out[i].Pointer < out[j].Pointer
		}
		return out[i].Message < out[j].Message
	})
	return out
}

// collect gathers the leaves of a validation error tree: the causes that
// say what is wrong, not the "doesn't validate with" wrappers above them.
func collect(ve *jsonschema.ValidationError, out *[]Violation) {
	if len(ve.Causes) == 0 {
		*out = append(*out, Violation{Pointer: ve.InstanceLocation, Message: ve.Message})
		return
	}
	for _, c := range ve.Causes {
		collect(c, out)
	}
}
