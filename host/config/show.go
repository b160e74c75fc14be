package config

import (
	"fmt"
	"sort"
	"strconv"
	"strings"
)

// Show lists every effective key, sorted, with its value and where the
// value came from, one per line: key = value  # source.
func (l *Loaded) Show() string {
	values := flatten(l.Config)
	for name, o := range l.Config.Tools.Overrides {
		prefix := "tools.overrides." + name + "."
		if o.TimeoutSeconds != nil {
			values[prefix+"timeout_seconds"] = *o.TimeoutSeconds
		}
		if o.RequiresApproval != nil {
			values[prefix+"requires_approval"] = *o.RequiresApproval
		}
		if o.Denied != nil {
			values[prefix+"denied"] = *o.Denied
		}
	}
	keys := make([]string, 0, len(values))
	for k := range values {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var b strings.Builder
	for _, k := range keys {
		fmt.Fprintf(&b, "%s = %s  # %s\n", k, tomlValue(values[k]), l.source(k))
	}
	for i, d := range l.Config.Tools.Definitions {
		fmt.Fprintf(&b, "tools.definitions[%d] = %s  # %s\n", i, strconv.Quote(d.Name), l.source("tools.definitions"))
	}
	return b.String()
}

func (l *Loaded) source(key string) string {
	if s, ok := l.Sources[key]; ok {
		return s
	}
	return "default"
}

func tomlValue(v any) string {
	switch v := v.(type) {
	case string:
		return strconv.Quote(v)
	case Mode:
		return strconv.Quote(string(v))
	case ApprovalMode:
		return strconv.Quote(string(v))
	case []string:
		q := make([]string, len(v))
		for i, s := range v {
			q[i] = strconv.Quote(s)
		}
		return "[" + strings.Join(q, ", ") + "]"
	}
	return fmt.Sprint(v)
}

// InitFile is a complete toolhost.toml holding the defaults, each key
// explained; `toolhost config init` writes it.
func InitFile() string { return initFile }

const initFile = `# toolhost configuration. Every key is shown with its default value.
# Each key can also be set by an environment variable: TOOLHOST_ and the key
# upper-cased with dots as underscores, e.g. TOOLHOST_TOOLS_APPROVAL_MODE=auto;
# lists are comma-separated. The environment wins over this file.

[tools]
# disabled: offer no tools and refuse every call; parse_only: offer tools and
# record calls for a person to answer; enabled: validate, gate and run them.
# (CFG-TOOLS-01)
mode = "enabled"
# Let consecutive read-only calls of a batch run at the same time.
allow_parallel = false
# Calls beyond this many in one model response are refused (FR-LIM-01).
max_tool_calls_per_batch = 8
# Tool batches allowed in one user turn before the model must answer (FR-LIM-02).
max_tool_iterations_per_user_turn = 4
# Largest arguments of one call, as JSON (FR-LIM-03).
max_tool_args_bytes = 262144

[tools.sandbox]
# Directories tools may touch; the first is the working directory. Relative
# roots are relative to this file. (CFG-SBX-01)
allowed_roots = ["."]
# Globs of paths no tool may read or write, added to the built-in ones.
denied_patterns = []
# Accept absolute paths (they must still be inside a root).
allow_absolute = false
# Deny **/.ssh/**, **/.gnupg/**, **/id_rsa*, **/*.pem, **/*.key and system credentials.
include_default_denies = true
# Globs of paths tools may read but never write.
read_only_patterns = [".git/**"]

[tools.timeouts]
# Per-call timeouts by tool class; a tool's manifest or an override may set its own. (CFG-TMO-01)
default_seconds = 30
file_operations_seconds = 30
shell_commands_seconds = 300

[tools.output]
# Largest result text; longer output is cut with a marker. (CFG-OUT-01)
max_bytes = 102400
# Room assumed left in the model's context when the caller gives no estimate (FR-REG-04b).
available_capacity_bytes = 65536

[tools.environment]
# Globs of environment variable names hidden from commands, added to the
# defaults (*_KEY, *_TOKEN, *_SECRET, *_PASSWORD, AWS_*, ANTHROPIC_*, OPENAI_*). (CFG-ENV-01)
denylist = []

[tools.approval]
# false: refuse every call ("Tool execution disabled by policy"). (CFG-APR-01)
enabled = true
# auto: run unless denied; prompt: ask for side effects not allowlisted;
# deny: refuse what is not allowlisted. A tool that requires approval is always asked about.
mode = "prompt"
# Tools that run without a prompt (unless the tool itself requires approval).
allowlist = ["read_file"]
# Tools that never run.
denylist = ["run_command"]
# Ask before any side-effecting call not in the allowlist.
prompt_side_effects = true
# A call that only creates new files (write_file to a path that does not exist)
# runs without a prompt; overwriting still asks.
auto_approve_new_files = true

[tools.read_file]
# Largest read_file result before line ranges are required. (CFG-READ-01)
max_file_read_bytes = 204800
# Most bytes scanned for a line range; also the largest file apply_patch edits.
max_scan_bytes = 2097152

[tools.apply_patch]
# Largest LP1 patch. (CFG-PATCH-01)
max_patch_bytes = 524288

# Per-tool overrides, for any tool name:
# [tools.overrides.run_command]
# timeout_seconds = 600
# requires_approval = true
# denied = false

# Tools defined here are offered in parse_only mode, for a person to answer (CFG-TOOLS-02):
# [[tools.definitions]]
# name = "lookup_ticket"
# description = "Look up a ticket by id"
# parameters = { type = "object", properties = { id = { type = "string" } }, required = ["id"] }
`
