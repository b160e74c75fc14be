package config

import (
	"fmt"
	"maps"
	"path/filepath"
	"reflect"
	"slices"
	"strconv"
	"strings"
)

// NarrowedBy is c made stricter by p, a trusted project's configuration,
// and the parts of p that were ignored because they would have widened c.
// p is expected to hold c's values for every key the
// project file does not set, so that those keys leave c unchanged. c is
// not modified.
//
// Stricter wins on every key: the lower tools mode, the higher approval
// mode, AND of permissions, OR of protections, the intersection of what is
// allowed, the union of what is denied, the minimum of every limit, and
// only the roots that lie inside one of c's. Tool definitions offer tools,
// so a project's are ignored.
func (c *Config) NarrowedBy(p *Config) (*Config, []string) {
	out := c.clone()
	var ignored []string
	for _, r := range narrowRules {
		if why := r.narrow(out, p); why != "" {
			ignored = append(ignored, r.key+": "+why)
		}
	}
	ignored = append(ignored, narrowOverrides(&out.Tools, p.Tools.Overrides)...)
	if !reflect.DeepEqual(p.Tools.Definitions, c.Tools.Definitions) {
		ignored = append(ignored, "tools.definitions: a project file cannot define tools; only the operator's configuration can")
	}
	if !reflect.DeepEqual(p.Extism, c.Extism) {
		ignored = append(ignored, "extism: a project file cannot grant Extism plugins hosts, config values or memory; only the operator's configuration can")
	}
	if !reflect.DeepEqual(p.Profiles, c.Profiles) {
		ignored = append(ignored, "profiles: a project file cannot define or change profiles; only the operator's configuration can")
	}
	return out, ignored
}

