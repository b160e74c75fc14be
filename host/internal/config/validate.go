package config

import (
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"unicode"

	"github.com/bmatcuk/doublestar/v4"
)

var toolName = regexp.MustCompile(`^[a-z][a-z0-9_]{0,63}$`)

// profileName keeps a profile's name usable as a URL path segment
// (/mcp/NAME) and a flag value.
var profileName = regexp.MustCompile(`^[a-z][a-z0-9_-]{0,63}$`)

// MinTokenLen is the shortest bearer token accepted: a guessable token
// would let any local process run tools.
const MinTokenLen = 16

// Validate checks enums, limits, globs and definitions. Errors are
// *KeyError naming the key.
func (c *Config) Validate() error {
	t := c.Tools
	checks := []struct {
		key string
		err error
	}{
		{"tools.mode", oneOf(string(t.Mode), ModeDisabled, ModeParseOnly, ModeEnabled)},
		{"tools.approval.mode", oneOf(string(t.Approval.Mode), ApprovalAuto, ApprovalPrompt, ApprovalDeny)},
		{"tools.max_tool_calls_per_batch", positive(t.MaxToolCallsPerBatch)},
		{"tools.max_tool_iterations_per_user_turn", positive(t.MaxToolIterationsPerUserTurn)},
		{"tools.max_tool_args_bytes", positive(t.MaxToolArgsBytes)},
		{"tools.timeouts.default_seconds", positive(t.Timeouts.DefaultSeconds)},
		{"tools.timeouts.file_operations_seconds", positive(t.Timeouts.FileOperationsSeconds)},
		{"tools.timeouts.shell_commands_seconds", positive(t.Timeouts.ShellCommandsSeconds)},
		{"tools.output.max_bytes", positive(t.Output.MaxBytes)},
		{"tools.output.available_capacity_bytes", positive(t.Output.AvailableCapacityBytes)},
		{"tools.read_file.max_file_read_bytes", positive(t.ReadFile.MaxFileReadBytes)},
		{"tools.read_file.max_scan_bytes", positive(t.ReadFile.MaxScanBytes)},
		{"tools.apply_patch.max_patch_bytes", positive(t.ApplyPatch.MaxPatchBytes)},
		{"tools.apply_patch.max_files", positive(t.ApplyPatch.MaxFiles)},
		{"tools.sandbox.max_path_bytes", positive(t.Sandbox.MaxPathBytes)},
		{"tools.sandbox.max_path_component_bytes", positive(t.Sandbox.MaxPathComponentBytes)},
		{"tools.sandbox.max_path_depth", positive(t.Sandbox.MaxPathDepth)},
		{"tools.approval.code_patterns", globs(t.Approval.CodePatterns)},
		{"tools.sandbox.allowed_roots", nonEmpty(t.Sandbox.AllowedRoots)},
		{"tools.sandbox.denied_patterns", globs(t.Sandbox.DeniedPatterns)},
		{"tools.sandbox.read_only_patterns", globs(t.Sandbox.ReadOnlyPatterns)},
		{"tools.environment.denylist", envGlobs(t.Environment.Denylist)},
		{"tools.environment.keep", t.Environment.validateKeep()},
	}
	for _, c := range checks {
		if c.err != nil {
			return &KeyError{Key: c.key, Err: c.err}
		}
	}
	if err := t.RunCommand.validate(); err != nil {
		return err
	}
	if err := t.Jobs.validate(); err != nil {
		return err
	}
	for name, o := range t.Overrides {
		if !toolName.MatchString(name) {
			return &KeyError{Key: "tools.overrides." + name, Err: fmt.Errorf("%q is not a tool name (lowercase letters, digits, underscores)", name)}
		}
		if o.TimeoutSeconds != nil && *o.TimeoutSeconds <= 0 {
			return &KeyError{Key: "tools.overrides." + name + ".timeout_seconds", Err: positive(*o.TimeoutSeconds)}
		}
	}
	if err := c.Server.validate(); err != nil {
		return err
	}
	if err := c.Journal.validate(); err != nil {
		return err
	}
	for name, p := range c.Profiles {
		if err := p.validate(name); err != nil {
			return err
		}
		if err := p.validateRunCommand(name, t.RunCommand); err != nil {
			return err
		}
	}
	if err := validateExtism(c.Extism); err != nil {
		return err
	}
	return validateDefinitions(t.Definitions)
}

