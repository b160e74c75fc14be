package config

import (
	"fmt"
	"reflect"
	"sort"
	"strconv"
	"strings"
)

// Show lists every effective key, sorted, with its value and where the
// value came from, one per line: key = value  # source.
func (l *Loaded) Show() string {
	values := showValues(l.Config)
	showExtism(values, l.Config.Extism)
	keys := make([]string, 0, len(values))
	for k := range values {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var b strings.Builder
	for _, k := range keys {
		v := tomlValue(values[k])
		if k == "server.token" && values[k] != "" {
			v = `"…"  # set, not shown`
		}
		fmt.Fprintf(&b, "%s = %s  # %s\n", k, v, l.source(k))
	}
	for i, d := range l.Config.Tools.Definitions {
		fmt.Fprintf(&b, "tools.definitions[%d] = %s  # %s\n", i, strconv.Quote(d.Name), l.source("tools.definitions"))
	}
	b.WriteString(l.hidden())
	return b.String()
}

// showValues maps every key of c that is set, overrides included, to its
// value.
func showValues(c *Config) map[string]any {
	values := flatten(c)
	for name, o := range c.Tools.Overrides {
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
	for name, p := range c.Profiles {
		prefix := "profiles." + name + "."
		values[prefix+"description"] = p.Description
		values[prefix+"tools"] = p.Tools
		values[prefix+"mode"] = p.Mode
		values[prefix+"approval"] = p.Approval
		values[prefix+"confirm_all"] = p.ConfirmAll
		values[prefix+"sequential"] = p.Sequential
		values[prefix+"max_tool_calls_per_batch"] = p.MaxToolCallsPerBatch
		values[prefix+"sandbox"] = p.Sandbox
		values[prefix+"network"] = p.Network
	}
	return values
}

// Report lists, as comments, the configuration files found, read or
// ignored and why, and the settings of a trusted project file that were
// ignored because they would have widened the policy.
func (l *Loaded) Report() string {
	var b strings.Builder
	read := false
	for _, f := range l.Files {
		switch {
		case f.Read && f.Role == RoleProject:
			fmt.Fprintf(&b, "# read: %s (project file in a trusted directory: it may only narrow the policy)\n", f.Path)
		case f.Read:
			fmt.Fprintf(&b, "# read: %s (%s)\n", f.Path, f.Role)
		default:
			fmt.Fprintf(&b, "# ignored: %s (%s)\n", f.Path, f.Why)
		}
		read = read || f.Read
	}
	if !read {
		b.WriteString("# no configuration file read: defaults and environment only\n")
	}
	for _, s := range l.Ignored {
		fmt.Fprintf(&b, "# ignored setting: %s\n", s)
	}
	return b.String()
}

// hidden lists, as comments, the variables of the environment Load was
// given that commands do not see, and the rule that hides each; never a
// value.
func (l *Loaded) hidden() string {
	_, removed := l.Config.Tools.Environment.Sanitize(l.environ)
	if len(removed) == 0 {
		return "# environment: no variable is hidden from commands\n"
	}
	var b strings.Builder
	b.WriteString("# environment variables hidden from commands, or whose values lose their credentials (tools.environment), by the rule that applies:\n")
	for _, r := range removed {
		fmt.Fprintf(&b, "#   %s: %s\n", r.Name, r.Rule)
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
	case uint64:
		// Sizes are the only unsigned keys: "2GiB" reads better than
		// 2147483648, and loads back to the same value.
		if s := formatSize(v); s != strconv.FormatUint(v, 10) {
			return strconv.Quote(s)
		}
		return strconv.FormatUint(v, 10)
	case []string:
		q := make([]string, len(v))
		for i, s := range v {
			q[i] = strconv.Quote(s)
		}
		return "[" + strings.Join(q, ", ") + "]"
	}
	if rv := reflect.ValueOf(v); rv.Kind() == reflect.String {
		return strconv.Quote(rv.String()) // string and the enums (Mode, CommandSandbox, ...)
	}
	return fmt.Sprint(v)
}

// InitFile is a complete toolhost.toml holding the defaults, each key
// explained; `toolhost config init` writes it.
func InitFile() string { return initFile }

const initFile = `# toolhost configuration: every key with its default value, and the SRD
# requirement it carries out. Each key can also be set by an environment
# variable: TOOLHOST_ and the key upper-cased with dots as underscores, e.g.
# TOOLHOST_TOOLS_APPROVAL_MODE=auto; lists are comma-separated. The
# environment wins over this file. "toolhost config show" prints every
# effective value and where it came from.
#
# toolhost reads this file from --config, else $TOOLHOST_CONFIG, else the
# user configuration directory ($XDG_CONFIG_HOME/toolhost/toolhost.toml).
# A toolhost.toml in the working directory is a project file: it is ignored
# unless the directory was trusted with "toolhost trust DIR", and even then
# it may only make this policy stricter.

[tools]
# disabled: offer no tools and refuse every call; parse_only: offer tools and
# record calls for a person to answer; enabled: validate, gate and run them.
# (CFG-TOOLS-01, FR-MODE-01)
mode = "enabled"
# Let consecutive read-only calls of one batch run at the same time instead
# of one after another. (CFG-TOOLS-01, FR-EXE-01)
allow_parallel = false
# Calls beyond this many in one model response are refused. (CFG-TOOLS-01, FR-LIM-01)
max_tool_calls_per_batch = 8
# Tool batches allowed in one user turn before the model must answer.
# (CFG-TOOLS-01, FR-LIM-02)
max_tool_iterations_per_user_turn = 4
# Largest arguments of one call, measured as JSON. (CFG-TOOLS-01, FR-LIM-03)
max_tool_args_bytes = 262144

[tools.sandbox]
# Directories tools may touch; the first is the working directory. Relative
# roots are relative to this file's directory, or to the working directory
# when this file is in the user configuration directory. (CFG-SBX-01, FR-VAL-04)
allowed_roots = ["."]
# Globs of paths no tool may read or write, added to the built-in ones.
# (CFG-SBX-01, FR-VAL-05)
denied_patterns = []
# Accept absolute paths in arguments; they must still be inside a root.
# (CFG-SBX-01, FR-VAL-04)
allow_absolute = false
# Also deny the built-in patterns: **/.ssh/**, **/.gnupg/**, **/id_rsa*,
# **/*.pem, **/*.key and system credentials. (CFG-SBX-01, FR-VAL-05)
include_default_denies = true
# Globs of paths tools may read but never write: by default the internals
# of every git repository at any depth (a nested repository's config or
# hooks run code on the next git command there) and the .git file of a
# worktree or submodule. (CFG-SBX-01)
read_only_patterns = ["**/.git/**", "**/.git"]
# Longest path a tool may name, in bytes, once made absolute. (CFG-SBX-01)
max_path_bytes = 4096
# Longest name of one file or directory in such a path, in bytes. (CFG-SBX-01)
max_path_component_bytes = 255
# Most directories deep below its root a path may lie. (CFG-SBX-01)
max_path_depth = 64

[tools.timeouts]
# Per-call timeout of a tool of no other class; a tool's manifest or an
# override may set its own. (CFG-TMO-01, FR-EXE-03)
default_seconds = 30
# Per-call timeout of file tools (read_file, write_file, apply_patch, ...).
# (CFG-TMO-01, FR-EXE-03)
file_operations_seconds = 30
# Per-call timeout of run_command and other shell tools. (CFG-TMO-01, FR-EXE-03)
shell_commands_seconds = 300

[tools.output]
# Largest result text given to the model; longer output is cut with a
# marker. (CFG-OUT-01, FR-OUT-04)
max_bytes = 102400
# Room assumed left in the model's context when the caller gives no
# estimate. (CFG-OUT-01, FR-REG-04b)
available_capacity_bytes = 65536

[tools.environment]
# Globs of environment variable names hidden from commands, added to the
# defaults (*_KEY, *_TOKEN, *_SECRET, *_PASSWORD, AWS_*, ANTHROPIC_*, OPENAI_*),
# matched without regard to case. Besides these, commands never see a
# variable whose name looks like a secret's (KEY, TOKEN, SECRET, PASSWORD,
# PASSWD, CREDENTIAL or AUTH anywhere in it; PAT, PASS or PW as a word) or
# whose value opens with user:password@; credentials in URLs
# (scheme://user:password@, scheme://token@, any user of a *_PROXY) are
# removed from the value, the rest kept. "toolhost config show" lists what
# is hidden or stripped, and why.
# (CFG-ENV-01, FR-EXE-06)
denylist = []
# Exact names of variables commands need that the secret-name and
# credential rules would hide, e.g. ["SSH_AUTH_SOCK"]. The denylist always
# wins over this list. (CFG-ENV-01)
keep = []

[tools.approval]
# false: refuse every call ("Tool execution disabled by policy").
# (CFG-APR-01, FR-APR-04a)
enabled = true
# auto: run unless denied; prompt: ask for side effects not allowlisted;
# deny: refuse what is not allowlisted. A tool that requires approval is
# always asked about. (CFG-APR-01, FR-APR-04)
mode = "prompt"
# Tools that run without a prompt, unless the tool itself requires approval.
# (CFG-APR-01, FR-APR-04c)
allowlist = ["read_file"]
# Tools that never run, whatever the mode. (CFG-APR-01, FR-APR-04b)
denylist = ["run_command"]
# In prompt mode, ask before any side-effecting call not in the allowlist.
# (CFG-APR-01, FR-APR-04d)
prompt_side_effects = true
# A write_file or apply_patch call that only creates new files runs without
# a prompt when the tool is otherwise allowed; overwriting still asks.
# (CFG-APR-01)
auto_approve_new_files = true
# Paths that make tools run code when written (direnv, editor and agent
# settings, shell start-up files, CI workflows, hook managers): a call that
# writes one is asked about even when it only creates new files. (CFG-APR-01)
code_patterns = ["**/.envrc", "**/.vscode/**", "**/*.code-workspace", "**/.idea/**", "**/.mcp.json", "**/.claude/**", "**/.cursor/**", "**/.devcontainer/**", "**/.devcontainer.json", "**/.github/workflows/**", "**/.gitlab-ci.yml", "**/.gitmodules", "**/.husky/**", "**/.pre-commit-config.yaml", "**/.gitconfig", "**/.config/git/**", "**/.npmrc", "**/.yarnrc", "**/.yarnrc.yml", "**/.bashrc", "**/.bash_profile", "**/.bash_login", "**/.bash_logout", "**/.profile", "**/.zshrc", "**/.zshenv", "**/.zprofile", "**/.zlogin", "**/.config/fish/**"]

[tools.read_file]
# Largest read_file result before a line range is required. (CFG-READ-01)
max_file_read_bytes = 204800
# Most bytes scanned to serve a line range; also the largest file
# apply_patch edits. (CFG-READ-01)
max_scan_bytes = 2097152

[tools.apply_patch]
# Largest LP1 patch accepted. (CFG-PATCH-01)
max_patch_bytes = 524288
# Most files one patch may change. (CFG-PATCH-01)
max_files = 1000

[tools.run_command]
# How run_command's commands are confined by the kernel (new user, mount,
# PID and network namespaces, Landlock, seccomp); "toolhost sandbox doctor"
# says what this machine allows. A project file or a profile may only make
# these stricter; only this file or TOOLHOST_TOOLS_RUN_COMMAND_* turn the
# sandbox off, open the network, name domains or writable directories,
# share caches or raise a limit.
#
# workspace-write: commands write only the roots, the extra_writable
# directories, a private $TMPDIR, the tool caches (see share_caches) and a
# scratch $HOME discarded after the call; read-only: the same, except that
# the roots and extra_writable stay read-only; off: they run unconfined
# with toolhost's own privileges (then set network = "on" too). When the confinement asked for cannot be had, run_command fails
# and says why; it never runs a command unconfined instead.
sandbox = "workspace-write"
# off: loopback only; allowlist: only the hosts of allowed_domains, through
# toolhost's proxy ($HTTPS_PROXY, $ALL_PROXY); on: the host's network.
network = "off"
# Hosts commands may reach when network = "allowlist": names,
# "*.example.com" (any name below example.com) or addresses. Empty allows
# nothing; loopback and private addresses only when listed exactly.
allowed_domains = []
# Hosts never reached, even when allowed_domains matches them.
denied_domains = []
# More directories commands may write: absolute paths of existing
# directories; never /, the home directory or above it, /etc, /run, the
# shared /tmp, a credentials directory such as ~/.ssh, or toolhost's own
# configuration.
extra_writable = []
# true: commands use the user's own tool caches (GOCACHE, npm, pip, ...),
# writable, instead of a per-root cache toolhost keeps; a command could
# then poison builds outside the sandbox.
share_caches = false
# Memory of one call's processes, where cgroups are available: bytes, or
# a size such as "512MiB" or "2G" (K, M, G: powers of 1000; Ki, Mi, Gi: of
# 1024); 0 sets no limit.
memory_max = "2GiB"
# Processes of one call, where cgroups are available; 0 sets no limit.
pids_max = 512
# CPU seconds of each process; 0 sets none (the call's timeout still
# stops the command).
cpu_seconds = 0
# Largest file a command may write, as memory_max.
max_file_size = "1GiB"
# Most files one process may hold open, 16 to 1048576.
open_files = 4096

# Per-tool overrides, for any tool name; every field is optional and an
# unset one keeps the tool's own setting:
# [tools.overrides.run_command]
# timeout_seconds = 600
# requires_approval = true
# denied = false

# Tools defined here are offered in parse_only mode, for a person to answer.
# (CFG-TOOLS-02)
# [[tools.definitions]]
# name = "lookup_ticket"
# description = "Look up a ticket by id"
# parameters = { type = "object", properties = { id = { type = "string" } }, required = ["id"] }

[server]
# Bearer token of "toolhost serve --http", at least 16 characters; empty
# makes a new one at each start (printed once). $TOOLHOST_TOKEN wins over
# it. Keep this file private if you set it.
token = ""
# How long a call whose MCP client cannot be asked (no elicitation) waits
# for a decision through the batch API (/v1/batches) before it is denied;
# 0 denies it at once.
approval_hold_seconds = 120

[journal]
# The journal's SQLite file: every batch, its calls, decisions and results,
# so a crash never re-runs a call. Empty means
# journal.db in the state directory; a project file cannot move it.
path = ""
# The most bytes of a file's previous content kept so that a change can be
# undone; a larger change is journaled as not undoable.
max_preimage_bytes = 8388608
# Days finished batches and their pre-images are kept.
retention_days = 30

# Profiles: one per agent role, each a narrowing of the policy above.
# "toolhost serve --profile NAME" (stdio) or the path
# /mcp/NAME (HTTP) lists and runs only the profile's tools; a tool the
# policy denies stays denied. Optional fields: mode (lower tools.mode),
# approval (raise tools.approval.mode), confirm_all (ask before every
# call), sequential (one call at a time), max_tool_calls_per_batch,
# sandbox ("read-only", or "workspace-write" where tools.run_command's is
# "off") and network ("off", or "allowlist" where it is "on"), which only
# make [tools.run_command] stricter.
#
# A reviewer reads and never changes anything:
# [profiles.reviewer]
# description = "read-only code review"
# tools = ["read_file", "list_directory"]
#
# A coder edits files, every change asked about, and runs no commands:
# [profiles.coder]
# description = "edits files, asks before each change"
# tools = ["read_file", "list_directory", "write_file", "apply_patch"]
# approval = "prompt"
#
# A refinery runs the tests too, one call at a time, asking before each:
# [profiles.refinery]
# description = "merges work and runs the tests"
# tools = ["read_file", "list_directory", "write_file", "apply_patch", "run_command"]
# confirm_all = true
# sequential = true
`
