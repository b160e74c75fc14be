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
	"slices"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/toolhost/toolhost/abi"
	"github.com/toolhost/toolhost/host/internal/argpath"
	"github.com/toolhost/toolhost/host/internal/config"
	"github.com/toolhost/toolhost/host/internal/confine"
	"github.com/toolhost/toolhost/host/internal/hostfn"
	"github.com/toolhost/toolhost/host/internal/jobs"
	"github.com/toolhost/toolhost/host/internal/output"
	"github.com/toolhost/toolhost/host/internal/readcache"
	"github.com/toolhost/toolhost/host/internal/registry"
	"github.com/toolhost/toolhost/host/internal/sandbox"
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
func DefaultLimits() abi.Limits { return abi.DefaultLimits() }

// DefaultMaxArgsBytes is FR-LIM-03's default.
const DefaultMaxArgsBytes = 256 << 10

// DefaultMaxCommitFiles is tools.apply_patch.max_files' default.
const DefaultMaxCommitFiles = 1000

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
	// hidden from processes tools start (CFG-ENV-01); EnvKeep names
	// variables the secret-name and credential rules would hide but
	// commands need. See config.Environment.Sanitize.
	EnvDenylist []string
	EnvKeep     []string
	// MaxCommitFiles is the most files one call may commit together (an
	// apply_patch's files); 0 means DefaultMaxCommitFiles.
	MaxCommitFiles int
	// Policy governs Plan and Run; the zero value means DefaultPolicy, and
	// a zero field of any other Policy is the cautious choice.
	Policy Policy
	// Confiner confines the commands tools run; nil means none,
	// and a command a tool asks for does not run (fail closed). The host
	// sets it from [tools.run_command] and host.Options.Launcher; tests of
	// the engine alone use confine.Unconfined on purpose.
	Confiner *confine.Confiner
	// Jobs runs the background commands tools start and keeps commands'
	// whole output (hostfn.Commands.Jobs); nil refuses background
	// commands and keeps no output.
	Jobs *jobs.Manager
	// ExecMaxTimeout bounds the timeout a command asks for
	// ([tools.run_command] max_timeout_ms); 0 leaves only the call's
	// deadline. NonInteractiveEnv (NAME=value) is set for every command
	// before the variables a call adds ([tools.run_command]
	// noninteractive_env); nil sets none.
	ExecMaxTimeout    time.Duration
	NonInteractiveEnv []string
	// Journal records every batch before its calls run, and each call's
	// start and result; nil keeps no record.
	Journal Journal
	Logger  *slog.Logger
}

// Engine executes calls. It is safe for concurrent use.
type Engine struct {
	cfg     Config
	policy  Policy
	log     *slog.Logger
	environ []string // sanitized once: the host's environment does not change
	redact  *redactor

	mu    sync.Mutex
	turns map[string]int // batches per conversation turn (FR-RES-03)
}

