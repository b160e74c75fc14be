package conformance

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/toolhost/toolhost/abi"
	"github.com/toolhost/toolhost/host"
	"github.com/toolhost/toolhost/host/internal/config"
	"github.com/toolhost/toolhost/host/internal/engine"
	"github.com/toolhost/toolhost/host/internal/inside"
	"github.com/toolhost/toolhost/host/internal/runtime"
	"github.com/toolhost/toolhost/host/internal/wasmbin"
)

// load reads a plugin and learns its tools: as the plugin describes them,
// and as a real host registers them.
func load(ctx context.Context, p Plugin, opts Options) (*subject, error) {
	s := &subject{Plugin: p, opts: opts}
	var err error
	if s.module, err = readRegular(p.Module, maxModuleBytes); err != nil {
		return s, err
	}
	if !bytes.HasPrefix(s.module, []byte("\x00asm")) {
		return s, fmt.Errorf("%s: %w", p.Module, errNoModule)
	}
	if s.kind, err = kindOf(s.module); err != nil {
		return s, fmt.Errorf("%s: %w", p.Module, err)
	}
	if s.kind == KindNative {
		m, err := describe(ctx, p.Module, opts.CacheDir)
		if err != nil {
			s.loadErr = err
		} else {
			s.described = []abi.Manifest{m}
		}
	}
	w, err := s.open(ctx, nil, nil)
	if err != nil {
		s.loadErr = errors.New(s.relabel(err.Error()))
		s.tools = s.described
		return s, nil
	}
	defer w.Close(ctx)
	s.tools = w.h.Installed()
	if s.kind != KindNative {
		s.described = s.tools
	}
	return s, nil
}

// kindOf tells the ABI a module speaks from its exports and imports, by
// the rule serve loads it by (extism.Detect): describe and call make an
// Extism servlet only with an import from Extism's kernel, for a native
// plugin exports them too; one that only lacks its version marker is a
// native plugin, refused for that reason, not checked as an Extism one.
func kindOf(module []byte) (Kind, error) {
	exports, extismImports, err := exportsAndImports(module)
	if err != nil {
		return "", err
	}
	switch {
	case exports[abi.ExportVersionMarker]:
		return KindNative, nil
	case exports["list_tools"] && exports["call_tool"], exports["describe"] && exports["call"] && extismImports:
		return KindExtism, nil
	}
	return "", fmt.Errorf("exports neither %s (a toolhost/v1 plugin) nor list_tools and call_tool, or describe and call with imports from extism:host (an Extism MCP plugin)", abi.ExportVersionMarker)
}

// exportsAndImports lists a module's exports by name, and says whether it
// imports from Extism's kernel (extism:host/env or extism:host/user).
func exportsAndImports(module []byte) (exports map[string]bool, extismImports bool, err error) {
	sections, err := wasmbin.Sections(module)
	if err != nil {
		return nil, false, err
	}
	exports = map[string]bool{}
	for _, sec := range sections {
		switch sec.ID {
		case wasmbin.SectionImport:
			imports, err := wasmbin.Imports(sec)
			if err != nil {
				return nil, false, err
			}
			for _, imp := range imports {
				extismImports = extismImports || imp.Module == "extism:host/env" || imp.Module == "extism:host/user"
			}
		case wasmbin.SectionExport:
			es, err := wasmbin.Exports(sec)
			if err != nil {
				return nil, false, err
			}
			for _, e := range es {
				exports[e.Name] = true
			}
		}
	}
	return exports, extismImports, nil
}

// describe returns a native plugin's manifest as the plugin states it,
// before the host raises what its capabilities imply.
func describe(ctx context.Context, path, cacheDir string) (abi.Manifest, error) {
	// No call runs here, so the state type is only a formality.
	rt, err := runtime.New(ctx, runtime.Config[struct{}]{CacheDir: cacheDir})
	if err != nil {
		return abi.Manifest{}, err
	}
	defer rt.Close(ctx)
	p, err := rt.Load(ctx, path)
	if err != nil {
		return abi.Manifest{}, err
	}
	return p.Manifest(), nil
}

