package engine

import (
	"reflect"
	"slices"
	"strings"
	"time"

	"github.com/toolhost/toolhost/abi"
	"github.com/toolhost/toolhost/host/internal/config"
	"github.com/toolhost/toolhost/host/internal/confine"
)

// ToolsMode is tools.mode, the engine's overall stance on tool calls
// (FR-MODE-01..03). It is the configuration's type (config.Mode), so what
// the operator writes and what a Narrowing names are one value with
// nothing to convert; config.Mode says what each mode does.
type ToolsMode = config.Mode

// Tools modes.
const (
	ModeDisabled  = config.ModeDisabled
	ModeParseOnly = config.ModeParseOnly
	ModeEnabled   = config.ModeEnabled
)

// ApprovalMode is tools.approval.mode: how the policy treats calls that
// are neither denied nor required by their tool to be confirmed
// (FR-APR-04). It is the configuration's type (config.ApprovalMode).
type ApprovalMode = config.ApprovalMode

// Approval modes.
const (
	ApprovalAuto   = config.ApprovalAuto
	ApprovalPrompt = config.ApprovalPrompt
	ApprovalDeny   = config.ApprovalDeny
)

// Override adjusts one tool's manifest by configuration.
type Override struct {
	Timeout          time.Duration // 0: keep the manifest's
	RequiresApproval *bool         // nil: keep the manifest's
	Denied           bool
}

// Policy is the tool loop's configuration: mode, approval policy and the
// batch limits (SRD 2.6, 2.7, 3.4.3). A field left at its zero value is the
// cautious choice, so a Policy built by hand that sets only some fields
// never silently disables tools nor runs side effects unasked; the zero
// Policy as a whole means DefaultPolicy.
type Policy struct {
	// Mode is the tools mode; "" means enabled, and an unknown mode
	// refuses every call.
	Mode ToolsMode

	// Disabled pre-resolves every call as "Tool execution disabled by
	// policy" (FR-APR-04a: tools.approval.enabled = false).
	Disabled bool
	// Approval is the approval mode; "" and unknown modes mean prompt.
	Approval  ApprovalMode
	Allowlist []string
	Denylist  []string
	// SideEffectsUnprompted lets side-effecting calls run without a prompt
	// in prompt mode (tools.approval.prompt_side_effects = false).
	SideEffectsUnprompted bool
	// AutoApproveNewFiles lets a call that only creates files (every
	// CreateArgs path is absent) run without a prompt where the prompt
	// would come from prompt_side_effects alone; replacing a file asks.
	AutoApproveNewFiles bool
	// CodePatterns are globs of paths that make tools run code when
	// written (config.DefaultCodePatterns): a call writing one is never
	// auto-approved as only creating new files.
	CodePatterns []string

	// MaxCallsPerBatch is FR-LIM-01's limit; 0 means the default (8) and a
	// negative value no limit.
	MaxCallsPerBatch int
	// MaxIterationsPerTurn is FR-LIM-02's limit; 0 means the default (4)
	// and a negative value no limit.
	MaxIterationsPerTurn int
	AllowParallel        bool

	Overrides map[string]Override
	// Definitions are tools defined only by configuration (CFG-TOOLS-02),
	// advertised in parse_only mode for results a person supplies.
	Definitions []abi.Manifest

	// Set by narrowing only.
	only       map[string]bool // when non-nil, the only tools that may run
	confirmAll bool            // every call that would run asks first
	dryRun     bool            // every call writes nothing (Narrowing.DryRun)
	// commandSandbox and commandNetwork tighten run_command's sandbox
	// (Narrowing.CommandSandbox, CommandNetwork); "" keeps the host's.
	commandSandbox confine.Mode
	commandNetwork confine.Network
}

// DefaultPolicy is the SRD's defaults: execute, prompt for side effects,
// read_file allowlisted, run_command denylisted (NFR-SEC-06).
func DefaultPolicy() Policy {
	return Policy{
		Mode:                 ModeEnabled,
		Approval:             ApprovalPrompt,
		Allowlist:            []string{"read_file"},
		Denylist:             []string{"run_command"},
		AutoApproveNewFiles:  true,
		CodePatterns:         config.DefaultCodePatterns(),
		MaxCallsPerBatch:     8,
		MaxIterationsPerTurn: 4,
	}
}

