package engine

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/toolhost/toolhost/abi"
	"github.com/toolhost/toolhost/host/internal/confine"
	"github.com/toolhost/toolhost/host/internal/hostfn"
	"github.com/toolhost/toolhost/host/internal/journal"
	"github.com/toolhost/toolhost/host/internal/readcache"
	"github.com/toolhost/toolhost/host/internal/registry"
	"github.com/toolhost/toolhost/host/internal/sandbox"
	"github.com/toolhost/toolhost/host/internal/secrets"
)

// Batch is the tool calls of one model response (SRD 2.6).
type Batch struct {
	ID           string // assigned by Plan when empty
	Conversation string
	// Turn identifies the user turn the batch belongs to, for
	// max_tool_iterations_per_user_turn; empty means no turn accounting.
	Turn  string
	Calls []Call
}

// Disposition is what the planner decided for a call (FR-APR-02).
type Disposition string

// Dispositions.
const (
	ExecuteNow           Disposition = "execute"
	RequiresConfirmation Disposition = "confirm"
	PreResolved          Disposition = "pre_resolved"
	// Pending is parse_only mode's disposition: a person supplies the
	// result (FR-MODE-02).
	Pending Disposition = "pending"
)

// Confirmation is what a person is asked to approve (FR-APR-03). Summary
// is a one-line headline; what will run is Arguments, which every
// approval surface shows in full (Details renders them), with
// SummaryNote when the headline was shortened or redacted.
type Confirmation struct {
	CallID  string          `json:"tool_call_id"`
	Tool    string          `json:"tool_name"`
	Summary string          `json:"summary"`
	Risk    abi.RiskLevel   `json:"risk_level"`
	Reason  string          `json:"reason"` // why policy asks
	Args    json.RawMessage `json:"arguments"`

	// SummaryTruncated and SummaryRedacted report that Summary was cut
	// to maxSummary characters, or had secrets hidden: it then is not all
	// that will run, and a surface must say so (SummaryNote).
	SummaryTruncated bool `json:"summary_truncated"`
	SummaryRedacted  bool `json:"summary_redacted"`
	// Arguments are the call's arguments as they will be used, each in
	// full, rendered visibly and never redacted, with the files they name
	// as the sandbox resolved them.
	Arguments []Argument `json:"argument_details"`
	// AlwaysAsk marks a call that only a person may approve, whatever
	// the configuration allows (it would lay out a git directory): an
	// approver that approves by tool name, such as the CLI's --allow,
	// still asks.
	AlwaysAsk bool `json:"always_ask,omitempty"`
}

// PlannedCall is one call with its disposition. Result is set for
// PreResolved calls, Confirmation for RequiresConfirmation ones.
type PlannedCall struct {
	Call         Call          `json:"call"`
	Disposition  Disposition   `json:"disposition"`
	Confirmation *Confirmation `json:"confirmation,omitempty"`
	Result       *Result       `json:"result,omitempty"`

	// planned is the call and disposition as planned: the exported
	// fields are for reading, and Run refuses a call whose fields were
	// changed since, so what runs is what was planned and approved.
	planned     Call
	plannedDisp Disposition

	tool     *registry.Tool
	resolved map[string]sandbox.Path
	// writes is every path the call may write, with what approval covered
	// (hostfn.Env.Writes); nil lets it write anywhere the sandbox allows.
	writes map[string]hostfn.WriteGrant
	// dryRun makes the call write nothing (Narrowing.DryRun).
	dryRun bool
	// ownDryRun makes the call write nothing because it asked for a dry
	// run itself (selfDryRun).
	ownDryRun bool
	// layout is what the call may lay out, for the git layout check
	// again when it runs; gitAsked says planning found it laying out a
	// git directory, so only a person could approve it.
	layout   layoutWrites
	gitAsked bool
}

// changed reports whether the exported fields of pc differ from what was
// planned.
func (pc *PlannedCall) changed() bool {
	return pc.Disposition != pc.plannedDisp || pc.Call.ID != pc.planned.ID || pc.Call.Name != pc.planned.Name ||
		!bytes.Equal(pc.Call.Arguments, pc.planned.Arguments)
}