// narrowRules hold one rule per scalar key; TestNarrowRulesCoverEveryKey
// fails when a key is added without one.
var narrowRules = append([]struct {
	key    string
	narrow func(c, p *Config) string
}{
	{"tools.mode", func(c, p *Config) string {
		return stricter(&c.Tools.Mode, p.Tools.Mode, ModeEnabled, ModeParseOnly, ModeDisabled)
	}},
	{"tools.allow_parallel", func(c, p *Config) string { return and(&c.Tools.AllowParallel, p.Tools.AllowParallel) }},
	{"tools.max_tool_calls_per_batch", func(c, p *Config) string { return lowest(&c.Tools.MaxToolCallsPerBatch, p.Tools.MaxToolCallsPerBatch) }},
	{"tools.max_tool_iterations_per_user_turn", func(c, p *Config) string {
		return lowest(&c.Tools.MaxToolIterationsPerUserTurn, p.Tools.MaxToolIterationsPerUserTurn)
	}},
	{"tools.max_tool_args_bytes", func(c, p *Config) string { return lowest(&c.Tools.MaxToolArgsBytes, p.Tools.MaxToolArgsBytes) }},
	{"tools.sandbox.allowed_roots", func(c, p *Config) string {
		return insideRoots(&c.Tools.Sandbox.AllowedRoots, p.Tools.Sandbox.AllowedRoots)
	}},
	{"tools.sandbox.denied_patterns", func(c, p *Config) string {
		return union(&c.Tools.Sandbox.DeniedPatterns, p.Tools.Sandbox.DeniedPatterns)
	}},
	{"tools.sandbox.allow_absolute", func(c, p *Config) string { return and(&c.Tools.Sandbox.AllowAbsolute, p.Tools.Sandbox.AllowAbsolute) }},
	{"tools.sandbox.include_default_denies", func(c, p *Config) string {
		return or(&c.Tools.Sandbox.IncludeDefaultDenies, p.Tools.Sandbox.IncludeDefaultDenies)
	}},
	{"tools.sandbox.read_only_patterns", func(c, p *Config) string {
		return union(&c.Tools.Sandbox.ReadOnlyPatterns, p.Tools.Sandbox.ReadOnlyPatterns)
	}},
	{"tools.sandbox.max_path_bytes", func(c, p *Config) string { return lowest(&c.Tools.Sandbox.MaxPathBytes, p.Tools.Sandbox.MaxPathBytes) }},
	{"tools.sandbox.max_path_component_bytes", func(c, p *Config) string {
		return lowest(&c.Tools.Sandbox.MaxPathComponentBytes, p.Tools.Sandbox.MaxPathComponentBytes)
	}},
	{"tools.sandbox.max_path_depth", func(c, p *Config) string { return lowest(&c.Tools.Sandbox.MaxPathDepth, p.Tools.Sandbox.MaxPathDepth) }},
	{"tools.timeouts.default_seconds", func(c, p *Config) string {
		return lowest(&c.Tools.Timeouts.DefaultSeconds, p.Tools.Timeouts.DefaultSeconds)
	}},
	{"tools.timeouts.file_operations_seconds", func(c, p *Config) string {
		return lowest(&c.Tools.Timeouts.FileOperationsSeconds, p.Tools.Timeouts.FileOperationsSeconds)
	}},
	{"tools.timeouts.shell_commands_seconds", func(c, p *Config) string {
		return lowest(&c.Tools.Timeouts.ShellCommandsSeconds, p.Tools.Timeouts.ShellCommandsSeconds)
	}},
	{"tools.output.max_bytes", func(c, p *Config) string { return lowest(&c.Tools.Output.MaxBytes, p.Tools.Output.MaxBytes) }},
	{"tools.output.available_capacity_bytes", func(c, p *Config) string {
		return lowest(&c.Tools.Output.AvailableCapacityBytes, p.Tools.Output.AvailableCapacityBytes)
	}},
	{"tools.environment.denylist", func(c, p *Config) string { return union(&c.Tools.Environment.Denylist, p.Tools.Environment.Denylist) }},
	{"tools.environment.keep", func(c, p *Config) string { return intersect(&c.Tools.Environment.Keep, p.Tools.Environment.Keep) }},
	{"tools.approval.enabled", func(c, p *Config) string { return and(&c.Tools.Approval.Enabled, p.Tools.Approval.Enabled) }},
	{"tools.approval.mode", func(c, p *Config) string {
		return stricter(&c.Tools.Approval.Mode, p.Tools.Approval.Mode, ApprovalAuto, ApprovalPrompt, ApprovalDeny)
	}},
	{"tools.approval.allowlist", func(c, p *Config) string { return intersect(&c.Tools.Approval.Allowlist, p.Tools.Approval.Allowlist) }},
	{"tools.approval.denylist", func(c, p *Config) string { return union(&c.Tools.Approval.Denylist, p.Tools.Approval.Denylist) }},
	{"tools.approval.prompt_side_effects", func(c, p *Config) string {
		return or(&c.Tools.Approval.PromptSideEffects, p.Tools.Approval.PromptSideEffects)
	}},
	{"tools.approval.auto_approve_new_files", func(c, p *Config) string {
		return and(&c.Tools.Approval.AutoApproveNewFiles, p.Tools.Approval.AutoApproveNewFiles)
	}},
	{"tools.approval.code_patterns", func(c, p *Config) string { return union(&c.Tools.Approval.CodePatterns, p.Tools.Approval.CodePatterns) }},
	{"tools.read_file.max_file_read_bytes", func(c, p *Config) string {
		return lowest(&c.Tools.ReadFile.MaxFileReadBytes, p.Tools.ReadFile.MaxFileReadBytes)
	}},
	{"tools.read_file.max_scan_bytes", func(c, p *Config) string {
		return lowest(&c.Tools.ReadFile.MaxScanBytes, p.Tools.ReadFile.MaxScanBytes)
	}},
	{"tools.apply_patch.max_patch_bytes", func(c, p *Config) string {
		return lowest(&c.Tools.ApplyPatch.MaxPatchBytes, p.Tools.ApplyPatch.MaxPatchBytes)
	}},
	{"tools.apply_patch.max_files", func(c, p *Config) string { return lowest(&c.Tools.ApplyPatch.MaxFiles, p.Tools.ApplyPatch.MaxFiles) }},
	// A project narrows how commands are confined, never widens
	// it; what it cannot set names who can.
	{"tools.run_command.sandbox", func(c, p *Config) string {
		return operatorOnly("tools.run_command.sandbox",
			stricter(&c.Tools.RunCommand.Sandbox, p.Tools.RunCommand.Sandbox, SandboxOff, SandboxWorkspaceWrite, SandboxReadOnly))
	}},
	{"tools.run_command.network", narrowNetwork},
	{"tools.run_command.allowed_domains", func(c, p *Config) string {
		return operatorOnly("tools.run_command.allowed_domains", intersect(&c.Tools.RunCommand.AllowedDomains, p.Tools.RunCommand.AllowedDomains))
	}},
	{"tools.run_command.denied_domains", func(c, p *Config) string {
		return operatorOnly("tools.run_command.denied_domains", union(&c.Tools.RunCommand.DeniedDomains, p.Tools.RunCommand.DeniedDomains))
	}},
	{"tools.run_command.extra_writable", func(c, p *Config) string {
		return operatorOnly("tools.run_command.extra_writable", intersect(&c.Tools.RunCommand.ExtraWritable, p.Tools.RunCommand.ExtraWritable))
	}},
	{"tools.run_command.share_caches", func(c, p *Config) string {
		return operatorOnly("tools.run_command.share_caches", and(&c.Tools.RunCommand.ShareCaches, p.Tools.RunCommand.ShareCaches))
	}},
	{"tools.run_command.memory_max", func(c, p *Config) string {
		return operatorOnly("tools.run_command.memory_max", lowerLimit(&c.Tools.RunCommand.MemoryMax, p.Tools.RunCommand.MemoryMax, true, formatSize))
	}},
	{"tools.run_command.pids_max", func(c, p *Config) string {
		return operatorOnly("tools.run_command.pids_max", lowerLimit(&c.Tools.RunCommand.PidsMax, p.Tools.RunCommand.PidsMax, true, strconv.Itoa))
	}},
	{"tools.run_command.cpu_seconds", func(c, p *Config) string {
		return operatorOnly("tools.run_command.cpu_seconds", lowerLimit(&c.Tools.RunCommand.CPUSeconds, p.Tools.RunCommand.CPUSeconds, true, strconv.Itoa))
	}},
	{"tools.run_command.max_file_size", func(c, p *Config) string {
		return operatorOnly("tools.run_command.max_file_size", lowerLimit(&c.Tools.RunCommand.MaxFileSize, p.Tools.RunCommand.MaxFileSize, false, formatSize))
	}},
	{"tools.run_command.open_files", func(c, p *Config) string {
		return operatorOnly("tools.run_command.open_files", lowerLimit(&c.Tools.RunCommand.OpenFiles, p.Tools.RunCommand.OpenFiles, false, strconv.Itoa))
	}},
	{"tools.run_command.max_timeout_ms", func(c, p *Config) string {
		return lowest(&c.Tools.RunCommand.MaxTimeoutMS, p.Tools.RunCommand.MaxTimeoutMS)
	}},
	// The variables are set for every command, unseen by approval: a
	// project could set what loads code (LD_PRELOAD), so only the
	// operator's configuration sets them.
	{"tools.run_command.noninteractive_env", func(c, p *Config) string {
		if !slices.Equal(p.Tools.RunCommand.NonInteractiveEnv, c.Tools.RunCommand.NonInteractiveEnv) {
			return "a project file cannot set the variables every command gets; only the operator's configuration can"
		}
		return ""
	}},
	{"server.token", func(c, p *Config) string {
		if p.Server.Token != c.Server.Token {
			return "a project file cannot set the server's bearer token; only the operator's configuration or $TOOLHOST_TOKEN can"
		}
		return ""
	}},
	{"server.approval_hold_seconds", func(c, p *Config) string {
		return lowest(&c.Server.ApprovalHoldSeconds, p.Server.ApprovalHoldSeconds)
	}},
	// A project may take approvals away from the MCP client, never give
	// them back to it.
	{"server.approvals", func(c, p *Config) string {
		return stricter(&c.Server.Approvals, p.Server.Approvals, ApprovalsValues()...)
	}},
	// A project cannot move the journal (out of the
	// operator's sight, or into the sandbox); it can keep less.
	{"journal.path", func(c, p *Config) string {
		if p.Journal.Path != c.Journal.Path {
			return "a project file cannot move the journal; only the operator's configuration can"
		}
		return ""
	}},
	{"journal.max_preimage_bytes", func(c, p *Config) string {
		return lowest(&c.Journal.MaxPreimageBytes, p.Journal.MaxPreimageBytes)
	}},
	{"journal.retention_days", func(c, p *Config) string { return lowest(&c.Journal.RetentionDays, p.Journal.RetentionDays) }},
}, jobsNarrowRules()...)

