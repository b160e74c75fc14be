// Package engine turns tool calls into results: it validates a call against
// the registry (existence, argument size, schema), preflights its path
// arguments through the sandbox, runs the plugin with the tool's timeout,
// and sanitizes and truncates what comes back. Every call yields exactly
// one Result (NFR-REL-01); the engine never panics on bad input and keeps
// transport concerns out.
package engine

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/toolhost/toolhost/abi"
	"github.com/toolhost/toolhost/host/hostfn"
	"github.com/toolhost/toolhost/host/proc"
	"github.com/toolhost/toolhost/host/readcache"
	"github.com/toolhost/toolhost/host/registry"
	"github.com/toolhost/toolhost/host/sandbox"
)

// Timeouts are the configured fallbacks (CFG-TMO-01); a manifest's explicit
// timeout_ms wins over its class.
type Timeouts struct {
	Default, FileOperations, ShellCommands time.Duration
}

// DefaultTimeouts are the SRD's defaults.
func DefaultTimeouts() Timeouts {
	return Timeouts{Default: 30 * time.Second, FileOperations: 30 * time.Second, ShellCommands: 300 * time.Second}
}

// DefaultLimits are the SRD's defaults (2.7, 3.3.1, 6.5, 6.8, 6.9).
func DefaultLimits() abi.Limits {
	return abi.Limits{
		MaxOutputBytes:         100 << 10,
		AvailableCapacityBytes: 64 << 10,
		MaxFileReadBytes:       200 << 10,
		MaxScanBytes:           2 << 20,
		MaxPatchBytes:          512 << 10,
	}
}

// DefaultMaxArgsBytes is FR-LIM-03's default.
const DefaultMaxArgsBytes = 256 << 10

// Config wires an Engine.
type Config struct {
	Registry     *registry.Registry
	Sandbox      *sandbox.Sandbox
	Limits       abi.Limits
	MaxArgsBytes int
	Timeouts     Timeouts
	// ReadCache returns the read cache of a conversation; nil gives every
	// call an empty one (so overwrites are always refused as stale).
	ReadCache func(conversation string) *readcache.Cache
	// EnvDenylist adds globs to the default list of environment variables
	// hidden from processes tools start (CFG-ENV-01).
	EnvDenylist []string
	Logger      *slog.Logger
}

// Engine executes calls. It is safe for concurrent use.
type Engine struct {
	cfg     Config
	log     *slog.Logger
	environ []string // sanitized once: the host's environment does not change
}

