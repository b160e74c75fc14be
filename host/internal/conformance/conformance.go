// Package conformance is what `toolhost test` runs: the checks a plugin
// must pass before an operator trusts it. Static checks read the module
// and its manifest; dynamic checks run the plugin's tools through a real
// host, each in a fresh temporary sandbox, as a hostile model would call
// them; a plugin's own cases (conformance/*.json beside it) run last.
//
// A check never takes the plugin's word: what the host observed (the
// host functions a call asked for, the bytes it returned) decides.
//
// An operator runs the suite on plugins not trusted yet, so the suite
// must never be a way to hurt the machine it runs on. Every call goes
// through a real host confined to a fresh temporary root; case files
// lay their fixtures through an os.Root (no .., absolute path or link
// leads out), are read only when regular files of at most a MiB, and
// make at most 256 calls. The suite approves every call, so tools that
// run commands (proc.exec) are called only with Options.AllowExec (the
// CLI's --allow-exec): a command runs in the workspace's root but with
// the user's rights, and may name any path. Nothing in a workspace says
// "test" to the plugin: random directory names, and conversation and
// call ids like a client's.
package conformance

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/toolhost/toolhost/abi"
	"github.com/toolhost/toolhost/host/internal/config"
	"github.com/toolhost/toolhost/host/internal/registry"
)

// Status is a check's outcome.
type Status string

// Outcomes of a check.
const (
	StatusPass Status = "pass"
	StatusFail Status = "fail"
	StatusSkip Status = "skip" // not applicable to this plugin; Detail says why
)

// Result is one check of one plugin (and tool, for checks that call one).
type Result struct {
	Plugin string `json:"plugin"` // the module file
	Tool   string `json:"tool,omitempty"`
	Check  string `json:"check"`
	Status Status `json:"status"`
	Detail string `json:"detail,omitempty"`
	// Findings are the specific failures (an attempt that got through,
	// an import without its capability), one line each.
	Findings []string      `json:"findings,omitempty"`
	Elapsed  time.Duration `json:"-"`
}

// Report is everything Run found about one plugin.
type Report struct {
	Plugin  string   `json:"path"`
	Kind    Kind     `json:"kind"`
	Tools   []string `json:"tools"`
	Results []Result `json:"results"`
}

// Failed reports whether any check failed.
func (r Report) Failed() bool {
	for _, res := range r.Results {
		if res.Status == StatusFail {
			return true
		}
	}
	return false
}

// Kind says which ABI a module speaks.
type Kind string

// Module kinds.
const (
	KindNative Kind = "toolhost/v1"
	KindExtism Kind = "extism"
)

// Options configure a run.
type Options struct {
	// CacheDir keeps compiled modules between runs; "" compiles anew.
	CacheDir string
	// Cases is a directory of case files to use instead of the
	// conformance/ directory beside each plugin.
	Cases string
	// Timeout is the deadline the short-deadline check gives a call;
	// 0 means one second.
	Timeout time.Duration
	// Config is the configuration the dynamic checks start from (an
	// Extism plugin's allowed hosts and config values); nil means
	// config.Default(). Its roots are replaced by each check's sandbox.
	Config *config.Config
	// Report, when set, receives each result as soon as it is known.
	Report func(Result)
	// Done, when set, receives each plugin's report once its last check
	// has run.
	Done func(Report)
	// Logger receives the hosts' logs; nil discards them.
	Logger *slog.Logger
	// AllowExec lets the suite call tools that run commands (proc.exec).
	// The suite approves every call it makes, so a command a plugin or
	// a case file chooses would run as the user running the suite, with
	// nobody asked: only in the workspace's root, but with the user's
	// rights (a command can name any path). Without it, those tools'
	// dynamic checks and cases are skipped, saying so.
	AllowExec bool
	// Launcher is host.Options.Launcher for the hosts the suite opens:
	// the toolhost binary that confines commands.
	Launcher string
}

// execRefused says why a tool that runs commands is not called, or "".
func (o Options) execRefused(m *abi.Manifest) string {
	if o.AllowExec || m == nil || !slices.Contains(m.Capabilities, abi.CapProcExec) {
		return ""
	}
	return "the tool runs commands (proc.exec), which the suite would approve without asking and run as you; pass --allow-exec to run them (in the workspace's root, with your rights) for a plugin you trust"
}