// withDefaults is p with its zero fields replaced by what they mean.
func (p Policy) withDefaults() Policy {
	if reflect.ValueOf(p).IsZero() {
		return DefaultPolicy()
	}
	def := DefaultPolicy()
	if p.Mode == "" {
		p.Mode = ModeEnabled
	}
	if p.Approval == "" {
		p.Approval = ApprovalPrompt
	}
	if p.MaxCallsPerBatch == 0 {
		p.MaxCallsPerBatch = def.MaxCallsPerBatch
	}
	if p.MaxIterationsPerTurn == 0 {
		p.MaxIterationsPerTurn = def.MaxIterationsPerTurn
	}
	if p.CodePatterns == nil { // an empty list is the operator's choice
		p.CodePatterns = def.CodePatterns
	}
	return p
}

// Narrowing restricts the configured policy for one batch: a transport's
// profile (a read-only endpoint, a client that must confirm everything).
// It can only make the policy stricter: a field that would widen it is
// ignored, so a narrowing never runs a call the configuration would not
// run, nor runs one unasked that the configuration would ask about. The
// zero Narrowing changes nothing.
type Narrowing struct {
	// Mode lowers the tools mode (enabled > parse_only > disabled); "" keeps
	// it. An unknown mode refuses every call.
	Mode ToolsMode
	// Approval raises the approval mode (auto < prompt < deny); "" keeps
	// it. An unknown mode counts as deny.
	Approval ApprovalMode
	// Tools, when non-nil, are the only tools the batch may run (and the
	// only ones Advertised offers); the others are refused. A tool the
	// configuration denies stays denied.
	Tools []string
	// Deny adds tools to the denylist.
	Deny []string
	// ConfirmAll asks before every call that would run: read-only,
	// allowlisted and new-file calls included.
	ConfirmAll bool
	// Sequential runs calls one at a time even when allow_parallel is set.
	Sequential bool
	// MaxCallsPerBatch lowers FR-LIM-01's limit; 0 keeps it.
	MaxCallsPerBatch int
	// DryRun makes every call one that writes nothing: the host functions
	// refuse every write and command and allow only dry-run commits and
	// diffs, so the call can show what it would change (an approval's
	// preview). A call of a tool that only touches files then changes
	// nothing and is not asked about; other calls are planned as usual.
	DryRun bool
	// CommandSandbox and CommandNetwork tighten the sandbox commands run in
	// (a profile's [profiles.NAME] sandbox and network):
	// workspace-write to read-only, allowlist to off. A looser value
	// changes nothing; "" keeps the host's.
	CommandSandbox confine.Mode
	CommandNetwork confine.Network
}

// narrow is p restricted by n.
func (p Policy) narrow(n Narrowing) Policy {
	if n.Mode != "" && modeRank(n.Mode) < modeRank(p.Mode) {
		p.Mode = n.Mode
	}
	if n.Approval != "" && approvalRank(n.Approval) > approvalRank(p.Approval) {
		p.Approval = n.Approval
		if approvalRank(n.Approval) > approvalRank(ApprovalDeny) {
			p.Approval = ApprovalDeny
		}
	}
	if n.Tools != nil {
		only := make(map[string]bool, len(n.Tools))
		for _, t := range n.Tools {
			if p.only == nil || p.only[t] {
				only[t] = true
			}
		}
		p.only = only
	}
	if len(n.Deny) > 0 {
		p.Denylist = append(slices.Clip(p.Denylist), n.Deny...)
	}
	p.confirmAll = p.confirmAll || n.ConfirmAll
	p.dryRun = p.dryRun || n.DryRun
	p.commandSandbox = confine.StricterMode(p.commandSandbox, n.CommandSandbox)
	p.commandNetwork = confine.StricterNetwork(p.commandNetwork, n.CommandNetwork)
	p.AllowParallel = p.AllowParallel && !n.Sequential
	if n.MaxCallsPerBatch > 0 && (p.MaxCallsPerBatch < 0 || n.MaxCallsPerBatch < p.MaxCallsPerBatch) {
		p.MaxCallsPerBatch = n.MaxCallsPerBatch
	}
	return p
}

// modeRank orders tools modes by how much they run; an unknown mode runs
// nothing.
func modeRank(m ToolsMode) int {
	switch m {
	case ModeEnabled:
		return 2
	case ModeParseOnly:
		return 1
	}
	return 0
}

// approvalRank orders approval modes by strictness; an unknown mode is
// stricter than any.
func approvalRank(m ApprovalMode) int {
	switch m {
	case ApprovalAuto:
		return 0
	case ApprovalPrompt:
		return 1
	case ApprovalDeny:
		return 2
	}
	return 3
}

func (p Policy) denied(tool string) bool {
	return slices.Contains(p.Denylist, tool) || p.Overrides[tool].Denied
}

// outside reports that a narrowing left tool out of the batch's profile.
func (p Policy) outside(tool string) bool { return p.only != nil && !p.only[tool] }