// New returns an engine; zero fields of cfg take the SRD defaults.
func New(cfg Config) *Engine {
	cfg.Limits = cfg.Limits.WithDefaults()
	if cfg.MaxArgsBytes <= 0 {
		cfg.MaxArgsBytes = DefaultMaxArgsBytes
	}
	if cfg.MaxCommitFiles <= 0 {
		cfg.MaxCommitFiles = DefaultMaxCommitFiles
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
	environ, _ := config.Environment{Denylist: cfg.EnvDenylist, Keep: cfg.EnvKeep}.Sanitize(os.Environ())
	return &Engine{
		cfg: cfg, policy: cfg.Policy.withDefaults(), log: cfg.Logger, environ: environ,
		redact: newRedactor(), turns: make(map[string]int),
	}
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
	ID      string `json:"id"`
	Name    string `json:"name"`
	OK      bool   `json:"ok"`
	Content string `json:"content,omitempty"`
	// Structured is the output as one JSON object beside Content, when
	// the plugin gave one (abi.Result's Structured): the host's own
	// sanitized encoding of it, within the output limit with Content.
	Structured json.RawMessage `json:"structured,omitempty"`
	Error      *ToolError      `json:"error,omitempty"`
	// Confinement is the sandbox each command the call ran was confined
	// by, in order; empty when it ran none.
	Confinement []Confinement `json:"confinement,omitempty"`
}

// Confinement is what confined one command: the sandbox mode, network,
// namespaces, Landlock ABI, seccomp and the limits that applied.
type Confinement = confine.Applied

// callOptions are per-call inputs beyond the call itself.
type callOptions struct {
	Conversation string
	// Emit receives streamed output chunks; nil drops them.
	Emit func(context.Context, hostfn.Event) error
	// AvailableCapacityBytes is the caller's estimate of the room left in
	// the model's context for results (FR-REG-04b); 0 keeps the configured
	// fallback.
	AvailableCapacityBytes int64
	// Writes is what the call may write (hostfn.Files.Writes).
	Writes map[string]hostfn.WriteGrant
	// DryRun lets the call write nothing (hostfn.Call.DryRun), and shows
	// its output as an approval's dry run is shown (shownDryRun).
	DryRun bool
	// WritesNothing lets the call write nothing, as DryRun does, its
	// output given as any call's: a call that asked for its own dry run.
	WritesNothing bool
	// ReadsAt and Origin are the read cache's generation when the call's
	// batch was planned, and the batch (hostfn.Files.ReadsAt,
	// hostfn.Call.Origin); zero and empty: the generation as the call
	// begins, the call alone.
	ReadsAt uint64
	Origin  string
	// Journal records what the call does that outlives it
	// (hostfn.Call.Journal); nil records nothing.
	Journal hostfn.CallJournal
	// CommandSandbox and CommandNetwork narrow the sandbox of the commands
	// the call runs (Narrowing's).
	CommandSandbox confine.Mode
	CommandNetwork confine.Network
	// Observe and ObserveOutput are RunOptions'.
	Observe       hostfn.Observer
	ObserveOutput func(Output)
}

// execute validates and runs one call without the approval policy: no
// denylist, no confirmation. Tests use it to exercise a tool alone; a
// tool loop uses Plan and Run, or Process.
func (e *Engine) execute(ctx context.Context, call Call, opts callOptions) Result {
	tool, decoded, resolved, terr := e.prepare(call)
	if terr != nil {
		return e.finish(failed(call, terr))
	}
	m := e.manifest(tool)
	opts.Writes = writeGrants(m, decoded, resolved, onlyCreates(m, decoded, resolved))
	return e.finish(e.callTool(ctx, call, tool, resolved, opts))
}

// callTool executes a validated call with a fresh context (FR-REG-04a):
// its own host-function state, limits and deadline.
func (e *Engine) callTool(ctx context.Context, call Call, tool *registry.Tool, resolved map[string]sandbox.Path, opts callOptions) Result {
	limits := e.cfg.Limits
	if opts.AvailableCapacityBytes > 0 {
		limits.AvailableCapacityBytes = opts.AvailableCapacityBytes
	}
	env := &hostfn.Env{
		Call: hostfn.Call{
			CallID: call.ID, Conversation: opts.Conversation, Sandbox: e.cfg.Sandbox, Resolved: resolved, Limits: limits, DryRun: opts.DryRun || opts.WritesNothing,
			Emit: opts.Emit, Journal: opts.Journal, Observe: opts.Observe,
			Readable:     e.readScope(e.manifest(tool), call, resolved),
			Capabilities: e.manifest(tool).Capabilities, Additive: e.manifest(tool).Additive,
		},
		Files: hostfn.Files{
			Writes: opts.Writes, MaxCommitFiles: e.cfg.MaxCommitFiles,
		},
		Commands: hostfn.Commands{
			Confiner: e.cfg.Confiner.Narrow(opts.CommandSandbox, opts.CommandNetwork), Environ: e.environ,
			Jobs: e.cfg.Jobs, MaxTimeout: e.cfg.ExecMaxTimeout, NonInteractive: e.cfg.NonInteractiveEnv,
			EnvRules: config.Environment{Denylist: e.cfg.EnvDenylist, Keep: e.cfg.EnvKeep},
		},
	}
	if opts.DryRun && opts.Journal == nil && e.cfg.Journal != nil {
		// An approval's preview is not journaled, the call it shows is.
		env.PreviewJournalBytes = e.cfg.Journal.MaxPreimageBytes()
	}
	if e.cfg.ReadCache != nil {
		// A file another batch of the conversation changes after this
		// call's batch was planned is stale for this call.
		if env.Reads = e.cfg.ReadCache(opts.Conversation); env.Reads != nil {
			env.ReadsAt, env.Origin = opts.ReadsAt, opts.Origin
			if env.ReadsAt == 0 {
				env.ReadsAt = env.Reads.Generation()
			}
		}
	}
	res := e.runTool(ctx, call, tool, env, opts)
	res.Confinement = env.Confinement()
	return res
}

// readScope is what a call may read (hostfn.Call.Readable): the paths
// its path arguments name, as preflight resolved them, and for a tool
// that writes unnamed paths, the files its patch names (it reads what it
// changes); below them too for a tool that declares
// reads_under_path_args. A call may touch only the paths its arguments
// name (sdk/README.md): writes are held to that by writeGrants, reads by
// this.
func (e *Engine) readScope(m abi.Manifest, call Call, resolved map[string]sandbox.Path) *hostfn.ReadScope {
	s := &hostfn.ReadScope{Paths: make(map[string]bool, len(resolved)), Below: m.ReadsUnderPathArgs}
	for _, p := range resolved {
		s.Paths[p.Abs] = true
	}
	// Only an absent "path" (the working directory) and a patch's files
	// are not among the paths resolved. With top-level path arguments
	// alone, fewer resolved than declared is what says "path" may be
	// absent; path arguments inside arrays make the count say nothing.
	absent := slices.Contains(m.PathArgs, "path") &&
		(len(resolved) < len(m.PathArgs) || slices.ContainsFunc(m.PathArgs, func(a string) bool { return strings.Contains(a, "/") }))
	if !absent && !m.WritesUnnamedPaths {
		return s // no need to decode the arguments again
	}
	var decoded any
	_ = json.Unmarshal(args(call), &decoded)
	for _, f := range pathArgs(m.PathArgs, decoded) {
		if f.Absent && f.Selector == "path" && e.cfg.Sandbox != nil {
			// An absent "path" is the working directory, as an empty one is
			// (argText); preflight resolves only the arguments given.
			if p, err := e.cfg.Sandbox.Resolve("."); err == nil {
				s.Paths[p.Abs] = true
			}
		}
	}
	for _, p := range e.writtenPaths(m, decoded, resolved) {
		s.Paths[p.Abs] = true
	}
	return s
}

// runTool runs a validated call in env, its fresh context.
func (e *Engine) runTool(ctx context.Context, call Call, tool *registry.Tool, env *hostfn.Env, opts callOptions) Result {
	limits := env.Limits
	// Compiling is not the tool's work: the first call of a plugin must not
	// spend its timeout on it.
	if terr := compile(ctx, call, tool); terr != nil {
		return failed(call, terr)
	}
	timeout := e.timeout(e.manifest(tool))
	cctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	started := time.Now()
	out, err := tool.Plugin.Call(cctx, env, abi.Request{
		ID: call.ID, Tool: call.Name, Conversation: opts.Conversation, Args: args(call), Limits: limits,
	})
	if err != nil {
		return failed(call, e.runError(ctx, call.Name, e.manifest(tool).SideEffecting, err, timeout, time.Since(started)))
	}
	if opts.ObserveOutput != nil {
		opts.ObserveOutput(Output{CallID: call.ID, Bytes: len(out.Content) + len(out.Structured), Limit: int(limits.OutputLimit()), NoTruncate: out.Flags&abi.ResultNoTruncate != 0})
	}
	if out.Kind != "" {
		// A host function that saw the deadline (a command killed at
		// its timeout) reports it like an interrupted guest would.
		if cctx.Err() != nil && (out.Kind == abi.KindTimeout || out.Kind == abi.KindCancelled) {
			return failed(call, mayHaveActed(e.manifest(tool).SideEffecting, stopped(ctx, call.Name, timeout, time.Since(started))))
		}
		return failed(call, pluginError(call.Name, out))
	}
	if opts.DryRun {
		return Result{ID: call.ID, Name: call.Name, OK: true, Content: shownDryRun(string(out.Content), int(limits.OutputLimit()))}
	}
	text := e.content(call, out, int(limits.OutputLimit()))
	obj, terr := e.structured(call, tool, out, len(text), int(limits.OutputLimit()))
	if terr != nil {
		return failed(call, terr)
	}
	return Result{ID: call.ID, Name: call.Name, OK: true, Content: text, Structured: obj}
}

// shownDryRun is an approval's dry run as a person is shown it
// (FR-APR-03): its diff must show every byte the write would write, so
// rather than sanitized (which drops a carriage return and escape
// sequences without a trace) each line is rendered visibly as the
// arguments are (Visible), within limit before it is rendered.
func shownDryRun(s string, limit int) string {
	s = truncate(s, limit)
	var b strings.Builder
	b.Grow(len(s))
	for {
		line, rest, more := strings.Cut(s, "\n")
		b.WriteString(Visible(line))
		if !more {
			return b.String()
		}
		b.WriteByte('\n')
		s = rest
	}
}

// content is a successful result's text: sanitized (JSON-aware, so a listing stays valid JSON with its names' controls escaped), and within limit
// whatever the plugin claims. ResultNoTruncate only spares output that is
// already within the limit from being cut again (a plugin that shortened
// its own output, keeping the end of a log, knows best where to cut); a
// plugin that sets it and returns more is cut like any other, and logged.
func (e *Engine) content(call Call, out abi.Result, limit int) string {
	s := output.SanitizeJSON(string(out.Content))
	if out.Flags&abi.ResultNoTruncate != 0 && len(s) > limit {
		e.log.Warn("a plugin returned more than the output limit while claiming it limited its own output; cut to the limit",
			"tool", call.Name, "id", call.ID, "bytes", len(s), "limit", limit)
	}
	return truncate(s, limit)
}

// prepare runs the checks that need no plugin: existence, size, schema,
// sandbox preflight (FR-VAL-01, FR-VAL-02, FR-LIM-03).
func (e *Engine) prepare(call Call) (*registry.Tool, any, map[string]sandbox.Path, *ToolError) {
	tool, ok := e.cfg.Registry.Lookup(call.Name)
	if !ok {
		return nil, nil, nil, e.unknownTool(call)
	}
	decoded, terr := e.validateArgs(call, tool)
	if terr != nil {
		return nil, nil, nil, terr
	}
	resolved, terr := e.preflight(call, tool.Manifest, decoded)
	if terr != nil {
		return nil, nil, nil, terr
	}
	return tool, decoded, resolved, nil
}

func (e *Engine) unknownTool(call Call) *ToolError {
	return &ToolError{Kind: abi.KindUnknownTool, Message: fmt.Sprintf(
		"unknown tool %q (call %s); available tools: %s", call.Name, call.ID, strings.Join(e.cfg.Registry.Names(), ", "))}
}

// validateArgs checks the arguments' size, encoding and schema, and
// returns them decoded.
func (e *Engine) validateArgs(call Call, tool *registry.Tool) (any, *ToolError) {
	raw := args(call)
	if len(raw) > e.cfg.MaxArgsBytes {
		return nil, denial(abi.DenialLimitsExceeded, fmt.Sprintf(
			"arguments of call %s are %d bytes, over the %d-byte limit (max_tool_args_bytes); send smaller arguments",
			call.ID, len(raw), e.cfg.MaxArgsBytes), nil)
	}
	if !utf8.Valid(raw) {
		return nil, &ToolError{Kind: abi.KindBadArgs, Message: fmt.Sprintf("arguments of call %s are not valid UTF-8", call.ID)}
	}
	var decoded any
	if err := json.Unmarshal(raw, &decoded); err != nil {
		return nil, &ToolError{Kind: abi.KindBadArgs, Message: fmt.Sprintf("arguments of call %s are not valid JSON: %v", call.ID, err)}
	}
	if ptr, first, second, found := ambiguousKey(raw); found {
		return nil, ambiguous(call, ptr, first, second)
	}
	if v := tool.ValidateArgs(decoded); len(v) > 0 {
		return nil, badArgs(call, v)
	}
	if terr := pathArgCase(call, tool.Manifest, decoded); terr != nil {
		return nil, terr
	}
	return decoded, nil
}

// ambiguous refuses arguments that name one member twice: which value a
// plugin takes would be its decoder's choice, not the one checked.
func ambiguous(call Call, ptr, first, second string) *ToolError {
	at := ""
	if ptr != "" {
		at = " in " + ptr
	}
	msg := fmt.Sprintf("arguments of call %s give %q twice%s; give each argument once", call.ID, first, at)
	if first != second {
		msg = fmt.Sprintf("arguments of call %s give %q and %q%s, which differ only in case; a plugin may read either, so give one", call.ID, first, second, at)
	}
	return &ToolError{Kind: abi.KindBadArgs, Message: msg}
}

// pathArgCase refuses an argument named like a path argument in another
// case ("PATH" for "path", "edits/0/PATH" for "edits/*/path"): the
// sandbox checks the exact name, and a plugin matching names regardless
// of case would take the unchecked one.
func pathArgCase(call Call, m abi.Manifest, decoded any) *ToolError {
	mm, found := argpath.Mismatched(m.PathArgs, decoded)
	if !found {
		return nil
	}
	what := fmt.Sprintf("argument %q is not %s's path argument %q", mm.Given, call.Name, mm.Want)
	if mm.Pointer != "/"+mm.Given {
		what = fmt.Sprintf("argument %q (key %q) is not %s's path argument %q", mm.Pointer, mm.Given, call.Name, mm.Selector)
	}
	return &ToolError{Kind: abi.KindBadArgs, Message: fmt.Sprintf(
		"call %s: %s (names are matched exactly); rename it %q", call.ID, what, mm.Want)}
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
// functions so the work is not repeated. A path argument may sit inside
// arrays ("edits/*/path"): every string its selector reaches is one, and
// a refusal names it by its JSON pointer.
func (e *Engine) preflight(call Call, m abi.Manifest, decoded any) (map[string]sandbox.Path, *ToolError) {
	if len(m.PathArgs) == 0 {
		return nil, nil
	}
	found, err := argpath.Find(m.PathArgs, decoded, maxPathArgs)
	var te *argpath.TypeError
	var le *argpath.LimitError
	switch {
	case errors.As(err, &le):
		return nil, denial(abi.DenialLimitsExceeded, fmt.Sprintf(
			"call %s names %d paths in its arguments, more than the %d one call may name; none was checked or read. Split the work into calls of at most %d paths each",
			call.ID, le.Count, le.Limit, le.Limit), map[string]any{"paths": le.Count, "limit": le.Limit})
	case errors.As(err, &te):
		details, _ := json.Marshal(map[string]string{"argument": argpath.Name(te.Pointer), "selector": te.Selector})
		return nil, &ToolError{Kind: abi.KindBadArgs, Details: details, Message: fmt.Sprintf(
			"call %s: %v; send %s as %q", call.ID, te, te.Want, argpath.Name(te.Pointer))}
	case err != nil:
		return nil, &ToolError{Kind: abi.KindExecutionFailed, Message: fmt.Sprintf("call %s: %s's path arguments: %v", call.ID, call.Name, err)}
	}
	resolved := make(map[string]sandbox.Path, len(found))
	for _, f := range found {
		if f.Absent {
			continue
		}
		s := argText(f)
		if _, done := resolved[s]; done {
			continue
		}
		p, err := e.resolveArg(m, s)
		if err != nil {
			var de *sandbox.DenialError
			if errors.As(err, &de) {
				return nil, denial(abi.DenialReason(de.Reason.String()), fmt.Sprintf("call %s, argument %q: %s", call.ID, f.Name(), de.Error()), map[string]any{
					"argument": f.Name(), "attempted": de.Attempted, "resolved": de.Resolved, "pattern": de.Pattern,
				})
			}
			return nil, &ToolError{Kind: abi.KindExecutionFailed, Message: fmt.Sprintf("call %s, argument %q: %v", call.ID, f.Name(), err)}
		}
		resolved[s] = p
	}
	return resolved, nil
}

// resolveArg resolves a path argument of a tool. A tool that removes or
// moves (fs.delete) acts on the entry an argument names: a final symbolic
// link is the link itself, never what it leads to (hostfn.ResolveEntry),
// so that removing a link to toolhost's state removes the link only.
func (e *Engine) resolveArg(m abi.Manifest, s string) (sandbox.Path, error) {
	if slices.Contains(m.Capabilities, abi.CapFSDelete) {
		return hostfn.ResolveEntry(e.cfg.Sandbox, s)
	}
	p, err := e.cfg.Sandbox.Resolve(s)
	if err != nil && describesLinks(m) {
		// A link that leads where a tool may not go is described as the
		// link: ResolveEntry answers without error only for a link whose
		// own path the sandbox allows.
		if entry, eerr := hostfn.ResolveEntry(e.cfg.Sandbox, s); eerr == nil {
			return entry, nil
		}
	}
	return p, err
}

// describesLinks reports a tool that declares describes_links and can
// do nothing with a path but look at it.
func describesLinks(m abi.Manifest) bool {
	return m.DescribesLinks && !m.SideEffecting && !slices.ContainsFunc(m.Capabilities, func(c abi.Capability) bool {
		return c == abi.CapFSWrite || c == abi.CapFSDelete || c == abi.CapProcExec
	})
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

// compile compiles the tool's plugin if it is not yet: outside the call's
// timeout, since compiling is not the tool's work.
func compile(ctx context.Context, call Call, tool *registry.Tool) *ToolError {
	if err := tool.Plugin.Compile(ctx); err != nil {
		return &ToolError{Kind: abi.KindExecutionFailed, Message: fmt.Sprintf(
			"%s cannot run (call %s): its plugin failed to load: %v; check the plugin directory, or rebuild the plugin", call.Name, call.ID, err)}
	}
	return nil
}