// stricter sets *c to p when p comes later in order (least strict
// first).
func stricter[T ~string](c *T, p T, order ...T) string {
	if slices.Index(order, p) < slices.Index(order, *c) {
		return fmt.Sprintf("%q is less strict than the operator's %q", p, *c)
	}
	*c = p
	return ""
}

func lowest(c *int, p int) string {
	if p > *c {
		return fmt.Sprintf("%d is above the operator's %d", p, *c)
	}
	*c = p
	return ""
}

// narrowNetwork narrows tools.run_command.network, after the sandbox's
// rule: while commands run unconfined (sandbox "off", which a project
// cannot set) they have the host's network whatever this key says, so a
// narrower network is kept only together with a confining sandbox.
func narrowNetwork(c, p *Config) string {
	const key = "tools.run_command.network"
	rc := &c.Tools.RunCommand
	if rc.Sandbox == SandboxOff && p.Tools.RunCommand.Network != rc.Network {
		return fmt.Sprintf(`%q cannot hold while the operator's sandbox is "off" (commands run unconfined, with the host's network); set sandbox = "workspace-write" or "read-only" in the same file`, p.Tools.RunCommand.Network)
	}
	return operatorOnly(key, stricter(&rc.Network, p.Tools.RunCommand.Network, NetworkOn, NetworkAllowlist, NetworkOff))
}

