package config

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"testing"
)

func writeFile(t *testing.T, dir, name, content string) string {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// withRoots is Default with its roots made absolute against dir, as Load
// returns them.
func withRoots(dir string) *Config {
	c := Default()
	c.Tools.Sandbox.AllowedRoots = []string{dir}
	return c
}

func TestDefaultsWithoutFile(t *testing.T) {
	dir := t.TempDir()
	l, err := Load(Options{UserDir: dir, Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(l.Config, withRoots(dir)) {
		t.Errorf("config without a file\n got %+v\nwant %+v", l.Config.Tools, withRoots(dir).Tools)
	}
	if l.File != "" || l.Sources["tools.approval.mode"] != "default" {
		t.Errorf("file %q, source %q", l.File, l.Sources["tools.approval.mode"])
	}
}

// CFG-TOOLS-01..CFG-PATCH-01: InitFile loads to exactly the defaults and
// sets every key itself, each under a comment an operator can read: words,
// not the specification's requirement ids or the tracker's issue numbers.
func TestInitFileIsTheDefaults(t *testing.T) {
	dir := t.TempDir()
	file := writeFile(t, dir, "toolhost.toml", InitFile())
	l, err := Load(Options{UserDir: dir, Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(l.Config, withRoots(dir)) {
		t.Errorf("init file loads to\n%+v\nwant\n%+v", l.Config.Tools, withRoots(dir).Tools)
	}
	for key := range keyKinds() {
		if got := l.Sources[key]; got != "file "+file {
			t.Errorf("%s comes from %q: InitFile lacks it", key, got)
		}
	}
	if id := internalID.FindString(InitFile()); id != "" {
		t.Errorf("InitFile cites %q: an operator cannot look that up; say it in words", id)
	}
	documented := map[string]bool{}
	for key, comment := range initFileKeys(t, InitFile()) {
		documented[key] = true
		if n := len(prose.FindAllString(comment, -1)); n < 5 {
			t.Errorf("InitFile: %s is explained by %d words (%q); say what it does and what changing it means", key, n, comment)
		}
	}
	for key := range keyKinds() {
		if !documented[key] {
			t.Errorf("InitFile has no line of its own for %s", key)
		}
	}
}

// internalID matches what an operator cannot look up: the specification's
// requirement ids (CFG-SBX-01, FR-APR-04a, NFR-SEC-06) and issue numbers.
var internalID = regexp.MustCompile(`(?i)\b(?:N?FR|CFG)-[A-Z]+-?\d*|\b[A-Z]{2,}-[A-Z]{2,}-\d+|\bissues?\s*#?\d+|#\d+\b`)

// prose matches a word of English: letters only, two or more.
var prose = regexp.MustCompile(`\b[A-Za-z][a-z]+\b`)

// initFileKeys maps each key a TOML init file sets, dotted under its
// table, to the comment lines just above it, joined.
func initFileKeys(t *testing.T, text string) map[string]string {
	t.Helper()
	keyLine := regexp.MustCompile(`^([a-z_]+) = `)
	keys := map[string]string{}
	table, comment := "", []string{}
	for _, line := range strings.Split(text, "\n") {
		switch m := keyLine.FindStringSubmatch(line); {
		case strings.HasPrefix(line, "#"):
			comment = append(comment, strings.TrimSpace(strings.TrimPrefix(line, "#")))
			continue
		case strings.HasPrefix(line, "["):
			table = strings.Trim(line, "[]")
		case m != nil:
			key := table + "." + m[1]
			if _, dup := keys[key]; dup {
				t.Errorf("InitFile sets %s twice", key)
			}
			keys[key] = strings.Join(comment, " ")
		}
		comment = comment[:0]
	}
	return keys
}

// fullTOML sets every key to something other than its default.
const fullTOML = `
[tools]
mode = "parse_only"
allow_parallel = true
max_tool_calls_per_batch = 3
max_tool_iterations_per_user_turn = 2
max_tool_args_bytes = 1000

[tools.sandbox]
allowed_roots = ["src", "/abs/other"]
denied_patterns = ["**/*.secret"]
allow_absolute = true
include_default_denies = false
read_only_patterns = ["vendor/**", ".git/**"]
max_path_bytes = 1000
max_path_component_bytes = 100
max_path_depth = 10

[tools.timeouts]
default_seconds = 5
file_operations_seconds = 6
shell_commands_seconds = 10

[tools.output]
max_bytes = 2048
available_capacity_bytes = 4096

[tools.environment]
denylist = ["MY_*"]
keep = ["SSH_AUTH_SOCK"]

[tools.approval]
enabled = false
mode = "deny"
allowlist = ["read_file", "list_directory"]
denylist = []
prompt_side_effects = false
auto_approve_new_files = false
code_patterns = ["**/.envrc"]

[tools.read_file]
max_file_read_bytes = 100
max_scan_bytes = 200

[tools.apply_patch]
max_patch_bytes = 300
max_files = 7

[tools.run_command]
sandbox = "read-only"
network = "allowlist"
allowed_domains = ["proxy.golang.org", "*.example.com", "127.0.0.1"]
denied_domains = ["evil.example.com"]
extra_writable = ["@EXTRA@"]
share_caches = true
memory_max = "512MiB"
pids_max = 64
cpu_seconds = 60
max_file_size = 1000000
open_files = 256
max_timeout_ms = 90000
noninteractive_env = ["CI=1"]

[tools.jobs]
ring_bytes = "64KiB"
max_per_conversation = 2
max_total = 4
max_seconds = 60
session_end_grace_seconds = 1
keep_output_bytes = 1000
keep_total_bytes = "1MiB"

[tools.overrides.run_command]
timeout_seconds = 600
requires_approval = true
denied = false

[[tools.definitions]]
name = "lookup_ticket"
description = "Look up a ticket"
parameters = { type = "object", properties = { id = { type = "string", minLength = 1 } }, required = ["id"] }

[server]
token = "0123456789abcdef-token"
approval_hold_seconds = 30
approvals = "console"

[journal]
path = "/var/lib/toolhost/journal.db"
max_preimage_bytes = 1024
retention_days = 7

[profiles.reviewer]
description = "reads only"
tools = ["read_file", "list_directory"]
approval = "deny"
mode = "parse_only"
confirm_all = true
sequential = true
max_tool_calls_per_batch = 2
sandbox = "read-only"
network = "off"

[extism.Weather-Plugin]
allowed_hosts = ["api.example.com", "*.example.org"]
config = { API_KEY = "k1", units = "metric" }
max_memory_mib = 32
`

// fullYAML is fullTOML in YAML.
const fullYAML = `
tools:
  mode: parse_only
  allow_parallel: true
  max_tool_calls_per_batch: 3
  max_tool_iterations_per_user_turn: 2
  max_tool_args_bytes: 1000
  sandbox:
    allowed_roots: [src, /abs/other]
    denied_patterns: ["**/*.secret"]
    allow_absolute: true
    include_default_denies: false
    read_only_patterns: ["vendor/**", ".git/**"]
    max_path_bytes: 1000
    max_path_component_bytes: 100
    max_path_depth: 10
  timeouts: {default_seconds: 5, file_operations_seconds: 6, shell_commands_seconds: 10}
  output: {max_bytes: 2048, available_capacity_bytes: 4096}
  environment:
    denylist: ["MY_*"]
    keep: [SSH_AUTH_SOCK]
  approval:
    enabled: false
    mode: deny
    allowlist: [read_file, list_directory]
    denylist: []
    prompt_side_effects: false
    auto_approve_new_files: false
    code_patterns: ["**/.envrc"]
  read_file:
    max_file_read_bytes: 100
    max_scan_bytes: 200
  apply_patch:
    max_patch_bytes: 300
    max_files: 7
  run_command:
    sandbox: read-only
    network: allowlist
    allowed_domains: [proxy.golang.org, "*.example.com", 127.0.0.1]
    denied_domains: [evil.example.com]
    extra_writable: ["@EXTRA@"]
    share_caches: true
    memory_max: 512Mi
    pids_max: 64
    cpu_seconds: 60
    max_file_size: 1000000
    open_files: 256
    max_timeout_ms: 90000
    noninteractive_env: [CI=1]
  jobs:
    ring_bytes: 64KiB
    max_per_conversation: 2
    max_total: 4
    max_seconds: 60
    session_end_grace_seconds: 1
    keep_output_bytes: 1000
    keep_total_bytes: 1MiB
  overrides:
    run_command:
      timeout_seconds: 600
      requires_approval: true
      denied: false
  definitions:
    - name: lookup_ticket
      description: Look up a ticket
      parameters:
        type: object
        properties: {id: {type: string, minLength: 1}}
        required: [id]
server:
  token: 0123456789abcdef-token
  approval_hold_seconds: 30
  approvals: console
journal:
  path: /var/lib/toolhost/journal.db
  max_preimage_bytes: 1024
  retention_days: 7
profiles:
  reviewer:
    description: reads only
    tools: [read_file, list_directory]
    approval: deny
    mode: parse_only
    confirm_all: true
    sequential: true
    max_tool_calls_per_batch: 2
    sandbox: read-only
    network: "off"
extism:
  Weather-Plugin:
    allowed_hosts: [api.example.com, "*.example.org"]
    config: {API_KEY: k1, units: metric}
    max_memory_mib: 32
`

// fullConfig is what fullTOML and fullYAML load to from dir, with extra
// for @EXTRA@. minLength is
// an int64 from TOML and an int from YAML, as each decoder gives it.
func fullConfig(dir, extra string, minLength any) *Config {
	six, yes, no := 600, true, false
	return &Config{Tools: Tools{
		Mode: ModeParseOnly, AllowParallel: true,
		MaxToolCallsPerBatch: 3, MaxToolIterationsPerUserTurn: 2, MaxToolArgsBytes: 1000,
		Sandbox: Sandbox{
			AllowedRoots:   []string{filepath.Join(dir, "src"), "/abs/other"},
			DeniedPatterns: []string{"**/*.secret"}, AllowAbsolute: true,
			ReadOnlyPatterns: []string{"vendor/**", ".git/**"},
			MaxPathBytes:     1000, MaxPathComponentBytes: 100, MaxPathDepth: 10,
		},
		Timeouts:    Timeouts{DefaultSeconds: 5, FileOperationsSeconds: 6, ShellCommandsSeconds: 10},
		Output:      Output{MaxBytes: 2048, AvailableCapacityBytes: 4096},
		Environment: Environment{Denylist: []string{"MY_*"}, Keep: []string{"SSH_AUTH_SOCK"}},
		Approval: Approval{
			Mode: ApprovalDeny, Allowlist: []string{"read_file", "list_directory"}, Denylist: []string{},
			CodePatterns: []string{"**/.envrc"},
		},
		ReadFile:   ReadFile{MaxFileReadBytes: 100, MaxScanBytes: 200},
		ApplyPatch: ApplyPatch{MaxPatchBytes: 300, MaxFiles: 7},
		RunCommand: RunCommand{
			Sandbox: SandboxReadOnly, Network: NetworkAllowlist,
			AllowedDomains: []string{"proxy.golang.org", "*.example.com", "127.0.0.1"}, DeniedDomains: []string{"evil.example.com"},
			ExtraWritable: []string{extra}, ShareCaches: true,
			MemoryMax: 512 << 20, PidsMax: 64, CPUSeconds: 60, MaxFileSize: 1000000, OpenFiles: 256,
			MaxTimeoutMS: 90000, NonInteractiveEnv: []string{"CI=1"},
		},
		Jobs: Jobs{RingBytes: 64 << 10, MaxPerConversation: 2, MaxTotal: 4, MaxSeconds: 60, SessionEndGraceSeconds: 1,
			KeepOutputBytes: 1000, KeepTotalBytes: 1 << 20},
		Overrides: map[string]Override{"run_command": {TimeoutSeconds: &six, RequiresApproval: &yes, Denied: &no}},
		Definitions: []Definition{{Name: "lookup_ticket", Description: "Look up a ticket", Parameters: map[string]any{
			"type":       "object",
			"properties": map[string]any{"id": map[string]any{"type": "string", "minLength": minLength}},
			"required":   []any{"id"},
		}}},
	},
		Server:  Server{Token: "0123456789abcdef-token", ApprovalHoldSeconds: 30, Approvals: "console"},
		Journal: Journal{Path: "/var/lib/toolhost/journal.db", MaxPreimageBytes: 1024, RetentionDays: 7},
		Profiles: map[string]Profile{"reviewer": {
			Description: "reads only", Tools: []string{"read_file", "list_directory"}, Approval: ApprovalDeny, Mode: ModeParseOnly,
			ConfirmAll: true, Sequential: true, MaxToolCallsPerBatch: 2, Sandbox: SandboxReadOnly, Network: NetworkOff,
		}},
		// The plugin's name and config keys keep their case.
		Extism: map[string]ExtismPlugin{"Weather-Plugin": {
			AllowedHosts: []string{"api.example.com", "*.example.org"},
			Config:       map[string]string{"API_KEY": "k1", "units": "metric"}, MaxMemoryMiB: 32,
		}},
	}
}

// CFG-TOOLS-01, CFG-TOOLS-02, CFG-SBX-01, CFG-TMO-01, CFG-OUT-01,
// CFG-ENV-01, CFG-APR-01, CFG-READ-01, CFG-PATCH-01: a file setting every
// key, in TOML and in YAML, loads to the same configuration, and every key
// is reported as coming from the file. JSON Schema keywords keep their case
// (minLength), which viper alone would lowercase.
func TestFullFile(t *testing.T) {
	tests := []struct {
		name, content string
		minLength     any
	}{
		{"toolhost.toml", fullTOML, int64(1)},
		{"toolhost.yaml", fullYAML, 1},
		{"toolhost.yml", fullYAML, 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			// extra_writable names a directory that
			// exists, apart from the configuration's.
			dir, extra := t.TempDir(), t.TempDir()
			file := writeFile(t, dir, tt.name, strings.ReplaceAll(tt.content, "@EXTRA@", extra))
			l, err := Load(Options{UserDir: dir, Dir: dir})
			if err != nil {
				t.Fatal(err)
			}
			if want := fullConfig(dir, extra, tt.minLength); !reflect.DeepEqual(l.Config, want) {
				t.Errorf("got  %+v\nwant %+v", l.Config.Tools, want.Tools)
			}
			if l.File != file {
				t.Errorf("File = %q, want %q", l.File, file)
			}
			keys := []string{"tools.definitions", "tools.overrides.run_command.timeout_seconds", "tools.overrides.run_command.denied",
				"profiles.reviewer.tools", "profiles.reviewer.max_tool_calls_per_batch", "profiles.reviewer.sandbox", "profiles.reviewer.network"}
			for key := range keyKinds() {
				keys = append(keys, key)
			}
			for _, key := range keys {
				if got := l.Sources[key]; got != "file "+file {
					t.Errorf("Sources[%s] = %q, want the file", key, got)
				}
			}
		})
	}
}

// The viper gotcha: viper's Unmarshal ignores environment variables for
// keys absent from both the file and the defaults. Each key here is set
// ONLY by the environment, in sections the file does not mention at all,
// and must take effect: a nested bool, int and list (CFG-SBX-01,
// CFG-TMO-01, CFG-APR-01, CFG-ENV-01, CFG-READ-01, CFG-PATCH-01, CFG-OUT-01)
// and an override of a tool the file never names.
// The server's token comes from the operator's file or
// TOOLHOST_SERVER_TOKEN, and config show says it is set without showing
// it.
func TestServerToken(t *testing.T) {
	const token = "operator-token-0123456789"
	tests := []struct {
		name, file string
		env        []string
	}{
		{name: "file", file: "[server]\ntoken = \"" + token + "\"\n"},
		{name: "environment", env: []string{"TOOLHOST_SERVER_TOKEN=" + token}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			if tt.file != "" {
				writeFile(t, dir, "toolhost.toml", tt.file)
			}
			l, err := Load(Options{UserDir: dir, Dir: dir, Environ: tt.env})
			if err != nil {
				t.Fatal(err)
			}
			if l.Config.Server.Token != token {
				t.Errorf("token %q, want %q", l.Config.Server.Token, token)
			}
			show := l.Show()
			if strings.Contains(show, token) || !strings.Contains(show, "server.token = \"…\"  # set, not shown") {
				t.Errorf("config show prints the token or hides that it is set:\n%s", show)
			}
		})
	}
}

func TestEnvironmentOnlyKeys(t *testing.T) {
	tests := []struct {
		env   string
		check func(*Tools) bool
	}{
		{"TOOLHOST_TOOLS_SANDBOX_ALLOW_ABSOLUTE=true", func(t *Tools) bool { return t.Sandbox.AllowAbsolute }},
		{"TOOLHOST_TOOLS_SANDBOX_INCLUDE_DEFAULT_DENIES=0", func(t *Tools) bool { return !t.Sandbox.IncludeDefaultDenies }},
		{"TOOLHOST_TOOLS_TIMEOUTS_SHELL_COMMANDS_SECONDS=10", func(t *Tools) bool { return t.Timeouts.ShellCommandsSeconds == 10 }},
		{"TOOLHOST_TOOLS_OUTPUT_AVAILABLE_CAPACITY_BYTES=999", func(t *Tools) bool { return t.Output.AvailableCapacityBytes == 999 }},
		{"TOOLHOST_TOOLS_READ_FILE_MAX_SCAN_BYTES=77", func(t *Tools) bool { return t.ReadFile.MaxScanBytes == 77 }},
		{"TOOLHOST_TOOLS_APPLY_PATCH_MAX_PATCH_BYTES=88", func(t *Tools) bool { return t.ApplyPatch.MaxPatchBytes == 88 }},
		{"TOOLHOST_TOOLS_APPROVAL_ALLOWLIST=read_file, list_directory", func(t *Tools) bool {
			return reflect.DeepEqual(t.Approval.Allowlist, []string{"read_file", "list_directory"})
		}},
		{"TOOLHOST_TOOLS_APPROVAL_DENYLIST=", func(t *Tools) bool { return t.Approval.Denylist != nil && len(t.Approval.Denylist) == 0 }},
		{"TOOLHOST_TOOLS_ENVIRONMENT_DENYLIST=MY_*,OTHER_*", func(t *Tools) bool {
			return reflect.DeepEqual(t.Environment.Denylist, []string{"MY_*", "OTHER_*"})
		}},
		{"TOOLHOST_TOOLS_SANDBOX_READ_ONLY_PATTERNS=docs/**", func(t *Tools) bool {
			return reflect.DeepEqual(t.Sandbox.ReadOnlyPatterns, []string{"docs/**"})
		}},
		{"TOOLHOST_TOOLS_MODE=parse_only", func(t *Tools) bool { return t.Mode == ModeParseOnly }},
		{"TOOLHOST_TOOLS_OVERRIDES_WRITE_FILE_DENIED=true", func(t *Tools) bool {
			o := t.Overrides["write_file"]
			return o.Denied != nil && *o.Denied && o.TimeoutSeconds == nil && o.RequiresApproval == nil
		}},
		{"TOOLHOST_TOOLS_OVERRIDES_LIST_DIRECTORY_TIMEOUT_SECONDS=9", func(t *Tools) bool {
			o := t.Overrides["list_directory"]
			return o.TimeoutSeconds != nil && *o.TimeoutSeconds == 9
		}},
		{"TOOLHOST_TOOLS_OVERRIDES_X_REQUIRES_APPROVAL=false", func(t *Tools) bool {
			o := t.Overrides["x"]
			return o.RequiresApproval != nil && !*o.RequiresApproval
		}},
	}
	files := map[string]string{
		"no file":        "",
		"unrelated file": "[tools.approval]\nmode = \"deny\"\n",
	}
	for fname, content := range files {
		for _, tt := range tests {
			name, _, _ := strings.Cut(tt.env, "=")
			t.Run(fname+"/"+name, func(t *testing.T) {
				dir := t.TempDir()
				if content != "" {
					writeFile(t, dir, "toolhost.toml", content)
				}
				l, err := Load(Options{UserDir: dir, Dir: dir, Environ: []string{tt.env}})
				if err != nil {
					t.Fatal(err)
				}
				if !tt.check(&l.Config.Tools) {
					t.Errorf("%s not applied: %+v", tt.env, l.Config.Tools)
				}
				found := false
				for _, src := range l.Sources {
					found = found || src == "env "+name
				}
				if !found {
					t.Errorf("no key reports source env %s: %v", name, l.Sources)
				}
			})
		}
	}
}

// CFG-APR-01, CFG-TMO-01: the environment beats the file, the file beats
// the defaults, Sources names each origin, and Show prints them.
func TestEnvironmentBeatsFile(t *testing.T) {
	dir := t.TempDir()
	file := writeFile(t, dir, "toolhost.toml", `
[tools.approval]
mode = "deny"
allowlist = ["read_file"]

[tools.overrides.run_command]
timeout_seconds = 60
requires_approval = true
`)
	env := []string{
		"TOOLHOST_TOOLS_APPROVAL_MODE=auto",                      // beats the file
		"TOOLHOST_TOOLS_OVERRIDES_RUN_COMMAND_TIMEOUT_SECONDS=7", // beats the file, tool name with underscores
		"TOOLHOST_CACHE_DIR=/elsewhere",                          // not a configuration key: ignored
		"TOOLHOST_PLUGINS=/p", "TOOLHOST_STATE_DIR=/s", "TOOLHOST_BIN=/b", "TOOLHOST_CONFIG=/c.toml",
		"HOME=/root",
	}
	l, err := Load(Options{UserDir: dir, Dir: dir, Environ: env})
	if err != nil {
		t.Fatal(err)
	}
	tl := l.Config.Tools
	if tl.Approval.Mode != ApprovalAuto {
		t.Errorf("approval mode %q, want the environment's auto", tl.Approval.Mode)
	}
	o := tl.Overrides["run_command"]
	if o.TimeoutSeconds == nil || *o.TimeoutSeconds != 7 || o.RequiresApproval == nil || !*o.RequiresApproval || o.Denied != nil {
		t.Errorf("override run_command = %+v", o)
	}
	sources := map[string]string{
		"tools.approval.mode":                           "env TOOLHOST_TOOLS_APPROVAL_MODE",
		"tools.overrides.run_command.timeout_seconds":   "env TOOLHOST_TOOLS_OVERRIDES_RUN_COMMAND_TIMEOUT_SECONDS",
		"tools.approval.allowlist":                      "file " + file,
		"tools.overrides.run_command.requires_approval": "file " + file,
		"tools.output.max_bytes":                        "default",
		"tools.definitions":                             "default",
	}
	for key, want := range sources {
		if got := l.Sources[key]; got != want {
			t.Errorf("Sources[%s] = %q, want %q", key, got, want)
		}
	}
	show := l.Show()
	for _, want := range []string{
		`tools.approval.mode = "auto"  # env TOOLHOST_TOOLS_APPROVAL_MODE` + "\n",
		`tools.overrides.run_command.timeout_seconds = 7  # env TOOLHOST_TOOLS_OVERRIDES_RUN_COMMAND_TIMEOUT_SECONDS` + "\n",
		`tools.overrides.run_command.requires_approval = true  # file ` + file + "\n",
		`tools.approval.allowlist = ["read_file"]  # file ` + file + "\n",
		`tools.output.max_bytes = 102400  # default` + "\n",
		`tools.sandbox.allowed_roots = [` + strconv.Quote(dir) + `]  # default` + "\n",
	} {
		if !strings.Contains(show, want) {
			t.Errorf("Show lacks %q:\n%s", want, show)
		}
	}
	var lines []string
	for _, line := range strings.Split(strings.TrimSuffix(show, "\n"), "\n") {
		if !strings.HasPrefix(line, "#") { // the hidden variables, after the keys
			lines = append(lines, line)
		}
	}
	if !sort.StringsAreSorted(lines) || len(lines) != len(keyKinds())+2 {
		t.Errorf("Show: want %d sorted lines, got %d:\n%s", len(keyKinds())+2, len(lines), show)
	}
}

// CFG-SBX-01: relative roots in a file are relative to the file; roots from
// the defaults or the environment are relative to the working directory.
// All come out absolute.
func TestRoots(t *testing.T) {
	wd, elsewhere := t.TempDir(), t.TempDir()
	withRootsFile := writeFile(t, elsewhere, "a.toml", "[tools.sandbox]\nallowed_roots = [\".\", \"sub/../src\"]\n")
	withoutRootsFile := writeFile(t, elsewhere, "b.yaml", "tools:\n  mode: enabled\n")
	tests := []struct {
		name string
		opts Options
		want []string
	}{
		{"default, no file", Options{Dir: wd}, []string{wd}},
		{"file's own roots", Options{Dir: wd, File: withRootsFile}, []string{elsewhere, filepath.Join(elsewhere, "src")}},
		{"default with a file elsewhere", Options{Dir: wd, File: withoutRootsFile}, []string{wd}},
		{"environment", Options{Dir: wd, File: withRootsFile, Environ: []string{"TOOLHOST_TOOLS_SANDBOX_ALLOWED_ROOTS=a,/abs"}}, []string{filepath.Join(wd, "a"), "/abs"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			l, err := Load(tt.opts)
			if err != nil {
				t.Fatal(err)
			}
			if got := l.Config.Tools.Sandbox.AllowedRoots; !reflect.DeepEqual(got, tt.want) {
				t.Errorf("roots %q, want %q", got, tt.want)
			}
		})
	}
}

// Every error names the key (or variable) and where the value came from;
// the file's own errors name the file. CFG-* ids are the sections involved.
func TestErrors(t *testing.T) {
	tests := []struct {
		name string
		file string // content of toolhost.toml, or of toolhost.yaml when yaml; "" for none
		yaml bool
		env  []string
		key  string // the KeyError's key; "" when the error is not a KeyError
		msg  string
	}{
		// Unknown keys.
		{name: "unknown top-level key", file: "[other]\nx = 1\n", key: "other.x", msg: "unknown key"},
		{name: "unknown top-level scalar", file: "verbose = true\n", key: "verbose", msg: "unknown key"},
		{name: "unknown empty table", file: "[tools.sandbx]\n", key: "tools.sandbx", msg: "unknown key"},
		{name: "CFG-APR-01 misspelled nested key", file: "[tools.approval]\nmod = \"auto\"\n", key: "tools.approval.mod", msg: `tools.approval.mod: unknown key; did you mean "tools.approval.mode"?`},
		{name: "CFG-APR-01 misspelled table", file: "[tools.aproval]\nmode = \"auto\"\n", key: "tools.aproval.mode", msg: `did you mean "tools.approval.mode"?`},
		{name: "unknown override field", file: "[tools.overrides.read_file]\ntimeout = 3\n", key: "tools.overrides.read_file.timeout", msg: "unknown key"},
		{name: "CFG-TOOLS-02 unknown definition key", file: "[[tools.definitions]]\nname = \"a\"\nparams = {}\n", key: "tools.definitions", msg: `unknown key "params"`},
		{name: "YAML unknown nested key", file: "tools:\n  sandbox:\n    allowed_root: [x]\n", yaml: true, key: "tools.sandbox.allowed_root", msg: `did you mean "tools.sandbox.allowed_roots"?`},

		// Wrong types.
		{name: "CFG-TOOLS-01 string for int", file: "[tools]\nmax_tool_calls_per_batch = \"eight\"\n", key: "tools.max_tool_calls_per_batch", msg: `tools.max_tool_calls_per_batch: expected an integer, got "eight"`},
		{name: "CFG-OUT-01 float for int", file: "[tools.output]\nmax_bytes = 1.5\n", key: "tools.output.max_bytes", msg: "expected an integer, got 1.5"},
		{name: "CFG-APR-01 int for list", file: "[tools.approval]\nallowlist = 3\n", key: "tools.approval.allowlist", msg: "expected a list of strings"},
		{name: "CFG-APR-01 list of ints", file: "[tools.approval]\nallowlist = [1]\n", key: "tools.approval.allowlist", msg: "item 1 is 1"},
		{name: "CFG-TOOLS-01 bool for string", file: "[tools]\nmode = true\n", key: "tools.mode", msg: "expected a string"},
		{name: "CFG-SBX-01 string for bool", file: "[tools.sandbox]\nallow_absolute = \"yes\"\n", key: "tools.sandbox.allow_absolute", msg: "expected a boolean"},
		{name: "CFG-SBX-01 scalar for table", file: "[tools]\nsandbox = 3\n", key: "tools.sandbox", msg: "expected a table, got 3"},
		{name: "override of the wrong type", file: "[tools.overrides]\nrun_command = true\n", key: "tools.overrides.run_command", msg: "expected a table"},
		{name: "override field of the wrong type", file: "[tools.overrides.run_command]\ndenied = \"no\"\n", key: "tools.overrides.run_command.denied", msg: "expected a boolean"},
		{name: "CFG-TOOLS-02 definitions as a table", file: "[tools.definitions]\nname = \"a\"\n", key: "tools.definitions", msg: "expected an array of tables"},
		{name: "YAML string for int", file: "tools:\n  timeouts:\n    default_seconds: soon\n", yaml: true, key: "tools.timeouts.default_seconds", msg: `expected an integer, got "soon"`},
		{name: "YAML int for list", file: "tools:\n  environment:\n    denylist: 3\n", yaml: true, key: "tools.environment.denylist", msg: "expected a list of strings"},

		// Validation: enums, limits, globs, definitions.
		{name: "CFG-TOOLS-01 bad enum", file: "[tools]\nmode = \"on\"\n", key: "tools.mode", msg: `"on" is not one of`},
		{name: "CFG-APR-01 bad approval enum", file: "[tools.approval]\nmode = \"ask\"\n", key: "tools.approval.mode", msg: "is not one of"},
		{name: "CFG-TOOLS-01 zero limit", file: "[tools]\nmax_tool_calls_per_batch = 0\n", key: "tools.max_tool_calls_per_batch", msg: "positive"},
		{name: "CFG-READ-01 negative limit", file: "[tools.read_file]\nmax_scan_bytes = -1\n", key: "tools.read_file.max_scan_bytes", msg: "positive"},
		{name: "CFG-PATCH-01 zero limit", file: "[tools.apply_patch]\nmax_patch_bytes = 0\n", key: "tools.apply_patch.max_patch_bytes", msg: "positive"},
		{name: "CFG-TMO-01 zero override timeout", file: "[tools.overrides.run_command]\ntimeout_seconds = 0\n", key: "tools.overrides.run_command.timeout_seconds", msg: "positive"},
		{name: "CFG-SBX-01 no roots", file: "[tools.sandbox]\nallowed_roots = []\n", key: "tools.sandbox.allowed_roots", msg: "at least one"},
		{name: "CFG-SBX-01 bad glob", file: "[tools.sandbox]\ndenied_patterns = [\"[x\"]\n", key: "tools.sandbox.denied_patterns", msg: "not a valid glob"},
		{name: "CFG-SBX-01 bad read-only glob", file: "[tools.sandbox]\nread_only_patterns = [\"{a,b\"]\n", key: "tools.sandbox.read_only_patterns", msg: "not a valid glob"},
		{name: "CFG-ENV-01 bad env glob", file: "[tools.environment]\ndenylist = [\"[\"]\n", key: "tools.environment.denylist", msg: "not a valid variable-name glob"},
		{name: "CFG-TOOLS-02 duplicate definition", file: "[[tools.definitions]]\nname = \"a\"\nparameters = { type = \"object\" }\n[[tools.definitions]]\nname = \"a\"\nparameters = { type = \"object\" }\n", key: "tools.definitions[1].name", msg: "defined twice"},
		{name: "CFG-TOOLS-02 bad definition name", file: "[[tools.definitions]]\nname = \"Lookup\"\nparameters = { type = \"object\" }\n", key: "tools.definitions[0].name", msg: "not a tool name"},
		{name: "CFG-TOOLS-02 definition without object schema", file: "[[tools.definitions]]\nname = \"a\"\n", key: "tools.definitions[0].parameters", msg: `type = "object"`},
		{name: "CFG-TOOLS-02 YAML schema of another type", file: "tools:\n  definitions:\n    - name: a\n      parameters: {type: string}\n", yaml: true, key: "tools.definitions[0].parameters", msg: `type = "object"`},

		// The server and profiles.
		{name: "short token", file: "[server]\ntoken = \"abc\"\n", key: "server.token", msg: "at least 16 characters"},
		{name: "token with a space", file: "[server]\ntoken = \"0123456789 abcdefgh\"\n", key: "server.token", msg: "without spaces"},
		{name: "negative hold", file: "[server]\napproval_hold_seconds = -1\n", key: "server.approval_hold_seconds", msg: "0 (deny at once) or more"},
		{name: "unknown approvals", file: "[server]\napprovals = \"client\"\n", key: "server.approvals", msg: "elicitation, both, console"},
		{name: "unknown server key", file: "[server]\ntokn = \"x\"\n", key: "server.tokn", msg: `did you mean "server.token"?`},
		{name: "profile name with a slash (YAML)", file: "profiles:\n  a/b:\n    tools: []\n", yaml: true, key: "profiles.a/b", msg: "not a profile name"},
		{name: "profile without tools", file: "[profiles.reviewer]\ndescription = \"x\"\n", key: "profiles.reviewer.tools", msg: "lists the tools it offers"},
		{name: "profile with a bad tool name", file: "[profiles.reviewer]\ntools = [\"Read File\"]\n", key: "profiles.reviewer.tools", msg: "not a tool name"},
		{name: "profile with a bad approval", file: "[profiles.reviewer]\ntools = []\napproval = \"never\"\n", key: "profiles.reviewer.approval", msg: "is not one of"},
		{name: "profile with a bad mode", file: "[profiles.reviewer]\ntools = []\nmode = \"on\"\n", key: "profiles.reviewer.mode", msg: "is not one of"},
		{name: "profile with a negative limit", file: "[profiles.reviewer]\ntools = []\nmax_tool_calls_per_batch = -2\n", key: "profiles.reviewer.max_tool_calls_per_batch", msg: "or more"},
		{name: "unknown profile field", file: "[profiles.reviewer]\ntools = []\nallow = [\"x\"]\n", key: "profiles.reviewer.allow", msg: "unknown key"},
		{name: "profile field of the wrong type", file: "[profiles.reviewer]\ntools = \"read_file\"\n", key: "profiles.reviewer.tools", msg: "expected a list of strings"},
		{name: "profile as a scalar", file: "[profiles]\nreviewer = true\n", key: "profiles.reviewer", msg: "expected a table"},
		// The journal.
		{name: "zero pre-image cap", file: "[journal]\nmax_preimage_bytes = 0\n", key: "journal.max_preimage_bytes", msg: "positive"},
		{name: "negative retention", file: "[journal]\nretention_days = -1\n", key: "journal.retention_days", msg: "positive"},
		{name: "unknown journal key", file: "[journal]\npth = \"x\"\n", key: "journal.pth", msg: `did you mean "journal.path"?`},
		{name: "bad retention from env", env: []string{"TOOLHOST_JOURNAL_RETENTION_DAYS=week"}, key: "journal.retention_days", msg: "env TOOLHOST_JOURNAL_RETENTION_DAYS"},
		{name: "bad token from env", env: []string{"TOOLHOST_SERVER_TOKEN=short"}, key: "server.token", msg: "at least 16"},

		// The environment.
		{name: "CFG-TOOLS-01 bad bool from env", env: []string{"TOOLHOST_TOOLS_ALLOW_PARALLEL=maybe"}, key: "tools.allow_parallel", msg: `env TOOLHOST_TOOLS_ALLOW_PARALLEL: tools.allow_parallel: expected a boolean (true or false), got "maybe"`},
		{name: "CFG-OUT-01 bad int from env", env: []string{"TOOLHOST_TOOLS_OUTPUT_MAX_BYTES=1k"}, key: "tools.output.max_bytes", msg: "env TOOLHOST_TOOLS_OUTPUT_MAX_BYTES"},
		{name: "bad override from env", env: []string{"TOOLHOST_TOOLS_OVERRIDES_RUN_COMMAND_DENIED=nope"}, key: "tools.overrides.run_command.denied", msg: "env TOOLHOST_TOOLS_OVERRIDES_RUN_COMMAND_DENIED"},
		{name: "unknown env variable", env: []string{"TOOLHOST_TOOLS_APROVAL_MODE=auto"}, key: "TOOLHOST_TOOLS_APROVAL_MODE", msg: "did you mean TOOLHOST_TOOLS_APPROVAL_MODE?"},
		{name: "unknown override field from env", env: []string{"TOOLHOST_TOOLS_OVERRIDES_RUN_COMMAND_TIMEOUT=5"}, key: "TOOLHOST_TOOLS_OVERRIDES_RUN_COMMAND_TIMEOUT", msg: "unknown key"},
		{name: "definitions cannot come from env", env: []string{"TOOLHOST_TOOLS_DEFINITIONS=x"}, key: "TOOLHOST_TOOLS_DEFINITIONS", msg: "unknown key"},
		{name: "CFG-TOOLS-01 bad enum from env is named by its variable", env: []string{"TOOLHOST_TOOLS_MODE=on"}, key: "tools.mode", msg: "env TOOLHOST_TOOLS_MODE: tools.mode"},
		{name: "CFG-APR-01 bad enum from env over a good file", file: "[tools.approval]\nmode = \"auto\"\n", env: []string{"TOOLHOST_TOOLS_APPROVAL_MODE=sometimes"}, key: "tools.approval.mode", msg: "env TOOLHOST_TOOLS_APPROVAL_MODE"},

		// Syntax.
		{name: "TOML syntax error", file: "[tools\n", msg: "toolhost.toml"},
		{name: "YAML syntax error", file: "tools: [\n", yaml: true, msg: "toolhost.yaml"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			fileName := "toolhost.toml"
			if tt.yaml {
				fileName = "toolhost.yaml"
			}
			if tt.file != "" {
				writeFile(t, dir, fileName, tt.file)
			}
			_, err := Load(Options{UserDir: dir, Dir: dir, Environ: tt.env})
			if err == nil {
				t.Fatal("Load succeeded")
			}
			if !strings.Contains(err.Error(), tt.msg) {
				t.Errorf("error %q, want it to contain %q", err, tt.msg)
			}
			var ke *KeyError
			if tt.key != "" && (!errors.As(err, &ke) || ke.Key != tt.key) {
				t.Errorf("error %v: want a KeyError for %s", err, tt.key)
			}
			if tt.file != "" && tt.env == nil && !strings.Contains(err.Error(), filepath.Join(dir, fileName)) {
				t.Errorf("error %q does not name the file", err)
			}
			if strings.Contains(tt.msg, "unknown key") && !errors.Is(err, ErrUnknownKey) {
				t.Errorf("error %v is not ErrUnknownKey", err)
			}
		})
	}
}

func TestFileDiscovery(t *testing.T) {
	t.Run("toml and yaml both present", func(t *testing.T) {
		dir := t.TempDir()
		toml := writeFile(t, dir, "toolhost.toml", "")
		yaml := writeFile(t, dir, "toolhost.yaml", "")
		_, err := Load(Options{UserDir: dir, Dir: dir})
		if err == nil || !strings.Contains(err.Error(), toml) || !strings.Contains(err.Error(), yaml) {
			t.Errorf("two files: %v", err)
		}
	})
	t.Run("explicit missing file", func(t *testing.T) {
		missing := filepath.Join(t.TempDir(), "missing.toml")
		_, err := Load(Options{Dir: t.TempDir(), File: missing})
		if !errors.Is(err, fs.ErrNotExist) || !strings.Contains(err.Error(), missing) {
			t.Errorf("missing explicit file: %v", err)
		}
	})
	t.Run("explicit file of unknown format", func(t *testing.T) {
		file := writeFile(t, t.TempDir(), "toolhost.json", "{}")
		if _, err := Load(Options{Dir: t.TempDir(), File: file}); err == nil || !strings.Contains(err.Error(), "unknown format") {
			t.Errorf("json file: %v", err)
		}
	})
	t.Run("explicit file wins over the directory's", func(t *testing.T) {
		dir := t.TempDir()
		writeFile(t, dir, "toolhost.toml", "[tools]\nmode = \"parse_only\"\n")
		explicit := writeFile(t, t.TempDir(), "custom.toml", "[tools]\nmode = \"disabled\"\n")
		l, err := Load(Options{UserDir: dir, Dir: dir, File: explicit})
		if err != nil || l.Config.Tools.Mode != ModeDisabled || l.File != explicit {
			t.Errorf("explicit file: %v %+v", err, l)
		}
	})
	t.Run("empty known tables", func(t *testing.T) {
		for name, content := range map[string]string{
			"toolhost.toml": "[tools]\n[tools.sandbox]\n[tools.overrides]\n[tools.overrides.read_file]\n",
			"toolhost.yaml": "tools:\n  sandbox:\n  approval: {}\n  overrides: {read_file: {}}\n",
		} {
			dir := t.TempDir()
			writeFile(t, dir, name, content)
			l, err := Load(Options{UserDir: dir, Dir: dir})
			if err != nil || !reflect.DeepEqual(l.Config, withRoots(dir)) {
				t.Errorf("%s: %v %+v", name, err, l)
			}
		}
	})
	t.Run("empty file", func(t *testing.T) {
		dir := t.TempDir()
		writeFile(t, dir, "toolhost.yml", "")
		l, err := Load(Options{UserDir: dir, Dir: dir})
		if err != nil || !reflect.DeepEqual(l.Config, withRoots(dir)) {
			t.Errorf("empty file: %v %+v", err, l)
		}
	})
}

// Validate on its own: the defaults pass, and a Config built by a caller is
// checked the same way as a loaded one.
func TestValidate(t *testing.T) {
	if err := Default().Validate(); err != nil {
		t.Fatalf("Default().Validate() = %v", err)
	}
	tests := []struct {
		name   string
		change func(*Config)
		key    string
	}{
		{"CFG-TOOLS-01 mode", func(c *Config) { c.Tools.Mode = "" }, "tools.mode"},
		{"CFG-APR-01 approval mode", func(c *Config) { c.Tools.Approval.Mode = "Prompt" }, "tools.approval.mode"},
		{"CFG-TMO-01 timeout", func(c *Config) { c.Tools.Timeouts.FileOperationsSeconds = 0 }, "tools.timeouts.file_operations_seconds"},
		{"CFG-OUT-01 capacity", func(c *Config) { c.Tools.Output.AvailableCapacityBytes = -5 }, "tools.output.available_capacity_bytes"},
		{"override name", func(c *Config) { c.Tools.Overrides["Bad-Name"] = Override{} }, "tools.overrides.Bad-Name"},
		{"CFG-TOOLS-02 long name", func(c *Config) {
			c.Tools.Definitions = []Definition{{Name: "a" + strings.Repeat("b", 64), Parameters: map[string]any{"type": "object"}}}
		}, "tools.definitions[0].name"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := Default()
			tt.change(c)
			var ke *KeyError
			if err := c.Validate(); !errors.As(err, &ke) || ke.Key != tt.key {
				t.Errorf("Validate() = %v, want a KeyError for %s", err, tt.key)
			}
		})
	}
}

// Keys names every key a file may set, the tables' keys included: each
// one loads from a file, and a key that is not in Keys does not.
func TestKeysAreWhatLoadAccepts(t *testing.T) {
	keys := Keys()
	if !sort.StringsAreSorted(keys) {
		t.Errorf("Keys is not sorted: %q", keys)
	}
	for _, key := range keys {
		if strings.Contains(key, "<") {
			key = strings.NewReplacer("<tool>", "read_file", "<name>", "x").Replace(key)
		}
		if key == "tools.definitions" {
			continue // an array of tables, checked by TestFullFile
		}
		if _, ok := keyKinds()[key]; ok {
			continue
		}
		if _, ok := overrideKind(key); ok {
			continue
		}
		if _, ok := profileKind(key); ok {
			continue
		}
		if strings.HasPrefix(key, "extism.x.") {
			continue
		}
		t.Errorf("Keys lists %s, which Load does not accept", key)
	}
	want := len(keyKinds()) + 1 + len(overrideFields())
	if got := len(keys); got < want {
		t.Errorf("Keys lists %d keys, want at least %d", got, want)
	}
}