// Run checks each plugin named by paths (a module file, or a directory:
// every plugin in it) and returns one report per plugin, in order. An
// error means a path names no plugin; a plugin that cannot even load is a
// report with failed checks, not an error.
func Run(ctx context.Context, paths []string, opts Options) ([]Report, error) {
	plugins, err := Discover(paths)
	if err != nil {
		return nil, err
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	if opts.Timeout <= 0 {
		opts.Timeout = time.Second
	}
	reports := make([]Report, 0, len(plugins))
	for _, p := range plugins {
		if err := ctx.Err(); err != nil {
			return reports, err
		}
		reports = append(reports, runPlugin(ctx, p, opts))
	}
	return reports, nil
}

// Plugin is a plugin found on disk: its module file and, for a plugin
// in a folder of its own, that folder (with its cases and config).
type Plugin struct {
	Module string // the .wasm file
	Dir    string // its own folder, or "" for a module among others
}

// Name is how reports call the plugin: its folder's name, or the module
// file's name without .wasm.
func (p Plugin) Name() string {
	if p.Dir != "" {
		return filepath.Base(p.Dir)
	}
	return strings.TrimSuffix(filepath.Base(p.Module), ".wasm")
}

// Discover turns the command line's paths into plugins: a .wasm file is
// itself; a directory holds modules (*.wasm) and subdirectories with one
// module each.
func Discover(paths []string) ([]Plugin, error) {
	var out []Plugin
	for _, path := range paths {
		info, err := os.Stat(path)
		if err != nil {
			return nil, fmt.Errorf("plugin %s: %w", path, err)
		}
		if !info.IsDir() {
			out = append(out, Plugin{Module: path})
			continue
		}
		found, err := discoverDir(path)
		if err != nil {
			return nil, err
		}
		out = append(out, found...)
	}
	return out, nil
}

// discoverDir lists the modules serve would load from dir, by the
// registry's rules: each DIR/*.wasm that is not a directory, a symbolic
// link to a module elsewhere or a file that is not regular included (the
// registry follows the one and tries the other, so the suite must test
// or refuse them, never pass over them), and the one *.wasm of each
// subdirectory not hidden.
func discoverDir(dir string) ([]Plugin, error) {
	// The modules serve would load from dir, by the registry's own rules,
	// so what is tested is what is served.
	mods, err := registry.Modules(dir)
	if err != nil {
		return nil, err
	}
	out := make([]Plugin, len(mods))
	for i, m := range mods {
		out[i] = Plugin{Module: m.Path, Dir: m.Dir}
	}
	return out, nil
}

// subject is a plugin under test: what the static checks read and what
// the dynamic checks call.
type subject struct {
	Plugin
	module []byte
	kind   Kind
	// tools are the tools the plugin offers, as loaded by a real host
	// (with what the host implies from the capabilities), or nil when it
	// cannot load; described are the manifests as the plugin states them.
	tools     []abi.Manifest
	described []abi.Manifest
	loadErr   error
	opts      Options

	// base is the run's temporary directory for this plugin, made on
	// first need: plugins holds the one copy of the plugin every
	// workspace loads, and each workspace is a directory beside it.
	base, plugins string
	// conversation and callSeed name the suite's calls as a client
	// would: nothing in them says "test".
	conversation, callSeed string

	// start is how the plugin's start-up went, probed once (startProbe).
	startOnce sync.Once
	start     startResult

	// The module as the static checks read it, and describe's output run
	// apart from the host; each is computed once, when a check needs it.
	info          *moduleInfo
	infoErr       error
	describedJSON []byte
	describeErr   error
}

// check is one entry of the suite.
type check struct {
	id string
	// nativeOnly checks read toolhost/v1 exports and imports.
	nativeOnly bool
	// perTool checks run once for each tool; the others once per plugin.
	perTool bool
	// static checks read the module and the manifests as the plugin
	// states them; the others call the tools the host registered.
	static bool
	run    func(ctx context.Context, s *subject, tool *abi.Manifest) Result
}

// runPlugin runs the suite on one plugin, in order: what the module is
// and what it says (static checks), whether the host loads it, how it
// behaves (dynamic checks), then its own cases.
func runPlugin(ctx context.Context, p Plugin, opts Options) Report {
	s, err := load(ctx, p, opts)
	defer s.cleanup()
	rep := Report{Plugin: p.Module, Kind: s.kind}
	emit := func(r Result) {
		r.Plugin = p.Module
		r.Detail = s.relabel(r.Detail)
		for i, f := range r.Findings {
			r.Findings[i] = s.relabel(f)
		}
		rep.Results = append(rep.Results, r)
		if opts.Report != nil {
			opts.Report(r)
		}
	}
	defer func() {
		if opts.Done != nil {
			opts.Done(rep)
		}
	}()
	if err != nil {
		emit(Result{Check: "load", Status: StatusFail, Detail: err.Error()})
		return rep
	}
	s.statedManifest(ctx)
	tools := s.tools
	if len(tools) == 0 {
		tools = s.described
	}
	for _, m := range tools {
		rep.Tools = append(rep.Tools, m.Name)
	}
	runChecks(ctx, s, staticChecks(), emit)
	if s.loadErr != nil {
		emit(Result{Check: "load", Status: StatusFail, Detail: "the host refuses the plugin: " + s.loadErr.Error()})
	}
	runChecks(ctx, s, dynamicChecks(), emit)
	runCases(ctx, s, emit)
	return rep
}

// runChecks runs checks on s: each once, or once per tool.
func runChecks(ctx context.Context, s *subject, checks []check, emit func(Result)) {
	for _, c := range checks {
		if c.nativeOnly && s.kind != KindNative {
			continue
		}
		if !c.perTool {
			emit(timed(ctx, c, s, nil))
			continue
		}
		tools := s.tools
		if c.static {
			tools = s.described
			if len(tools) == 0 {
				emit(Result{Check: c.id, Status: StatusSkip, Detail: "the plugin's manifest could not be read (see load)"})
				continue
			}
		}
		for i := range tools {
			emit(timed(ctx, c, s, &tools[i]))
		}
	}
}

func timed(ctx context.Context, c check, s *subject, tool *abi.Manifest) Result {
	start := time.Now()
	r := c.run(ctx, s, tool)
	r.Check, r.Elapsed = c.id, time.Since(start)
	if tool != nil && r.Tool == "" {
		r.Tool = tool.Name
	}
	return r
}

// errNoModule is returned for a file that is not a WebAssembly module.
var errNoModule = errors.New("not a WebAssembly module (no \\0asm header)")

// pass, fail and skip build results.
func pass(detail string) Result { return Result{Status: StatusPass, Detail: detail} }

func fail(detail string, findings ...string) Result {
	return Result{Status: StatusFail, Detail: detail, Findings: findings}
}

func skip(why string) Result { return Result{Status: StatusSkip, Detail: why} }