// Plan is a planned batch: one PlannedCall per call, in call order.
type Plan struct {
	Batch Batch         `json:"batch"`
	Calls []PlannedCall `json:"calls"`

	parallel bool // the batch's policy lets read-only calls run together
	// readsAt is the conversation's read generation when the batch was
	// planned: what a person approved was judged on the files as they
	// were then, so a file another batch changes after it is stale.
	readsAt uint64
	// commandSandbox and commandNetwork are the batch's narrowing of the
	// sandbox commands run in; "" keeps the host's.
	commandSandbox confine.Mode
	commandNetwork confine.Network
	// dryRun is the batch narrowed to a dry run (Narrowing.DryRun), even
	// when planning refused every call: such a batch is never journaled.
	dryRun bool
	// journal is the plan's place in the engine's journal.
	journal journalState
}

// Confirmations lists what needs approval, in call order.
func (p *Plan) Confirmations() []Confirmation {
	var out []Confirmation
	for _, c := range p.Calls {
		if c.Confirmation != nil {
			out = append(out, *c.Confirmation)
		}
	}
	return out
}

// Plan decides every call of a batch, following the SRD's precedence
// (FR-APR-05) with planning-time validation (FR-VAL-02): mode, global
// disable, duplicate ids and batch limits, tool existence, denylist,
// arguments, sandbox preflight, approval mode and allowlist, the tool's own
// requires_approval. Nothing executes and nothing asks; failures become
// PreResolved results. Narrowings restrict the configured policy for this
// batch only, and never widen it. With a journal, a plan that asks someone
// is recorded before Plan returns.
func (e *Engine) Plan(ctx context.Context, b Batch, n ...Narrowing) *Plan {
	if b.ID == "" {
		b.ID = NewBatchID()
	}
	pol := e.policyFor(n)
	p := &Plan{Batch: b, Calls: make([]PlannedCall, len(b.Calls)), parallel: pol.AllowParallel,
		commandSandbox: pol.commandSandbox, commandNetwork: pol.commandNetwork, dryRun: pol.dryRun}
	bp := &batchPlan{writes: batchWrites{}}
	if e.cfg.ReadCache != nil {
		if bp.reads = e.cfg.ReadCache(b.Conversation); bp.reads != nil {
			p.readsAt = bp.reads.Generation()
		}
	}
	dups := duplicateIDs(b.Calls)
	overTurn := e.countIteration(b, pol)
	for i, call := range b.Calls {
		pc := &p.Calls[i]
		pc.Call = call
		if terr := batchCheck(pol, b, i, dups, overTurn); terr != nil {
			pc.preResolve(terr)
			continue
		}
		if pol.Mode == ModeParseOnly {
			pc.Disposition = Pending
			continue
		}
		e.planCall(ctx, pol, pc, bp)
	}
	for i := range p.Calls {
		pc := &p.Calls[i]
		pc.planned = pc.Call
		pc.planned.Arguments = bytes.Clone(pc.Call.Arguments)
		pc.plannedDisp = pc.Disposition
	}
	e.beginJournal(ctx, p)
	return p
}

// batchCheck covers what does not depend on the tool: mode, global
// disable, duplicate ids, the batch and turn limits.
func batchCheck(pol Policy, b Batch, i int, dups map[string]bool, overTurn bool) *ToolError {
	call := b.Calls[i]
	switch {
	case pol.Mode == ModeDisabled:
		return denial(abi.DenialDisabled, fmt.Sprintf("tool calls are disabled (tools.mode = disabled); call %s (%s) was not run", call.ID, call.Name), nil)
	case pol.Mode != ModeEnabled && pol.Mode != ModeParseOnly:
		return denial(abi.DenialDisabled, fmt.Sprintf("tools.mode %q is not one of disabled, parse_only, enabled, so no tool runs; call %s (%s) was not run", pol.Mode, call.ID, call.Name), nil)
	case pol.Disabled:
		return denial(abi.DenialDisabled, "Tool execution disabled by policy", nil)
	case call.ID == "":
		return &ToolError{Kind: abi.KindBadArgs, Message: fmt.Sprintf("call %d of the batch (%s) has no id", i+1, call.Name)}
	case dups[call.ID]:
		return &ToolError{Kind: abi.KindDuplicateToolCallID, Message: fmt.Sprintf(
			"tool call id %q appears more than once in this batch; none of the calls with it ran. Give every call its own id", call.ID)}
	case mintedID(call.ID) && call.ID != journal.CallJournalID(b.ID, i+1):
		return &ToolError{Kind: abi.KindBadArgs, Message: fmt.Sprintf(
			"call %d of the batch (%s) was not run: its id %q is spelled as a journal id, a name toolhost gives calls itself; give the call another id", i+1, call.Name, call.ID)}
	case pol.MaxCallsPerBatch > 0 && i >= pol.MaxCallsPerBatch:
		return denial(abi.DenialLimitsExceeded, fmt.Sprintf(
			"call %s was not run: the batch has %d calls and max_tool_calls_per_batch is %d; send it again in a later batch", call.ID, len(b.Calls), pol.MaxCallsPerBatch), nil)
	case overTurn:
		return denial(abi.DenialLimitsExceeded, fmt.Sprintf(
			"call %s was not run: this user turn already had %d tool batches (max_tool_iterations_per_user_turn); answer the user with what you have", call.ID, pol.MaxIterationsPerTurn), nil)
	}
	return nil
}

