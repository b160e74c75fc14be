package config

import (
	"errors"
	"os"
	"path/filepath"
	"reflect"
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
	l, err := Load(Options{Dir: dir})
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

// InitFile documents every key and loads to the defaults.
func TestInitFileIsTheDefaults(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, dir, "toolhost.toml", InitFile())
	l, err := Load(Options{Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(l.Config, withRoots(dir)) {
		t.Errorf("init file loads to\n%+v\nwant\n%+v", l.Config.Tools, withRoots(dir).Tools)
	}
	for key := range keyKinds() {
		name := key[strings.LastIndexByte(key, '.')+1:]
		if !strings.Contains(InitFile(), "\n"+name+" = ") {
			t.Errorf("InitFile lacks %s", key)
		}
	}
}

const fullTOML = `
[tools]
mode = "parse_only"
allow_parallel = true
max_tool_calls_per_batch = 3

[tools.sandbox]
allowed_roots = ["src", "/abs/other"]
denied_patterns = ["**/*.secret"]

[tools.timeouts]
shell_commands_seconds = 10

[tools.approval]
mode = "deny"
allowlist = ["read_file", "list_directory"]

[tools.overrides.run_command]
timeout_seconds = 600
requires_approval = true

[[tools.definitions]]
name = "lookup_ticket"
description = "Look up a ticket"
parameters = { type = "object", properties = { id = { type = "string", minLength = 1 } }, additionalProperties = false }
`

const fullYAML = `
tools:
  mode: parse_only
  allow_parallel: true
  max_tool_calls_per_batch: 3
  sandbox:
    allowed_roots: [src, /abs/other]
    denied_patterns: ["**/*.secret"]
  timeouts:
    shell_commands_seconds: 10
  approval:
    mode: deny
    allowlist: [read_file, list_directory]
  overrides:
    run_command:
      timeout_seconds: 600
      requires_approval: true
  definitions:
    - name: lookup_ticket
      description: Look up a ticket
      parameters:
        type: object
        properties: {id: {type: string, minLength: 1}}
        additionalProperties: false
`

// CFG-TOOLS-01/02, CFG-SBX-01, CFG-TMO-01, CFG-APR-01: a full file, in
// TOML and in YAML, loads to the same configuration.
func TestFullFile(t *testing.T) {
	for name, content := range map[string]string{"toolhost.toml": fullTOML, "toolhost.yaml": fullYAML} {
		t.Run(name, func(t *testing.T) {
			dir := t.TempDir()
			file := writeFile(t, dir, name, content)
			l, err := Load(Options{Dir: dir})
			if err != nil {
				t.Fatal(err)
			}
			want := withRoots(dir)
			w := &want.Tools
			w.Mode, w.AllowParallel, w.MaxToolCallsPerBatch = ModeParseOnly, true, 3
			w.Sandbox.AllowedRoots = []string{filepath.Join(dir, "src"), "/abs/other"}
			w.Sandbox.DeniedPatterns = []string{"**/*.secret"}
			w.Timeouts.ShellCommandsSeconds = 10
			w.Approval.Mode, w.Approval.Allowlist = ApprovalDeny, []string{"read_file", "list_directory"}
			six, yes := 600, true
			w.Overrides = map[string]Override{"run_command": {TimeoutSeconds: &six, RequiresApproval: &yes}}
			w.Definitions = []Definition{{Name: "lookup_ticket", Description: "Look up a ticket", Parameters: map[string]any{
				"type": "object", "additionalProperties": false,
				"properties": map[string]any{"id": map[string]any{"type": "string", "minLength": l.Config.Tools.Definitions[0].Parameters["properties"].(map[string]any)["id"].(map[string]any)["minLength"]}},
			}}}
			if !reflect.DeepEqual(l.Config, want) {
				t.Errorf("got  %+v\nwant %+v", l.Config.Tools, want.Tools)
			}
			if l.File != file || l.Sources["tools.approval.mode"] != "file "+file || l.Sources["tools.output.max_bytes"] != "default" {
				t.Errorf("file %q sources %v", l.File, l.Sources)
			}
		})
	}
}

// The viper gotcha (DESIGN.md §7): keys set only by the environment, nested
// ones included, must take effect; the environment beats the file.
func TestEnvironmentOverrides(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, dir, "toolhost.toml", "[tools.approval]\nmode = \"deny\"\n")
	env := []string{
		"TOOLHOST_TOOLS_APPROVAL_MODE=auto",                           // beats the file
		"TOOLHOST_TOOLS_SANDBOX_ALLOW_ABSOLUTE=true",                  // nested bool, not in the file
		"TOOLHOST_TOOLS_TIMEOUTS_SHELL_COMMANDS_SECONDS=10",           // nested int
		"TOOLHOST_TOOLS_APPROVAL_ALLOWLIST=read_file, list_directory", // list
		"TOOLHOST_TOOLS_ENVIRONMENT_DENYLIST=",                        // empty list
		"TOOLHOST_TOOLS_OVERRIDES_RUN_COMMAND_TIMEOUT_SECONDS=7",      // a tool with underscores
		"TOOLHOST_TOOLS_OVERRIDES_WRITE_FILE_DENIED=true",
		"TOOLHOST_CACHE_DIR=/elsewhere", // not a configuration key: ignored
		"HOME=/root",
	}
	l, err := Load(Options{Dir: dir, Environ: env})
	if err != nil {
		t.Fatal(err)
	}
	tl := l.Config.Tools
	if tl.Approval.Mode != ApprovalAuto || !tl.Sandbox.AllowAbsolute || tl.Timeouts.ShellCommandsSeconds != 10 ||
		!reflect.DeepEqual(tl.Approval.Allowlist, []string{"read_file", "list_directory"}) || len(tl.Environment.Denylist) != 0 {
		t.Errorf("env not applied: %+v", tl)
	}
	if o := tl.Overrides["run_command"]; o.TimeoutSeconds == nil || *o.TimeoutSeconds != 7 {
		t.Errorf("override run_command = %+v", o)
	}
	if o := tl.Overrides["write_file"]; o.Denied == nil || !*o.Denied {
		t.Errorf("override write_file = %+v", o)
	}
	if got := l.Sources["tools.approval.mode"]; got != "env TOOLHOST_TOOLS_APPROVAL_MODE" {
		t.Errorf("source %q", got)
	}
	show := l.Show()
	for _, want := range []string{
		`tools.approval.mode = "auto"  # env TOOLHOST_TOOLS_APPROVAL_MODE`,
		`tools.overrides.run_command.timeout_seconds = 7  # env TOOLHOST_TOOLS_OVERRIDES_RUN_COMMAND_TIMEOUT_SECONDS`,
		`tools.output.max_bytes = 102400  # default`,
		`tools.approval.allowlist = ["read_file", "list_directory"]  # env`,
	} {
		if !strings.Contains(show, want) {
			t.Errorf("Show lacks %q:\n%s", want, show)
		}
	}
}

func TestErrors(t *testing.T) {
	tests := []struct {
		name string
		file string // toolhost.toml content; "" for none
		env  []string
		key  string
		msg  string
	}{
		{"unknown top-level key", "[other]\nx = 1\n", nil, "other.x", "unknown key"},
		{"misspelled nested key", "[tools.approval]\nmod = \"auto\"\n", nil, "tools.approval.mod", `did you mean "tools.approval.mode"?`},
		{"unknown override field", "[tools.overrides.read_file]\ntimeout = 3\n", nil, "tools.overrides.read_file.timeout", "unknown key"},
		{"string for int", "[tools]\nmax_tool_calls_per_batch = \"eight\"\n", nil, "tools.max_tool_calls_per_batch", `expected an integer, got "eight"`},
		{"int for list", "[tools.approval]\nallowlist = 3\n", nil, "tools.approval.allowlist", "expected a list of strings"},
		{"list of ints", "[tools.approval]\nallowlist = [1]\n", nil, "tools.approval.allowlist", "item 1 is 1"},
		{"bool for string", "[tools]\nmode = true\n", nil, "tools.mode", "expected a string"},
		{"bad enum", "[tools]\nmode = \"on\"\n", nil, "tools.mode", `"on" is not one of`},
		{"bad approval enum", "[tools.approval]\nmode = \"ask\"\n", nil, "tools.approval.mode", "is not one of"},
		{"zero limit", "[tools]\nmax_tool_calls_per_batch = 0\n", nil, "tools.max_tool_calls_per_batch", "positive"},
		{"bad glob", "[tools.sandbox]\ndenied_patterns = [\"[x\"]\n", nil, "tools.sandbox.denied_patterns", "not a valid glob"},
		{"bad env glob", "[tools.environment]\ndenylist = [\"[\"]\n", nil, "tools.environment.denylist", "not a valid variable-name glob"},
		{"duplicate definition", "[[tools.definitions]]\nname = \"a\"\nparameters = { type = \"object\" }\n[[tools.definitions]]\nname = \"a\"\nparameters = { type = \"object\" }\n", nil, "tools.definitions[1].name", "defined twice"},
		{"definition without object schema", "[[tools.definitions]]\nname = \"a\"\n", nil, "tools.definitions[0].parameters", `type = "object"`},
		{"unknown definition key", "[[tools.definitions]]\nname = \"a\"\nparams = {}\n", nil, "tools.definitions", `unknown key "params"`},
		{"bad bool from env", "", []string{"TOOLHOST_TOOLS_ALLOW_PARALLEL=maybe"}, "tools.allow_parallel", `expected a boolean (true or false), got "maybe"`},
		{"bad int from env", "", []string{"TOOLHOST_TOOLS_OUTPUT_MAX_BYTES=1k"}, "tools.output.max_bytes", "expected an integer"},
		{"unknown env variable", "", []string{"TOOLHOST_TOOLS_APROVAL_MODE=auto"}, "TOOLHOST_TOOLS_APROVAL_MODE", "unknown key"},
		{"bad value from env is named by its variable", "", []string{"TOOLHOST_TOOLS_MODE=on"}, "tools.mode", "env TOOLHOST_TOOLS_MODE"},
		{"syntax error", "[tools\n", nil, "", "toolhost.toml"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			if tt.file != "" {
				writeFile(t, dir, "toolhost.toml", tt.file)
			}
			_, err := Load(Options{Dir: dir, Environ: tt.env})
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
			if tt.file != "" && tt.env == nil && !strings.Contains(err.Error(), "toolhost.toml") {
				t.Errorf("error %q does not name the file", err)
			}
		})
	}
}

func TestFileDiscovery(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, dir, "toolhost.toml", "")
	writeFile(t, dir, "toolhost.yaml", "")
	if _, err := Load(Options{Dir: dir}); err == nil || !strings.Contains(err.Error(), "keep one") {
		t.Errorf("two files: %v", err)
	}
	if _, err := Load(Options{Dir: dir, File: filepath.Join(dir, "missing.toml")}); err == nil || !strings.Contains(err.Error(), "missing.toml") {
		t.Errorf("missing explicit file: %v", err)
	}
	explicit := writeFile(t, t.TempDir(), "custom.toml", "[tools]\nmode = \"disabled\"\n")
	l, err := Load(Options{Dir: dir, File: explicit})
	if err != nil || l.Config.Tools.Mode != ModeDisabled || l.File != explicit {
		t.Errorf("explicit file: %v %+v", err, l)
	}
}