// operatorOnly completes why a project's run_command setting was ignored
// with who can set it.
func operatorOnly(key, why string) string {
	if why == "" {
		return ""
	}
	return why + "; only the operator's configuration (--config, $TOOLHOST_CONFIG or the user configuration directory) or " + EnvVar(key) + " can set it"
}

// lowerLimit sets *c to p when p is the lower limit. With none true, 0
// means no limit: the highest of all.
func lowerLimit[T int | uint64](c *T, p T, none bool, show func(T) string) string {
	switch {
	case p == *c:
		return ""
	case none && p == 0:
		return fmt.Sprintf("0 (no limit) would lift the operator's %s", show(*c))
	case p > *c && !(none && *c == 0):
		return fmt.Sprintf("%s is above the operator's %s", show(p), show(*c))
	}
	*c = p
	return ""
}

// and keeps a permission only if both allow it.
func and(c *bool, p bool) string {
	if p && !*c {
		return "true would grant what the operator's false refuses"
	}
	*c = *c && p
	return ""
}

// or keeps a protection if either asks for it.
func or(c *bool, p bool) string {
	if !p && *c {
		return "false would drop the operator's protection"
	}
	*c = *c || p
	return ""
}

// union adds p's entries to *c; entries of *c missing from p stay.
func union(c *[]string, p []string) string {
	var dropped []string
	for _, s := range *c {
		if !slices.Contains(p, s) {
			dropped = append(dropped, s)
		}
	}
	for _, s := range p {
		if !slices.Contains(*c, s) {
			*c = append(*c, s)
		}
	}
	if len(dropped) > 0 {
		return fmt.Sprintf("leaving out %s would widen the operator's list; kept", quoteAll(dropped))
	}
	return ""
}

// intersect keeps the entries of *c that p also lists.
func intersect(c *[]string, p []string) string {
	var added []string
	for _, s := range p {
		if !slices.Contains(*c, s) {
			added = append(added, s)
		}
	}
	*c = slices.DeleteFunc(*c, func(s string) bool { return !slices.Contains(p, s) })
	if len(added) > 0 {
		return fmt.Sprintf("adding %s would widen the operator's list; ignored", quoteAll(added))
	}
	return ""
}