// batchPlan is what planning a call needs to know of the batch's calls
// planned before it, and of its conversation.
type batchPlan struct {
	// writes is what the calls planned so far may write.
	writes batchWrites
	// reads is the conversation's read cache; nil when it has none, and
	// then every replacement of a file is stale.
	reads *readcache.Cache
	// touched says a call planned so far may run and read or change
	// files: it may record a read, write or delete a file before a later
	// call runs, so whether that call's files are fresh is known only
	// when it runs.
	touched bool
}

// planCall applies the per-call precedence in enabled mode. bp is what
// the batch's calls before it may do; planCall adds what this one may
// do, unless it is refused.
func (e *Engine) planCall(ctx context.Context, pol Policy, pc *PlannedCall, bp *batchPlan) {
	earlier := bp.writes
	call := pc.Call
	tool, ok := e.cfg.Registry.Lookup(call.Name)
	if !ok {
		pc.preResolve(e.unknownTool(call))
		return
	}
	pc.tool = tool
	switch {
	case pol.denied(call.Name):
		pc.preResolve(denial(abi.DenialDenylisted, fmt.Sprintf(
			"%s is denied by policy (tools.approval.denylist); call %s was not run", call.Name, call.ID), map[string]any{"tool": call.Name}))
		return
	case pol.outside(call.Name):
		pc.preResolve(denial(abi.DenialNotAllowlisted, fmt.Sprintf(
			"%s is not available to this batch (the connection's profile leaves it out); call %s was not run. Use another tool", call.Name, call.ID), map[string]any{"tool": call.Name}))
		return
	}
	decoded, terr := e.validateArgs(call, tool)
	if terr == nil {
		pc.resolved, terr = e.preflight(call, tool.Manifest, decoded)
	}
	if terr == nil {
		terr = e.readOnlyCheck(call, tool.Manifest, decoded, pc.resolved)
	}
	if terr == nil && !bp.touched && !pol.dryRun && !dryRunArgs(decoded) {
		terr = e.freshCheck(ctx, bp.reads, call, tool.Manifest, decoded, pc.resolved)
	}
	if terr != nil {
		pc.preResolve(terr)
		return
	}
	m := e.manifest(tool)
	paths := e.writtenPaths(m, decoded, pc.resolved)
	creates := onlyCreates(m, decoded, pc.resolved)
	pc.writes = writeGrants(m, decoded, pc.resolved, creates)
	// An additive tool (create_directory) only creates whatever is there:
	// the host functions refuse it any replacement, so a call naming a
	// directory that exists already is still only a creation, of
	// nothing. Its grants stay those of a replacement, so that finding
	// the directory there is success, not a refusal.
	lw := layoutOf(m, paths)
	trees := movedTrees(lw, earlier)
	traits := callTraits{sideEffecting: m.SideEffecting, requiresApproval: m.RequiresApproval, onlyCreates: creates || m.Additive,
		gitLayout: gitLayout(lw, trees, earlier), moveCode: pol.moveCode(lw, trees)}
	pc.layout, pc.gitAsked = lw, traits.gitLayout != ""
	if traits.onlyCreates {
		if why := pol.codeWrite(paths); why != "" {
			traits.onlyCreates = false
			traits.codePath = why
		}
	}
	switch {
	case pol.dryRun:
		pc.writes, pc.dryRun = map[string]hostfn.WriteGrant{}, true
		if onlyTouchesFiles(m) {
			// It can change nothing, so there is nothing to approve.
			traits = callTraits{requiresApproval: m.RequiresApproval}
		}
	case e.selfDryRun(m, decoded):
		pc.writes, pc.ownDryRun = map[string]hostfn.WriteGrant{}, true
		traits = callTraits{requiresApproval: e.operatorRequiresApproval(m.Name)}
	}
	g, reason := pol.decide(call.Name, traits)
	switch g {
	case gateDeny:
		pc.preResolve(denial(abi.DenialNotAllowlisted, fmt.Sprintf("%s is not allowed: %s; call %s was not run", call.Name, reason, call.ID), map[string]any{"tool": call.Name}))
	case gatePrompt:
		if traits.gitLayout != "" || traits.codePath != "" || traits.moveCode != "" {
			// What runs code where it lands is asked about as such.
			m.RiskLevel = abi.RiskHigh
		}
		e.requestConfirmation(ctx, pc, m, reason)
		if pc.Confirmation != nil {
			pc.Confirmation.AlwaysAsk = traits.gitLayout != ""
		}
	default:
		pc.Disposition = ExecuteNow
	}
	if pc.Disposition != PreResolved {
		earlier.record(lw, trees, earlier)
		bp.touched = bp.touched || touchesFiles(m)
	}
}