// New returns an engine; zero fields of cfg take the SRD defaults.
func New(cfg Config) *Engine {
	def := DefaultLimits()
	if cfg.Limits.MaxOutputBytes <= 0 {
		cfg.Limits.MaxOutputBytes = def.MaxOutputBytes
	}
	if cfg.Limits.AvailableCapacityBytes <= 0 {
		cfg.Limits.AvailableCapacityBytes = def.AvailableCapacityBytes
	}
	if cfg.Limits.MaxFileReadBytes <= 0 {
		cfg.Limits.MaxFileReadBytes = def.MaxFileReadBytes
	}
	if cfg.Limits.MaxScanBytes <= 0 {
		cfg.Limits.MaxScanBytes = def.MaxScanBytes
	}
	if cfg.Limits.MaxPatchBytes <= 0 {
		cfg.Limits.MaxPatchBytes = def.MaxPatchBytes
	}
	if cfg.MaxArgsBytes <= 0 {
		cfg.MaxArgsBytes = DefaultMaxArgsBytes
	}
	dt := DefaultTimeouts()
	if cfg.Timeouts.Default <= 0 {
		cfg.Timeouts.Default = dt.Default
	}
	if cfg.Timeouts.FileOperations <= 0 {
		cfg.Timeouts.FileOperations = dt.FileOperations
	}
	if cfg.Timeouts.ShellCommands <= 0 {
		cfg.Timeouts.ShellCommands = dt.ShellCommands
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	environ := proc.SanitizeEnv(os.Environ(), append(proc.DefaultEnvDenylist(), cfg.EnvDenylist...))
	return &Engine{cfg: cfg, log: cfg.Logger, environ: environ}
}

// Call is one tool call as a model emitted it.
type Call struct {
	ID        string          `json:"id"`
	Name      string          `json:"name"`
	Arguments json.RawMessage `json:"arguments"`
}

// ToolError is the error half of a Result.
type ToolError struct {
	Kind    abi.ErrorKind   `json:"kind"`
	Message string          `json:"message"`
	Details json.RawMessage `json:"details,omitempty"`
}

func (e *ToolError) Error() string { return string(e.Kind) + ": " + e.Message }

// Result is the outcome of one call: Content when OK, Error otherwise.
type Result struct {
	ID      string     `json:"id"`
	Name    string     `json:"name"`
	OK      bool       `json:"ok"`
	Content string     `json:"content,omitempty"`
	Error   *ToolError `json:"error,omitempty"`
}

// Options are per-call inputs beyond the call itself.
type Options struct {
	Conversation string
	// Emit receives streamed output chunks; nil drops them.
	Emit func(hostfn.Event)
}

// Execute validates and runs one call and returns its result.
func (e *Engine) Execute(ctx context.Context, call Call, opts Options) Result {
	start := time.Now()
	res := e.execute(ctx, call, opts)
	res = e.finish(res)
	e.log.Debug("tool call", "id", call.ID, "tool", call.Name, "ok", res.OK, "elapsed", time.Since(start))
	return res
}

func (e *Engine) execute(ctx context.Context, call Call, opts Options) Result {
	tool, resolved, terr := e.prepare(call)
	if terr != nil {
		return failed(call, terr)
	}
	var reads *readcache.Cache
	if e.cfg.ReadCache != nil {
		reads = e.cfg.ReadCache(opts.Conversation)
	}
	env := &hostfn.Env{
		CallID: call.ID, Sandbox: e.cfg.Sandbox, Reads: reads, Limits: e.cfg.Limits,
		Emit: opts.Emit, Resolved: resolved, Environ: e.environ,
	}
	// Compiling is not the tool's work: the first call of a plugin must not
	// spend its timeout on it.
	if err := tool.Plugin.Compile(ctx); err != nil {
		return failed(call, &ToolError{Kind: abi.KindExecutionFailed, Message: fmt.Sprintf(
			"%s cannot run: its plugin failed to load: %v", call.Name, err)})
	}
	timeout := e.timeout(tool.Manifest)
	cctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	started := time.Now()
	out, err := tool.Plugin.Call(cctx, env, abi.Request{
		ID: call.ID, Tool: call.Name, Conversation: opts.Conversation, Args: args(call), Limits: e.cfg.Limits,
	})
	if err != nil {
		return failed(call, e.runError(ctx, call.Name, err, timeout, time.Since(started)))
	}
	if out.Kind != "" {
		// A host function that saw the deadline (a command killed at
		// its timeout) reports it like an interrupted guest would.
		if cctx.Err() != nil && (out.Kind == abi.KindTimeout || out.Kind == abi.KindCancelled) {
			return failed(call, stopped(ctx, call.Name, timeout, time.Since(started)))
		}
		return failed(call, pluginError(call.Name, out))
	}
	content := string(out.Content)
	if out.Flags&abi.ResultNoTruncate != 0 {
		return Result{ID: call.ID, Name: call.Name, OK: true, Content: sanitize(content)}
	}
	return Result{ID: call.ID, Name: call.Name, OK: true, Content: truncate(sanitize(content), e.outputLimit())}
}

// prepare runs the checks that need no plugin: existence, size, schema,
// sandbox preflight (FR-VAL-01, FR-VAL-02, FR-LIM-03).
func (e *Engine) prepare(call Call) (*registry.Tool, map[string]sandbox.Path, *ToolError) {
	tool, ok := e.cfg.Registry.Lookup(call.Name)
	if !ok {
		return nil, nil, &ToolError{Kind: abi.KindUnknownTool, Message: fmt.Sprintf(
			"unknown tool %q (call %s); available tools: %s", call.Name, call.ID, strings.Join(e.cfg.Registry.Names(), ", "))}
	}
	raw := args(call)
	if len(raw) > e.cfg.MaxArgsBytes {
		return nil, nil, denial(abi.DenialLimitsExceeded, fmt.Sprintf(
			"arguments of call %s are %d bytes, over the %d-byte limit (max_tool_args_bytes); send smaller arguments",
			call.ID, len(raw), e.cfg.MaxArgsBytes), nil)
	}
	if !utf8.Valid(raw) {
		return nil, nil, &ToolError{Kind: abi.KindBadArgs, Message: fmt.Sprintf("arguments of call %s are not valid UTF-8", call.ID)}
	}
	var decoded any
	if err := json.Unmarshal(raw, &decoded); err != nil {
		return nil, nil, &ToolError{Kind: abi.KindBadArgs, Message: fmt.Sprintf("arguments of call %s are not valid JSON: %v", call.ID, err)}
	}
	if v := tool.ValidateArgs(decoded); len(v) > 0 {
		return nil, nil, badArgs(call, v)
	}
	resolved, terr := e.preflight(call, tool.Manifest, decoded)
	if terr != nil {
		return nil, nil, terr
	}
	return tool, resolved, nil
}

func args(call Call) json.RawMessage {
	if len(call.Arguments) == 0 || string(call.Arguments) == "null" {
		return json.RawMessage("{}")
	}
	return call.Arguments
}

func badArgs(call Call, violations []registry.Violation) *ToolError {
	var b strings.Builder
	fmt.Fprintf(&b, "invalid arguments for %s (call %s):", call.Name, call.ID)
	for _, v := range violations {
		ptr := v.Pointer
		if ptr == "" {
			ptr = "(root)"
		}
		fmt.Fprintf(&b, "\n- at %s: %s", ptr, v.Message)
	}
	details, _ := json.Marshal(map[string]any{"violations": violations})
	return &ToolError{Kind: abi.KindBadArgs, Message: b.String(), Details: details}
}

// preflight resolves every path argument through the sandbox before the
// plugin runs (FR-VAL-02); the resolved paths are handed to the host
// functions so the work is not repeated.
func (e *Engine) preflight(call Call, m abi.Manifest, decoded any) (map[string]sandbox.Path, *ToolError) {
	if len(m.PathArgs) == 0 {
		return nil, nil
	}
	obj, _ := decoded.(map[string]any)
	resolved := make(map[string]sandbox.Path, len(m.PathArgs))
	for _, name := range m.PathArgs {
		s, ok := obj[name].(string)
		if !ok {
			continue
		}
		if s == "" && name == "path" {
			s = "."
		}
		p, err := e.cfg.Sandbox.Resolve(s)
		if err != nil {
			var de *sandbox.DenialError
			if errors.As(err, &de) {
				return nil, denial(abi.DenialReason(de.Reason.String()), fmt.Sprintf("call %s, argument %q: %s", call.ID, name, de.Error()), map[string]any{
					"argument": name, "attempted": de.Attempted, "resolved": de.Resolved, "pattern": de.Pattern,
				})
			}
			return nil, &ToolError{Kind: abi.KindExecutionFailed, Message: fmt.Sprintf("call %s, argument %q: %v", call.ID, name, err)}
		}
		resolved[s] = p
	}
	return resolved, nil
}

func denial(reason abi.DenialReason, msg string, extra map[string]any) *ToolError {
	d := map[string]any{"reason": reason}
	for k, v := range extra {
		if v != "" {
			d[k] = v
		}
	}
	details, _ := json.Marshal(d)
	return &ToolError{Kind: abi.KindSandboxViolation, Message: msg, Details: details}
}

func (e *Engine) timeout(m abi.Manifest) time.Duration {
	if m.TimeoutMillis > 0 {
		return time.Duration(m.TimeoutMillis) * time.Millisecond
	}
	switch m.TimeoutClass {
	case abi.TimeoutFile:
		return e.cfg.Timeouts.FileOperations
	case abi.TimeoutShell:
		return e.cfg.Timeouts.ShellCommands
	}
	return e.cfg.Timeouts.Default
}

func (e *Engine) outputLimit() int { return int(e.cfg.Limits.OutputLimit()) }

func failed(call Call, err *ToolError) Result {
	return Result{ID: call.ID, Name: call.Name, Error: err}
}