// workspace is a fresh sandbox with the plugin under test loaded in a
// real host: a root holding the fixtures, a state directory, and nothing
// else a tool may reach.
//
// Nothing in it says "test" to the plugin: the directories have random
// names, and the conversation and call ids look like an MCP client's
// (red team: a plugin that behaves only when it sees it is under test).
type workspace struct {
	dir   string // holds the root and state/
	root  string
	state string
	h     *host.Host
	// conversation and callSeed are the subject's: every workspace has
	// a host of its own, so no read cache is shared, and two workspaces
	// making the same calls give them the same ids (call.deterministic
	// compares their results whole).
	conversation, callSeed string
	seq                    atomic.Int64

	// narrowing applies to every batch (ConfirmAll makes the host ask
	// for summaries); deny makes the approver refuse instead of approve.
	narrowing engine.Narrowing
	deny      bool

	// mu guards what the host observed of the workspace's calls: every
	// host function the plugin called, and the size of each result.
	mu       sync.Mutex
	accesses []engine.Access
	outputs  []engine.Output
}

// randomID is n random bytes in hex.
func randomID(n int) string {
	b := make([]byte, n)
	rand.Read(b)
	return hex.EncodeToString(b)
}

// prepare makes the run's directory for this plugin, once: the plugin
// directory every workspace's host loads the plugin from (one copy, so
// its instrumented code is cached by path and compiled once per run, and
// a plugin folder is copied once, not once per workspace), beside which
// each workspace gets a directory of its own.
func (s *subject) prepare() error {
	if s.base != "" {
		return nil
	}
	base, err := os.MkdirTemp("", "")
	if err != nil {
		return err
	}
	plugins := filepath.Join(base, randomID(6))
	if err = os.Mkdir(plugins, 0o700); err == nil {
		err = s.install(plugins)
	}
	if err != nil {
		os.RemoveAll(base)
		return err
	}
	s.base, s.plugins = base, plugins
	s.conversation, s.callSeed = "mcp-"+randomID(12), randomID(16)
	return nil
}

// cleanup removes the run's directory for this plugin.
func (s *subject) cleanup() {
	if s.base != "" {
		os.RemoveAll(s.base)
		s.base, s.plugins = "", ""
	}
}

// relabel replaces, in a message, the copy of the plugin the workspaces
// load with the user's own path, and each workspace's directory with
// <workspace>: a report names what the user has, not the suite's
// temporary files (red team item c).
func (s *subject) relabel(msg string) string {
	if s.base == "" {
		return msg
	}
	installed, user := filepath.Join(s.plugins, filepath.Base(s.Module)), s.Module
	if s.Dir != "" {
		installed, user = filepath.Join(s.plugins, filepath.Base(s.Dir)), s.Dir
	}
	bases := []string{s.base}
	if real, err := filepath.EvalSymlinks(s.base); err == nil && real != s.base {
		bases = append(bases, real)
	}
	for _, b := range bases {
		msg = strings.ReplaceAll(msg, strings.Replace(installed, s.base, b, 1), user)
		msg = strings.ReplaceAll(msg, strings.Replace(s.plugins, s.base, b, 1), filepath.Dir(user))
		msg = regexp.MustCompile(regexp.QuoteMeta(b)+`/[^/\s"']+`).ReplaceAllString(msg, "<workspace>")
		msg = strings.ReplaceAll(msg, b, "<workspace>")
	}
	return msg
}