// manifest is the tool's manifest with configured overrides applied.
func (e *Engine) manifest(t *registry.Tool) abi.Manifest {
	m := t.Manifest
	if o, ok := e.policy.Overrides[m.Name]; ok {
		if o.RequiresApproval != nil {
			m.RequiresApproval = *o.RequiresApproval
		}
		if o.Timeout > 0 {
			m.TimeoutMillis = o.Timeout.Milliseconds()
		}
	}
	return m
}

// requestConfirmation asks the plugin for its summary (pure: every host
// function fails during it) and builds the confirmation request
// (FR-APR-06). A failing summary pre-resolves the call.
func (e *Engine) requestConfirmation(ctx context.Context, pc *PlannedCall, m abi.Manifest, reason string) {
	call := pc.Call
	if terr := compile(ctx, call, pc.tool); terr != nil {
		pc.preResolve(terr)
		return
	}
	sctx, cancel := context.WithTimeout(summaryObserved(ctx, call.ID), summaryTimeout)
	defer cancel()
	out, err := pc.tool.Plugin.Summary(sctx, args(call))
	switch {
	case err != nil:
		pc.preResolve(&ToolError{Kind: abi.KindExecutionFailed, Message: fmt.Sprintf(
			"%s could not describe call %s for approval: %v", call.Name, call.ID, err)})
		return
	case out.Kind != "":
		te := pluginError(call.Name, out)
		te.Message = fmt.Sprintf("call %s was not run: its approval summary failed: %s", call.ID, te.Message)
		pc.preResolve(te)
		return
	}
	summary, redacted, truncated := e.redact.headline(string(out.Content), pc.pathTexts())
	pc.Disposition = RequiresConfirmation
	pc.Confirmation = &Confirmation{
		CallID: call.ID, Tool: call.Name, Risk: m.RiskLevel, Reason: reason, Args: args(call),
		Summary: summary, SummaryRedacted: redacted, SummaryTruncated: truncated,
		Arguments: e.arguments(m, args(call), pc.resolved),
	}
}

// pathTexts are the call's path arguments as given and as resolved: the
// texts its summary names the files by, never redacted.
func (pc *PlannedCall) pathTexts() []string {
	var texts []string
	for given, p := range pc.resolved {
		texts = append(texts, given, p.Rel, p.Abs)
	}
	return texts
}

// summaryTimeout bounds a summary: it is pure formatting.
const summaryTimeout = 5 * time.Second

// written returns the paths the call writes, its create_args in manifest
// order (and within one inside arrays, in the arrays' order), keyed by the
// argument as given. complete is false when an argument is absent (a
// top-level one, or a key of an array's element), so the call's writes
// are not all known; an absent or empty array names no path, and leaves
// complete as it is.
func written(m abi.Manifest, decoded any, resolved map[string]sandbox.Path) (paths []string, complete bool) {
	complete = true
	for _, f := range pathArgs(m.CreateArgs, decoded) {
		if _, ok := resolved[f.Text]; f.Absent || !ok {
			complete = false
			continue
		}
		if !slices.Contains(paths, f.Text) {
			paths = append(paths, f.Text)
		}
	}
	return paths, complete
}

