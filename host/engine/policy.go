package engine

import (
	"slices"
	"strings"
	"time"

	"github.com/toolhost/toolhost/abi"
)

// ToolsMode is the engine's overall stance on tool calls (FR-MODE-01..03).
type ToolsMode string

// Tools modes.
const (
	// ModeDisabled advertises no tools and pre-resolves every call as an
	// error.
	ModeDisabled ToolsMode = "disabled"
	// ModeParseOnly advertises tools and records calls as pending; a person
	// supplies their results.
	ModeParseOnly ToolsMode = "parse_only"
	// ModeEnabled validates, gates and executes calls.
	ModeEnabled ToolsMode = "enabled"
)

// ApprovalMode is how the policy treats calls that are neither denied nor
// required by their tool to be confirmed (FR-APR-04).
type ApprovalMode string

// Approval modes.
const (
	ApprovalAuto   ApprovalMode = "auto"   // execute unless denied
	ApprovalPrompt ApprovalMode = "prompt" // ask per the allowlist and prompt_side_effects
	ApprovalDeny   ApprovalMode = "deny"   // deny unless allowlisted
)

// Override adjusts one tool's manifest by configuration.
type Override struct {
	Timeout          time.Duration // 0: keep the manifest's
	RequiresApproval *bool         // nil: keep the manifest's
	Denied           bool
}

// Policy is the tool loop's configuration: mode, approval policy and the
// batch limits (SRD 2.6, 2.7, 3.4.3).
type Policy struct {
	Mode ToolsMode

	// ApprovalEnabled false pre-resolves every call (FR-APR-04a).
	ApprovalEnabled   bool
	Approval          ApprovalMode
	Allowlist         []string
	Denylist          []string
	PromptSideEffects bool
	// AutoApproveNewFiles lets a call that only creates files (every
	// CreateArgs path is absent) run without a prompt where the prompt
	// would come from prompt_side_effects alone; replacing a file asks.
	AutoApproveNewFiles bool

	MaxCallsPerBatch     int // FR-LIM-01
	MaxIterationsPerTurn int // FR-LIM-02; 0 means no limit
	AllowParallel        bool

	Overrides map[string]Override
	// Definitions are tools defined only by configuration (CFG-TOOLS-02),
	// advertised in parse_only mode for results a person supplies.
	Definitions []abi.Manifest
}

// DefaultPolicy is the SRD's defaults: execute, prompt for side effects,
// read_file allowlisted, run_command denylisted (NFR-SEC-06).
func DefaultPolicy() Policy {
	return Policy{
		Mode:                 ModeEnabled,
		ApprovalEnabled:      true,
		Approval:             ApprovalPrompt,
		Allowlist:            []string{"read_file"},
		Denylist:             []string{"run_command"},
		PromptSideEffects:    true,
		AutoApproveNewFiles:  true,
		MaxCallsPerBatch:     8,
		MaxIterationsPerTurn: 4,
	}
}

func (p Policy) denied(tool string) bool {
	return slices.Contains(p.Denylist, tool) || p.Overrides[tool].Denied
}

func (p Policy) allowlisted(tool string) bool { return slices.Contains(p.Allowlist, tool) }

// gate is the outcome of the approval policy for a valid call.
type gate int

const (
	gateExecute gate = iota
	gatePrompt
	gateDeny
)

// decide applies FR-APR-04/05 steps 4 and 5 to a call that passed the
// denylist and the sandbox: the mode and allowlist, then the tool's own
// requires_approval, which always prompts (FR-APR-04e). onlyCreates
// reports that the call creates files and replaces none.
func (p Policy) decide(tool string, sideEffecting, requiresApproval, onlyCreates bool) (gate, string) {
	switch p.Approval {
	case ApprovalDeny:
		if !p.allowlisted(tool) {
			return gateDeny, "approval mode is deny and " + tool + " is not in tools.approval.allowlist"
		}
	case ApprovalPrompt:
		if sideEffecting && p.PromptSideEffects && !p.allowlisted(tool) && !(onlyCreates && p.AutoApproveNewFiles) {
			if requiresApproval {
				return gatePrompt, tool + " requires approval"
			}
			return gatePrompt, tool + " has side effects (tools.approval.prompt_side_effects)"
		}
	}
	if requiresApproval {
		return gatePrompt, tool + " requires approval"
	}
	return gateExecute, ""
}

// Advertised is what the engine offers a model (FR-MODE-01/02,
// CFG-TOOLS-02a): nothing when disabled; the registry's tools when
// enabled; in parse_only, those plus the configured definitions, which
// win over a registry tool of the same name. Denied tools are left out:
// a model offered a tool it can never use only wastes calls on it.
func (e *Engine) Advertised() []abi.Manifest {
	if e.policy.Mode == ModeDisabled {
		return nil
	}
	var out []abi.Manifest
	defined := make(map[string]bool)
	if e.policy.Mode == ModeParseOnly {
		for _, d := range e.policy.Definitions {
			defined[d.Name] = true
			out = append(out, d)
		}
	}
	for _, t := range e.cfg.Registry.Tools() {
		if !defined[t.Manifest.Name] && !e.policy.denied(t.Manifest.Name) {
			out = append(out, e.manifest(t))
		}
	}
	slices.SortFunc(out, func(a, b abi.Manifest) int { return strings.Compare(a.Name, b.Name) })
	return out
}

// Denylisted reports whether policy denies the tool outright.
func (e *Engine) Denylisted(tool string) bool { return e.policy.denied(tool) }