func (j Journal) validate() error {
	if j.MaxPreimageBytes <= 0 {
		return &KeyError{Key: "journal.max_preimage_bytes", Err: positive(j.MaxPreimageBytes)}
	}
	if j.RetentionDays <= 0 {
		return &KeyError{Key: "journal.retention_days", Err: positive(j.RetentionDays)}
	}
	return nil
}

func (s Server) validate() error {
	if s.Token != "" && (len(s.Token) < MinTokenLen || strings.ContainsFunc(s.Token, unicode.IsSpace)) {
		return &KeyError{Key: "server.token", Err: fmt.Errorf("must be at least %d characters without spaces (the value is not shown)", MinTokenLen)}
	}
	if s.ApprovalHoldSeconds < 0 {
		return &KeyError{Key: "server.approval_hold_seconds", Err: fmt.Errorf("must be 0 (deny at once) or more, got %d", s.ApprovalHoldSeconds)}
	}
	if !slices.Contains(ApprovalsValues(), s.Approvals) {
		return &KeyError{Key: "server.approvals", Err: fmt.Errorf("%q is not one of %s", s.Approvals, strings.Join(ApprovalsValues(), ", "))}
	}
	return nil
}

func (p Profile) validate(name string) error {
	key := "profiles." + name
	if !profileName.MatchString(name) {
		return &KeyError{Key: key, Err: fmt.Errorf("%q is not a profile name (lowercase letters, digits, '-' and '_', starting with a letter; it becomes the path /mcp/%s)", name, name)}
	}
	if p.Tools == nil {
		return &KeyError{Key: key + ".tools", Err: errors.New("a profile lists the tools it offers (tools = [...]); an empty list offers none")}
	}
	for _, t := range p.Tools {
		if !toolName.MatchString(t) {
			return &KeyError{Key: key + ".tools", Err: fmt.Errorf("%q is not a tool name (lowercase letters, digits, underscores)", t)}
		}
	}
	if p.Mode != "" {
		if err := oneOf(string(p.Mode), ModeDisabled, ModeParseOnly, ModeEnabled); err != nil {
			return &KeyError{Key: key + ".mode", Err: err}
		}
	}
	if p.Approval != "" {
		if err := oneOf(string(p.Approval), ApprovalAuto, ApprovalPrompt, ApprovalDeny); err != nil {
			return &KeyError{Key: key + ".approval", Err: err}
		}
	}
	if p.Approvals != "" && p.Approvals != "console" {
		return &KeyError{Key: key + ".approvals", Err: fmt.Errorf("%q: a profile may only take approvals away from the MCP client, with \"console\" (or leave it out to keep server.approvals)", p.Approvals)}
	}
	if p.MaxToolCallsPerBatch < 0 {
		return &KeyError{Key: key + ".max_tool_calls_per_batch", Err: fmt.Errorf("must be 0 (keep tools.max_tool_calls_per_batch) or more, got %d", p.MaxToolCallsPerBatch)}
	}
	return nil
}

func oneOf[T ~string](v string, allowed ...T) error {
	for _, a := range allowed {
		if v == string(a) {
			return nil
		}
	}
	return fmt.Errorf("%q is not one of %v", v, allowed)
}

func positive(n int) error {
	if n <= 0 {
		return fmt.Errorf("must be a positive number, got %d", n)
	}
	return nil
}

func nonEmpty(list []string) error {
	if len(list) == 0 {
		return errors.New("needs at least one directory")
	}
	return nil
}

func globs(patterns []string) error {
	for _, p := range patterns {
		if p == "" || !doublestar.ValidatePattern(p) {
			return fmt.Errorf("%q is not a valid glob (doublestar syntax: *, **, ?, [...], {a,b})", p)
		}
	}
	return nil
}

func validateDefinitions(defs []Definition) error {
	seen := map[string]bool{}
	for i, d := range defs {
		key := fmt.Sprintf("tools.definitions[%d]", i)
		switch {
		case !toolName.MatchString(d.Name):
			return &KeyError{Key: key + ".name", Err: fmt.Errorf("%q is not a tool name (lowercase letters, digits, underscores; at most 64)", d.Name)}
		case seen[d.Name]:
			return &KeyError{Key: key + ".name", Err: fmt.Errorf("%q is defined twice", d.Name)}
		case d.Parameters["type"] != "object":
			return &KeyError{Key: key + ".parameters", Err: errors.New(`must be a JSON Schema object with type = "object"`)}
		}
		seen[d.Name] = true
	}
	return nil
}