// readOnlyCheck refuses a call that writes a path the sandbox never lets
// a tool write (toolhost's configuration, git's internals, a read-only
// pattern, a name ending in a slash). The sandbox refuses the write too;
// this says so before anyone is asked.
func (e *Engine) readOnlyCheck(call Call, m abi.Manifest, decoded any, resolved map[string]sandbox.Path) *ToolError {
	paths, _ := written(m, decoded, resolved)
	for _, attempted := range paths {
		err := e.cfg.Sandbox.CheckWrite(resolved[attempted])
		var de *sandbox.DenialError
		switch {
		case err == nil:
			continue
		case !errors.As(err, &de):
			return &ToolError{Kind: abi.KindExecutionFailed, Message: fmt.Sprintf("call %s: %s: %v", call.ID, attempted, err)}
		}
		return denial(abi.DenialReason(de.Reason.String()), fmt.Sprintf("call %s was not run: %s", call.ID, de.Error()),
			map[string]any{"attempted": attempted, "pattern": de.Pattern})
	}
	return nil
}

// freshCheck refuses a call that replaces or patches a file its
// conversation never read, or one that changed since it was read:
// stale-file protection (FR-TOOL-PATCH-02a/b) would refuse the change
// when the call runs, after a person approved it, so the call is refused
// now and nobody is asked. It checks what the call's arguments say it
// changes: the files its create_args name, and for a tool that writes
// unnamed paths, every file named by an LP1 patch among its arguments
// (LP1 does not delete, so each existing one is updated). A file that
// does not exist is a creation, which needs no read.
//
// The check at the write stays, under the file's lock: a file that
// changes between this check and the write is refused there.
func (e *Engine) freshCheck(ctx context.Context, reads *readcache.Cache, call Call, m abi.Manifest, decoded any, resolved map[string]sandbox.Path) *ToolError {
	// An additive tool replaces nothing (the host functions hold it to
	// that), so no read is the basis of its change.
	if e.cfg.Sandbox == nil || !slices.Contains(m.Capabilities, abi.CapFSWrite) || m.Additive {
		return nil
	}
	type change struct {
		p      sandbox.Path
		name   string
		action string
	}
	var changes []change
	paths, _ := written(m, decoded, resolved)
	for _, given := range paths {
		changes = append(changes, change{resolved[given], given, "writing"})
	}
	if m.WritesUnnamedPaths {
		for _, p := range e.patchedPaths(decoded) {
			changes = append(changes, change{p, p.Attempted, "patching"})
		}
	}
	// Planning has no deadline of its own: a file larger than a scan
	// (too large to patch; or one a model read, then made huge) is not
	// hashed here but left to the check made when the change commits,
	// within the call's deadline.
	scanLimit := e.cfg.Limits.WithDefaults().MaxScanBytes
	for _, c := range changes {
		if fi, err := c.p.Lstat(); err == nil && fi.Size() > scanLimit {
			continue
		}
		err := hostfn.CheckFresh(ctx, e.cfg.Sandbox, reads, c.p, c.name, c.action)
		var he *hostfn.Error
		if !errors.As(err, &he) {
			continue
		}
		details, _ := json.Marshal(he.Details)
		return &ToolError{Kind: he.Kind, Details: details, Message: fmt.Sprintf(
			"call %s (%s) was not run, and nobody was asked to approve it: %s", call.ID, call.Name, he.Message)}
	}
	return nil
}

// selfDryRun reports that a call asks for its own dry run ("dry_run":
// true) of a tool that declares one (hasDryRun) and reaches only files.
// Such a call is held to writing nothing (hostfn.Call.DryRun refuses
// every write whatever the plugin does with the argument), so it only
// reads the paths its arguments name, as a read-only tool would: it
// runs without a prompt, unless the operator asks for every call of the
// tool (tools.overrides.<tool>.requires_approval). A model can see what
// a delete or an edit would do before it asks for it.
func (e *Engine) selfDryRun(m abi.Manifest, decoded any) bool {
	return dryRunArgs(decoded) && onlyTouchesFiles(m) && e.hasDryRun(m.Name)
}