func (p Policy) allowlisted(tool string) bool { return slices.Contains(p.Allowlist, tool) }

// gate is the outcome of the approval policy for a valid call.
type gate int

const (
	gateExecute gate = iota
	gatePrompt
	gateDeny
)

// callTraits is what the approval policy weighs about a valid call.
type callTraits struct {
	sideEffecting, requiresApproval bool
	// onlyCreates reports that the call creates files and replaces none,
	// none of them a code path.
	onlyCreates bool
	// codePath says which written path matches which code pattern, when
	// that alone kept the call from counting as only creating files.
	codePath string
	// gitLayout is why the call would lay out a git directory: it then
	// always asks a person, unless it is denied.
	gitLayout string
	// moveCode says which path tools run code from a call that moves
	// changes (Policy.moveCode): the reason it is asked about.
	moveCode string
}

// decide applies FR-APR-04/05 steps 4 and 5 to a call that passed the
// denylist and the sandbox: the mode and allowlist, a write laying out a
// git directory (which asks whatever the mode, allowlist and
// prompt_side_effects say), then the tool's own requires_approval, which
// always prompts (FR-APR-04e).
func (p Policy) decide(tool string, c callTraits) (gate, string) {
	switch p.Approval {
	case ApprovalDeny:
		if !p.allowlisted(tool) {
			return gateDeny, "approval mode is deny and " + tool + " is not in tools.approval.allowlist"
		}
	case ApprovalAuto:
	default: // prompt, and any mode this engine does not know
		if c.sideEffecting && !p.SideEffectsUnprompted && !p.allowlisted(tool) && !(c.onlyCreates && p.AutoApproveNewFiles) {
			switch {
			case c.gitLayout != "":
				return gatePrompt, c.gitLayout
			case c.moveCode != "":
				return gatePrompt, movesCode(tool, c.moveCode)
			case c.requiresApproval:
				return gatePrompt, tool + " requires approval"
			case c.codePath != "" && p.AutoApproveNewFiles:
				return gatePrompt, tool + " writes " + c.codePath + ": tools run code from such files, so creating one is never auto-approved"
			}
			return gatePrompt, tool + " has side effects (tools.approval.prompt_side_effects)"
		}
	}
	if c.gitLayout != "" {
		return gatePrompt, c.gitLayout
	}
	if c.requiresApproval && c.moveCode != "" {
		return gatePrompt, movesCode(tool, c.moveCode)
	}
	if c.requiresApproval {
		return gatePrompt, tool + " requires approval"
	}
	if p.confirmAll {
		return gatePrompt, "this batch's profile asks before every call"
	}
	return gateExecute, ""
}

// movesCode is the reason a call moving a file tools run code from is
// asked about.
func movesCode(tool, why string) string {
	return tool + " moves " + why + ": tools run code from such files"
}

// Advertised is what the engine offers a model (FR-MODE-01/02,
// CFG-TOOLS-02a): nothing when disabled; the registry's tools when
// enabled; in parse_only, those plus the configured definitions, which
// win over a registry tool of the same name. Denied tools, and tools a
// narrowing leaves out, are left out: a model offered a tool it can never
// use only wastes calls on it.
func (e *Engine) Advertised(n ...Narrowing) []abi.Manifest {
	pol := e.policyFor(n)
	if pol.Mode != ModeEnabled && pol.Mode != ModeParseOnly {
		return nil
	}
	var out []abi.Manifest
	defined := make(map[string]bool)
	if pol.Mode == ModeParseOnly {
		for _, d := range pol.Definitions {
			defined[d.Name] = true
			if !pol.outside(d.Name) {
				out = append(out, d)
			}
		}
	}
	for _, t := range e.cfg.Registry.Tools() {
		name := t.Manifest.Name
		if !defined[name] && !pol.denied(name) && !pol.outside(name) {
			out = append(out, e.manifest(t))
		}
	}
	slices.SortFunc(out, func(a, b abi.Manifest) int { return strings.Compare(a.Name, b.Name) })
	return out
}

// policyFor is the configured policy narrowed by ns.
func (e *Engine) policyFor(ns []Narrowing) Policy {
	pol := e.policy
	for _, n := range ns {
		pol = pol.narrow(n)
	}
	return pol
}

// MaxCallsPerBatch is how many calls of a batch narrowed by ns may run
// (FR-LIM-01); 0 or less means no limit.
func (e *Engine) MaxCallsPerBatch(ns ...Narrowing) int { return e.policyFor(ns).MaxCallsPerBatch }

// Denylisted reports whether policy denies the tool outright.
func (e *Engine) Denylisted(tool string) bool { return e.policy.denied(tool) }