// insideRoots keeps p's roots that lie inside one of *c's, both with
// symbolic links resolved, so that a root of the project's cannot reach
// outside the operator's through a link. When none remains, *c stays.
func insideRoots(c *[]string, p []string) string {
	if slices.Equal(*c, p) {
		return ""
	}
	var kept, outside []string
	for _, r := range p {
		canon := resolved(r)
		if slices.ContainsFunc(*c, func(o string) bool { return within(resolved(o), canon) }) {
			kept = append(kept, canon)
		} else {
			outside = append(outside, r)
		}
	}
	switch {
	case len(outside) == 0:
		*c = kept
		return ""
	case len(kept) == 0:
		return fmt.Sprintf("%s lie outside the operator's roots; kept the operator's", quoteAll(outside))
	}
	*c = kept
	return fmt.Sprintf("%s lie outside the operator's roots; left out", quoteAll(outside))
}

// resolved is path with its symbolic links resolved when it exists, else
// path cleaned.
func resolved(path string) string {
	if r, err := filepath.EvalSymlinks(path); err == nil {
		return r
	}
	return filepath.Clean(path)
}

// within reports whether path is dir or below it.
func within(dir, path string) bool {
	rel, err := filepath.Rel(dir, path)
	return err == nil && rel != ".." && !strings.HasPrefix(rel, ".."+string(filepath.Separator)) && !filepath.IsAbs(rel)
}

// narrowOverrides applies p's per-tool overrides: requires_approval and
// denied only as true, timeouts only shorter. A timeout for a tool the
// operator gave none is kept only if no longer than every class timeout,
// since the tool's own is not known here.
func narrowOverrides(c *Tools, p map[string]Override) []string {
	var ignored []string
	bound := min(c.Timeouts.DefaultSeconds, c.Timeouts.FileOperationsSeconds, c.Timeouts.ShellCommandsSeconds)
	for _, tool := range slices.Sorted(maps.Keys(p)) {
		po, co := p[tool], c.Overrides[tool]
		key := "tools.overrides." + tool + "."
		if why := onlyTrue(&co.RequiresApproval, po.RequiresApproval); why != "" {
			ignored = append(ignored, key+"requires_approval: "+why)
		}
		if why := onlyTrue(&co.Denied, po.Denied); why != "" {
			ignored = append(ignored, key+"denied: "+why)
		}
		if po.TimeoutSeconds != nil {
			limit := bound
			if co.TimeoutSeconds != nil {
				limit = *co.TimeoutSeconds
			}
			if *po.TimeoutSeconds > limit {
				ignored = append(ignored, fmt.Sprintf("%stimeout_seconds: %d is above the operator's %d", key, *po.TimeoutSeconds, limit))
			} else {
				co.TimeoutSeconds = new(*po.TimeoutSeconds)
			}
		}
		if co != (Override{}) {
			c.Overrides[tool] = co
		}
	}
	return ignored
}

// onlyTrue sets *c to true when p is; p false is ignored unless *c is
// already false, since it could lift what the tool's manifest asks for.
func onlyTrue(c **bool, p *bool) string {
	switch {
	case p == nil || *c != nil && **c == *p:
		return ""
	case *p:
		*c = new(true)
		return ""
	}
	return "false could lift what the operator or the tool itself requires"
}

func quoteAll(list []string) string {
	q := make([]string, len(list))
	for i, s := range list {
		q[i] = fmt.Sprintf("%q", s)
	}
	return strings.Join(q, ", ")
}

// clone is a deep copy of c, so that narrowing it leaves c as it was.
func (c *Config) clone() *Config {
	out := *c
	t := &out.Tools
	walk(reflect.ValueOf(&out).Elem(), "", func(_ string, v reflect.Value) {
		if list, ok := v.Interface().([]string); ok {
			v.Set(reflect.ValueOf(slices.Clone(list)))
		}
	})
	t.Overrides = maps.Clone(c.Tools.Overrides)
	if t.Overrides == nil {
		t.Overrides = map[string]Override{}
	}
	t.Definitions = slices.Clone(c.Tools.Definitions)
	out.Extism = cloneExtism(c.Extism)
	out.Profiles = make(map[string]Profile, len(c.Profiles))
	for name, p := range c.Profiles {
		p.Tools = slices.Clone(p.Tools)
		out.Profiles[name] = p
	}
	return &out
}