// operatorRequiresApproval reports that the operator's configuration,
// not the plugin's manifest, says every call of tool needs approval.
func (e *Engine) operatorRequiresApproval(tool string) bool {
	o, ok := e.policy.Overrides[tool]
	return ok && o.RequiresApproval != nil && *o.RequiresApproval
}

// dryRunArgs reports that a call's arguments ask for a dry run
// ("dry_run": true, as toolhost's writers take it): the call shows a
// change and makes none, so whether a file is fresh is for the call to
// say, if it checks at all (write_file's diff does not).
func dryRunArgs(decoded any) bool {
	obj, _ := decoded.(map[string]any)
	dry, _ := obj["dry_run"].(bool)
	return dry
}

// patchedPaths are the files named by the LP1 patches among a call's
// string arguments, as the sandbox resolves them, in argument-name order.
func (e *Engine) patchedPaths(decoded any) []sandbox.Path {
	obj, _ := decoded.(map[string]any)
	var out []sandbox.Path
	for _, k := range slices.Sorted(maps.Keys(obj)) {
		if s, ok := obj[k].(string); ok {
			out = append(out, e.resolvePatch(s)...)
		}
	}
	return out
}

// touchesFiles reports that a tool's calls may read or change files
// (record a read, write, delete, or run a command that does): anything
// beyond listing and searching directories, which record no read.
func touchesFiles(m abi.Manifest) bool {
	for _, c := range m.Capabilities {
		if c != abi.CapFSList && c != abi.CapFSSearch {
			return true
		}
	}
	return false
}

// onlyCreates reports that the call writes only paths that do not exist
// yet, all of them named by its arguments.
func onlyCreates(m abi.Manifest, decoded any, resolved map[string]sandbox.Path) bool {
	if m.WritesUnnamedPaths {
		return false // what else it writes is not known before it runs
	}
	paths, complete := written(m, decoded, resolved)
	if !complete || len(paths) == 0 {
		return false
	}
	for _, attempted := range paths {
		if _, err := resolved[attempted].Lstat(); !errors.Is(err, fs.ErrNotExist) {
			return false
		}
	}
	return true
}

func (pc *PlannedCall) preResolve(terr *ToolError) {
	pc.Disposition = PreResolved
	pc.Result = &Result{ID: pc.Call.ID, Name: pc.Call.Name, Error: terr}
}

func duplicateIDs(calls []Call) map[string]bool {
	seen := make(map[string]int, len(calls))
	for _, c := range calls {
		seen[c.ID]++
	}
	dups := make(map[string]bool)
	for id, n := range seen {
		if n > 1 {
			dups[id] = true
		}
	}
	return dups
}

