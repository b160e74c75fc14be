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
	b.WriteString(l.Config.Tools.Environment.Rules())
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
		values[prefix+"approvals"] = p.Approvals
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
func InitFile() string { return strings.Replace(initFile, "@code_patterns@", codePatternsTOML(), 1) }

const initFile = `# toolhost configuration. Every key is here with its default; delete a key
# to keep the default. An environment variable overrides a key: TOOLHOST_
# and the key in capitals, dots as underscores (TOOLHOST_TOOLS_APPROVAL_MODE
# =auto; lists comma-separated). "toolhost config show" prints the values in
# force and where each came from.
#
# toolhost reads this file from --config, else $TOOLHOST_CONFIG, else
# $XDG_CONFIG_HOME/toolhost/toolhost.toml. A toolhost.toml in a project is
# ignored until you run "toolhost trust DIR", and then it can only make
# these settings stricter.

[tools]
# disabled: offer the model no tools. parse_only: offer them but run
# nothing; a person answers each call. enabled: check, ask and run calls.
mode = "enabled"
# true: a response's consecutive read-only calls run at the same time
# instead of one after another.
allow_parallel = false
# Most calls in one model response; the rest are refused. Raising it lets
# a model do more before anyone sees a result.
max_tool_calls_per_batch = 8
# Most rounds of tool calls per user message before the model must reply.
# Stops a model that calls tools in a loop.
max_tool_iterations_per_user_turn = 4
# Largest arguments of one call, in bytes of JSON (256 KiB).
max_tool_args_bytes = 262144

[tools.sandbox]
# Directories tools may read and write; the first is where calls start.
# Relative paths are from this file's directory (from the working directory
# when this is your user configuration). Every root added is open to tools.
allowed_roots = ["."]
# Paths tools may never read or write, as globs ("**/*.secret"), added to
# the built-in ones below.
denied_patterns = []
# true: tools may name paths as absolute (/home/me/x); they must still lie
# in a root. false: only paths relative to the roots.
allow_absolute = false
# Also deny SSH and GPG keys, *.pem, *.key and system credential files.
# false exposes those that lie in a root.
include_default_denies = true
# Paths tools may read but not write. The default keeps every git
# repository's internals safe: their hooks and config run code.
read_only_patterns = ["**/.git/**", "**/.git"]
# Longest path a tool may use, in bytes, once made absolute.
max_path_bytes = 4096
# Longest single file or directory name in a path, in bytes.
max_path_component_bytes = 255
# Deepest a path may lie below its root, in directories.
max_path_depth = 64

[tools.timeouts]
# Seconds a call may run before it is stopped, for tools that are neither
# file nor shell tools. A tool's override (below) wins.
default_seconds = 30
# Seconds for file tools: read_file, write_file, apply_patch and the like.
file_operations_seconds = 30
# Seconds for run_command and other shell tools.
shell_commands_seconds = 300

[tools.output]
# Most bytes of one result given to the model (100 KiB); longer output is
# cut, and the result says so. Large results fill the model's context.
max_bytes = 102400
# Room assumed left in the model's context, in bytes (64 KiB), when the
# client does not say; tools shorten their output to fit.
available_capacity_bytes = 65536

[tools.environment]
# Variables commands never see, as name globs ("MY_*", any case), on top
# of *_KEY, *_TOKEN, *_SECRET, *_PASSWORD, AWS_*, ANTHROPIC_* and OPENAI_*.
# Names that look secret (KEY, TOKEN, SECRET, PASSWORD, PASSPHRASE, AUTH,
# JWT, WEBHOOK, CONNECTION_STRING, the words PWD, DSN...) are hidden too, as
# are values that are credentials whatever their name (ghp_, sk-ant-, AKIA...
# tokens, JWTs, private keys, webhook URLs, Password= or AccountKey= in a
# connection string); passwords in URLs are cut from values. "toolhost
# config show" lists every rule, and what is hidden and why.
denylist = []
# Exact names to pass on although their name or value looks secret, such
# as ["SSH_AUTH_SOCK"]. The denylist still wins.
keep = []

[tools.approval]
# false: refuse every call ("Tool execution disabled by policy").
enabled = true
# auto: run every call not denied. prompt: ask a person before calls that
# change something, unless allowlisted. deny: refuse all but the allowlist.
# A tool that requires approval is always asked about.
mode = "prompt"
# Tools that run without asking (unless the tool requires approval).
allowlist = ["read_file"]
# Tools that never run, whatever the mode. run_command is here by default:
# remove it to let the model run shell commands.
denylist = ["run_command"]
# false: in prompt mode, calls that change something run without asking
# (a tool that requires approval still asks).
prompt_side_effects = true
# A write_file or apply_patch call that only creates new files runs without
# asking; changing an existing file still asks.
auto_approve_new_files = true
# Files that make tools run code when they exist (direnv and mise, editor
# and agent settings, shell start-up files, git hooks, CI, package manager
# and build tool settings): creating one always asks. docs/SECURITY.md says
# which program loads each; setting this replaces the whole list.
@code_patterns@

[tools.read_file]
# Largest read_file result, in bytes (200 KiB); a bigger file must be read
# by line range.
max_file_read_bytes = 204800
# Most bytes read to find a line range, and the largest file apply_patch
# edits (2 MiB).
max_scan_bytes = 2097152

[tools.apply_patch]
# Largest patch accepted, in bytes (512 KiB).
max_patch_bytes = 524288
# Most files one patch may change.
max_files = 1000

[tools.run_command]
# How run_command's commands are confined by the kernel; "toolhost sandbox
# doctor" says what this machine supports. If the confinement asked for is
# not available, commands fail with the reason: they never run unconfined
# instead. A project file or profile can only make these stricter.
#
# workspace-write: commands write only the roots, extra_writable, a private
# $TMPDIR, the tool caches (see share_caches) and a scratch $HOME that is
# discarded. read-only: the same, except that the roots and extra_writable
# stay read-only. off: no confinement; commands can do whatever you can
# (then set network = "on" too).
sandbox = "workspace-write"
# off: no network except loopback. allowlist: only the hosts in
# allowed_domains, through toolhost's proxy. on: the full network.
network = "off"
# Hosts reachable with network = "allowlist": names, "*.example.com" for
# every name below it, or addresses. Empty allows none.
allowed_domains = []
# Hosts never reachable, even if allowed_domains matches them.
denied_domains = []
# More directories commands may write, as existing absolute paths. Your
# home directory itself, system directories, /tmp and credential
# directories are refused.
extra_writable = []
# true: commands use and may change your own build caches (Go, npm,
# pip...), so a command could plant code that later builds run. false: a
# separate cache per root.
share_caches = false
# Memory for all of one call's processes: bytes, or "512MiB", "2G" (K, M,
# G are powers of 1000; Ki, Mi, Gi of 1024). 0: no limit. Applies where
# cgroups are available ("toolhost sandbox doctor").
memory_max = "2GiB"
# Most processes of one call; 0: no limit. Applies where cgroups are
# available.
pids_max = 512
# CPU seconds each process may use; 0: no limit (the timeout still holds).
cpu_seconds = 0
# Largest file a command may write, written like memory_max.
max_file_size = "1GiB"
# Most files one process may hold open, from 16 to 1048576.
open_files = 4096
# Longest timeout_ms a run_command call may ask for, in milliseconds (10
# minutes). The call's deadline ([tools.timeouts] shell_commands_seconds)
# bounds every command too, whichever is shorter: raise both for longer
# commands, or run them with background: true.
max_timeout_ms = 600000
# Variables every command gets, as NAME=value, so that nothing waits for an
# answer no one will give; a call's env overrides them. [] sets none.
noninteractive_env = ["CI=1", "GIT_TERMINAL_PROMPT=0", "GIT_PAGER=cat", "PAGER=cat", "DEBIAN_FRONTEND=noninteractive", "npm_config_yes=true", "PIP_NO_INPUT=1", "TERM=dumb", "NO_COLOR=1"]

[tools.jobs]
# Commands run_command starts with background: true run as jobs of the
# conversation; job_output reads them, job_kill stops them, job_list lists
# them. They are killed when the server stops or their MCP session ends.
#
# How much of each job's latest output is kept in memory for job_output,
# written like memory_max; older output is dropped and job_output says so.
ring_bytes = "1MiB"
# Most jobs one conversation may run at once; more are refused until one ends.
max_per_conversation = 8
# Most jobs all conversations together may run at once.
max_total = 32
# Seconds a job may run before it is killed; 0: until its conversation ends.
max_seconds = 3600
# Seconds a session's jobs keep running after its MCP client disconnects.
session_end_grace_seconds = 10
# Each command's whole output is kept in the state directory for job_output,
# up to this size each (written like memory_max); the rest is dropped.
keep_output_bytes = "64MiB"
# All kept outputs together; past it the oldest are removed first.
keep_total_bytes = "1GiB"

# Per-tool settings, for any tool; leave a key out to keep the tool's own:
# [tools.overrides.run_command]
# timeout_seconds = 600      # its timeout
# requires_approval = true   # always ask before it runs
# denied = false             # true: never run it

# Tools you answer yourself, offered to the model in parse_only mode:
# [[tools.definitions]]
# name = "lookup_ticket"
# description = "Look up a ticket by id"
# parameters = { type = "object", properties = { id = { type = "string" } }, required = ["id"] }

[server]
# Secret token clients of "toolhost serve --http" must send, 16 characters
# or more.
# Empty: a new one at each start, printed once. $TOOLHOST_TOKEN wins. If
# you set it, make this file readable by you alone.
token = ""
# Seconds a call held for a decision waits for one in the web console,
# toolhost approve or the HTTP batch API; then it is refused. 0 refuses at
# once.
approval_hold_seconds = 600
# Who decides a call that needs approval: "elicitation" asks the MCP client
# (and holds the call for the console when the client cannot be asked),
# "console" never asks the client and holds every such call for the
# console, toolhost approve or /v1 (a client that answers by itself then
# approves nothing), "both" asks the client and holds the call, the first
# answer winning.
approvals = "elicitation"

[journal]
# File where toolhost records every call and its result, so that a crash
# never runs a call twice and changes can be undone. Empty: journal.db in
# toolhost's state directory.
path = ""
# Most bytes of a file's old content kept to undo a change (8 MiB); a
# bigger change cannot be undone.
max_preimage_bytes = 8388608
# Days finished work stays in the journal, and can be undone.
retention_days = 30

# Profiles: one per agent role, each a stricter view of the settings above.
# "toolhost serve --profile NAME", or the HTTP path /mcp/NAME, offers only
# the profile's tools. A profile may also set mode, approval, confirm_all
# (ask before every call), sequential (one call at a time), sandbox,
# network, max_tool_calls_per_batch and approvals = "console" (its calls
# are decided in the web console, never by the MCP client); each can only
# tighten. A tool
# denied above stays denied: the tester below needs run_command taken out
# of tools.approval.denylist.
#
# [profiles.reviewer]
# description = "reads code, changes nothing"
# tools = ["read_file", "list_directory"]
#
# [profiles.coder]
# description = "edits files, asks before each change"
# tools = ["read_file", "list_directory", "write_file", "apply_patch"]
# approval = "prompt"
#
# [profiles.tester]
# description = "edits and runs the tests, one call at a time, asking first"
# tools = ["read_file", "list_directory", "write_file", "apply_patch", "run_command"]
# confirm_all = true
# sequential = true
`