// open builds a workspace. fixtures, when set, fills the root before the
// host opens; configure, when set, adjusts the configuration.
func (s *subject) open(ctx context.Context, fixtures func(root string) error, configure func(*config.Config)) (*workspace, error) {
	if err := s.prepare(); err != nil {
		return nil, err
	}
	dir, err := os.MkdirTemp(s.base, "")
	if err != nil {
		return nil, err
	}
	w := &workspace{dir: dir, root: filepath.Join(dir, randomID(4)), state: filepath.Join(dir, "state"),
		conversation: s.conversation, callSeed: s.callSeed}
	for _, d := range []string{w.root, w.state} {
		if err := os.Mkdir(d, 0o700); err != nil {
			os.RemoveAll(dir)
			return nil, err
		}
	}
	if fixtures != nil {
		if err := fixtures(w.root); err != nil {
			os.RemoveAll(dir)
			return nil, fmt.Errorf("fixtures: %w", err)
		}
	}
	cfg := s.config(w.root)
	if configure != nil {
		configure(cfg)
	}
	w.h, err = host.Open(ctx, host.Options{PluginDir: s.plugins, Config: cfg, CacheDir: s.opts.CacheDir, StateDir: w.state, Launcher: s.opts.Launcher, Logger: s.opts.Logger})
	if err != nil {
		os.RemoveAll(dir)
		return nil, err
	}
	return w, nil
}

// config is the configuration a workspace enforces: the run's, rooted at
// root, with every tool enabled.
func (s *subject) config(root string) *config.Config {
	cfg := config.Default()
	if s.opts.Config != nil {
		c := *s.opts.Config
		cfg = &c
	}
	cfg.Tools.Mode = config.ModeEnabled
	cfg.Tools.Sandbox.AllowedRoots = []string{root}
	// The suite tests the plugin, not the policy: no tool under test is
	// denied (the default denylist holds run_command).
	cfg.Tools.Approval.Denylist = nil
	return cfg
}

// install puts the plugin under test, alone, in a plugin directory.
func (s *subject) install(plugins string) error {
	if s.Dir == "" {
		return os.WriteFile(filepath.Join(plugins, filepath.Base(s.Module)), s.module, 0o600)
	}
	return os.CopyFS(filepath.Join(plugins, filepath.Base(s.Dir)), os.DirFS(s.Dir))
}

// Close releases the host and removes the workspace.
func (w *workspace) Close(ctx context.Context) {
	w.h.Close(ctx)
	os.RemoveAll(w.dir)
}

// call runs one call of tool with args, approved, in the workspace's
// conversation, observing what the plugin does.
func (w *workspace) call(ctx context.Context, tool string, args json.RawMessage) engine.Result {
	sum := sha256.Sum256([]byte(w.callSeed + strconv.FormatInt(w.seq.Add(1), 10)))
	id := "call_" + hex.EncodeToString(sum[:8])
	approver := engine.ApproverFunc(approveAll)
	if w.deny {
		approver = denyAll
	}
	_, results := w.h.Inside(inside.Key{}).Engine.Process(ctx, engine.Batch{Conversation: w.conversation, Calls: []engine.Call{{ID: id, Name: tool, Arguments: args}}},
		approver, engine.RunOptions{Narrowing: w.narrowing, Observe: w.observe, ObserveOutput: w.observeOutput})
	return results[0]
}

func (w *workspace) observe(a engine.Access) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.accesses = append(w.accesses, a)
}

func (w *workspace) observeOutput(o engine.Output) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.outputs = append(w.outputs, o)
}

// observed returns what the host observed of call id.
func (w *workspace) observed(id string) ([]engine.Access, []engine.Output) {
	w.mu.Lock()
	defer w.mu.Unlock()
	var as []engine.Access
	for _, a := range w.accesses {
		if a.CallID == id {
			as = append(as, a)
		}
	}
	var os []engine.Output
	for _, o := range w.outputs {
		if o.CallID == id {
			os = append(os, o)
		}
	}
	return as, os
}

func denyAll(context.Context, []engine.Confirmation) (engine.Decision, error) {
	return engine.DenyAll("toolhost test"), nil
}

// approveAll is the suite's approver: it tests the plugin, not the policy.
func approveAll(context.Context, []engine.Confirmation) (engine.Decision, error) {
	return engine.ApproveAll("toolhost test"), nil
}