// countIteration counts the batch against its turn and reports whether the
// turn is over its limit (FR-RES-03).
func (e *Engine) countIteration(b Batch, pol Policy) bool {
	if b.Turn == "" || pol.MaxIterationsPerTurn <= 0 {
		return false
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	if len(e.turns) >= maxTrackedTurns {
		// A long-running host forgets old turns rather than grow forever;
		// a turn is over long before this many others start.
		clear(e.turns)
	}
	key := b.Conversation + "\x00" + b.Turn
	e.turns[key]++
	return e.turns[key] > pol.MaxIterationsPerTurn
}

// maxTrackedTurns bounds the turn counters an engine keeps.
const maxTrackedTurns = 10000

// redactor hides secrets in approval summaries (FR-APR-01).
type redactor struct {
	rules []redaction
}

// redaction is a rule: its regexp's first group is the secret, replaced
// by [REDACTED]; the rest of the match stays. Whitespace in a rule is
// [ \t], never a line break: a secret's value ends at the end of its line,
// so redaction cannot hide the next line of a command. A rule without a
// regexp is a value shape of package secrets, the very shapes that hide
// a variable from commands, which finds its secrets itself.
type redaction struct {
	re *regexp.Regexp
	// needs holds characters of which every match of re has one: a
	// string without any is not searched. Most arguments are paths and
	// short words, and the regexes backtrack over each position of them
	// (tens of microseconds a call, journaled or asked about).
	needs string
	shape secrets.Shape
}

// spans are the secrets rule finds in s.
func (rule redaction) spans(s string) [][2]int {
	if rule.re == nil {
		return rule.shape.Find(s)
	}
	if rule.needs != "" && !strings.ContainsAny(s, rule.needs) {
		return nil
	}
	var out [][2]int
	for _, m := range rule.re.FindAllStringSubmatchIndex(s, -1) {
		if m[2] >= 0 {
			out = append(out, [2]int{m[2], m[3]})
		}
	}
	return out
}

// maxSummary is FR-APR-06's bound, in characters.
const maxSummary = 200

// hidden is what a redacted secret shows as.
const hidden = "[REDACTED]"

func newRedactor() *redactor {
	rules := []redaction{
		// Authorization schemes first, so "Authorization: Bearer x" loses x.
		{re: regexp.MustCompile(`(?i)\b(?:bearer|basic|token)[ \t]+([A-Za-z0-9._~+/=-]{8,})`), needs: " \t"},
		// key=value and key: value where the key names a secret.
		{re: regexp.MustCompile(`(?i)\b[a-z0-9_.-]*(?:api[_-]?key|token|secret|passw(?:or)?d|pwd|credential|private[_-]?key)[a-z0-9_.-]*["']?[ \t]*[:=][ \t]*["']?([^\s"'&,;]+)`), needs: ":="},
		// Credentials in URLs.
		{re: regexp.MustCompile(`://[^/\s:@]+:([^@\s/]+)@`), needs: "@"},
	}
	// Credentials told by their text wherever they appear (token prefixes,
	// JWTs, private key blocks over as many lines as they take, webhook
	// URLs, connection strings' passwords): `toolhost config show` lists
	// them.
	for _, s := range secrets.Shapes() {
		rules = append(rules, redaction{shape: s})
	}
	return &redactor{rules: rules}
}

// summary is what a person is asked to approve, from the plugin's text
// s: secrets redacted, except within the exact text of keep (the call's
// path arguments: a path is what the person judges, so it is never
// hidden), rendered visibly (see Visible: line breaks, control and format
// characters written out), spaces collapsed, and cut in the middle to
// maxSummary characters.
func (r *redactor) summary(s string, keep []string) string {
	text, _, _ := r.headline(s, keep)
	return text
}

// headline is summary, reporting whether a secret was redacted and
// whether the text was cut: a surface showing it must then say that it
// is not all that will run.
func (r *redactor) headline(s string, keep []string) (text string, redacted, truncated bool) {
	s = strings.ToValidUTF8(s, "\uFFFD")
	for _, rule := range r.rules {
		var hit bool
		s, hit = rule.apply(s, keep)
		redacted = redacted || hit
	}
	s = squeeze(s)
	return shown(s, maxSummary), redacted, renderedLength(s) > maxSummary
}

// apply redacts every secret rule matches in s, but for one that lies
// wholly within an occurrence of a keep text, and reports whether it
// redacted any.
func (rule redaction) apply(s string, keep []string) (string, bool) {
	ms := rule.spans(s)
	if ms == nil {
		return s, false
	}
	hit := false
	var b strings.Builder
	last := 0
	for _, m := range ms {
		from, to := m[0], m[1]
		if within(s, from, to, keep) {
			continue
		}
		b.WriteString(s[last:from])
		b.WriteString(hidden)
		last = to
		hit = true
	}
	b.WriteString(s[last:])
	return b.String(), hit
}

// within reports whether s[from:to] lies inside an occurrence in s of one
// of keep.
func within(s string, from, to int, keep []string) bool {
	for _, k := range keep {
		if k == "" || len(k) < to-from {
			continue
		}
		// An occurrence containing [from, to) starts at or after to-len(k).
		lo := max(0, to-len(k))
		hi := min(from, len(s)-len(k))
		for i := lo; i <= hi; i++ {
			if s[i:i+len(k)] == k {
				return true
			}
		}
	}
	return false
}

// onlyTouchesFiles reports that a tool's capabilities reach only the
// sandbox's files: in a dry run, where it may write none, it changes
// nothing.
func onlyTouchesFiles(m abi.Manifest) bool {
	for _, c := range m.Capabilities {
		if c != abi.CapFSRead && c != abi.CapFSList && c != abi.CapFSWrite && c != abi.CapFSDelete && c != abi.CapFSSearch {
			return false
		}
	}
	return true
}
