// Package config loads toolhost's configuration: the SRD's section 6 keys,
// from defaults, then the operator's TOML or YAML file, then TOOLHOST_*
// environment variables, then a trusted project file that may only narrow
// them, recording where every value came from.
//
// A file the tools it governs could write must never widen what they may
// do: only the operator's file (--config, $TOOLHOST_CONFIG or the user
// configuration directory) and environment may; a file in the working
// directory is ignored unless the operator trusted the directory (Trust),
// and then NarrowedBy keeps only what makes the policy stricter.
//
// It depends on no part of toolhost it configures, only on leaf packages
// whose vocabulary it shares: the confinement's contract (spec, whose
// modes and limits run_command's keys are), the proxy's domain check and
// the list of where credentials are kept. The engine takes its modes as
// they are; package host converts the rest of a Config, in one place,
// into what the sandbox, the engine and the confinement take. Reading and merging is
// viper's; on top of it this package refuses unknown keys and wrong types
// with messages that name the key and the file, because a misspelled
// approval setting that is silently ignored is a security bug.
package config

// Mode is tools.mode (CFG-TOOLS-01): whether tools are offered and run.
// The engine takes it as it is (engine.ToolsMode).
type Mode string

// Tools modes.
const (
	// ModeDisabled offers no tools and answers every call with an error.
	ModeDisabled Mode = "disabled"
	// ModeParseOnly offers the tools and records calls as pending: a
	// person supplies their results.
	ModeParseOnly Mode = "parse_only"
	// ModeEnabled validates, gates and runs calls.
	ModeEnabled Mode = "enabled"
)

// ApprovalMode is tools.approval.mode (CFG-APR-01): how calls that are
// neither denied nor required by their tool to be confirmed are treated.
// The engine takes it as it is (engine.ApprovalMode).
type ApprovalMode string

// Approval modes.
const (
	ApprovalAuto   ApprovalMode = "auto"   // run unless denied
	ApprovalPrompt ApprovalMode = "prompt" // ask per the allowlist and prompt_side_effects
	ApprovalDeny   ApprovalMode = "deny"   // deny unless allowlisted
)

// ApprovalsValues are server.approvals' values, from the one letting
// the MCP client decide most to the one letting it decide nothing.
func ApprovalsValues() []string { return []string{"elicitation", "both", "console"} }

// Config is the whole configuration.
type Config struct {
	Tools   Tools   `mapstructure:"tools"`
	Server  Server  `mapstructure:"server"`
	Journal Journal `mapstructure:"journal"`
	// Profiles are named narrowings of the policy, one per agent role:
	// a connection under a profile sees and runs only
	// its tools, under its stricter approval.
	Profiles map[string]Profile `mapstructure:"profiles"`
	// Extism are the [extism.<name>] tables: what each Extism MCP plugin
	// is granted. Only the operator's file sets them.
	Extism map[string]ExtismPlugin `mapstructure:"extism"`
}

// Journal is [journal]: where toolhost records its batches for crash
// recovery and undo, and how much it keeps.
type Journal struct {
	// Path is the journal's database file; "" means journal.db in the
	// state directory, and ":memory:" keeps it in memory (tests). Only the
	// operator's configuration sets it: a project must not move the record
	// of what ran out of the operator's sight.
	Path string `mapstructure:"path"`
	// MaxPreimageBytes caps the previous content kept for one file change;
	// a larger change is journaled as not undoable.
	MaxPreimageBytes int `mapstructure:"max_preimage_bytes"`
	// RetentionDays is how long finished batches and their pre-images are
	// kept.
	RetentionDays int `mapstructure:"retention_days"`
}

// Server is [server]: what toolhost serve takes from the operator.
type Server struct {
	// Token fixes the HTTP server's bearer token (at least 16 characters)
	// instead of a new one at each start; $TOOLHOST_TOKEN wins over it.
	Token string `mapstructure:"token"`
	// ApprovalHoldSeconds is how long a call whose MCP client cannot be
	// asked waits for a decision through the batch API before it is
	// denied; 0 denies it at once.
	ApprovalHoldSeconds int `mapstructure:"approval_hold_seconds"`
	// Approvals is who may decide a call that needs approval:
	// "elicitation" asks the MCP client (and holds the call for the
	// console when it cannot be asked), "console" never asks the client,
	// "both" does both and takes the first answer.
	Approvals string `mapstructure:"approvals"`
}

// Profile is one [profiles.<name>] table. Every field can only narrow
// the policy: a profile never offers a tool the configuration denies or
// approves a call the configuration would ask about.
type Profile struct {
	Description string `mapstructure:"description"`
	// Tools are the only tools the profile lists and runs.
	Tools []string `mapstructure:"tools"`
	// Mode lowers tools.mode; "" keeps it.
	Mode Mode `mapstructure:"mode"`
	// Approval raises tools.approval.mode; "" keeps it.
	Approval ApprovalMode `mapstructure:"approval"`
	// Approvals "console" takes the decisions of the profile's calls
	// away from the MCP client (server.approvals); "" keeps the
	// server's.
	Approvals string `mapstructure:"approvals"`
	// ConfirmAll asks before every call, read-only ones included.
	ConfirmAll bool `mapstructure:"confirm_all"`
	// Sequential runs a batch's calls one at a time.
	Sequential bool `mapstructure:"sequential"`
	// MaxToolCallsPerBatch lowers tools.max_tool_calls_per_batch; 0 keeps it.
	MaxToolCallsPerBatch int `mapstructure:"max_tool_calls_per_batch"`
	// Sandbox makes tools.run_command.sandbox stricter ("read-only", or
	// "workspace-write" where the policy's is "off"); "" keeps it. The
	// engine applies profiles through Confiner.Narrow; RunCommand.forProfile
	// mirrors that order for validation only.
	Sandbox CommandSandbox `mapstructure:"sandbox"`
	// Network makes tools.run_command.network stricter ("off", or
	// "allowlist" where the policy's is "on"); "" keeps it.
	Network CommandNetwork `mapstructure:"network"`
}

// Tools is the [tools] table.
type Tools struct {
	Mode                         Mode                `mapstructure:"mode"`
	AllowParallel                bool                `mapstructure:"allow_parallel"`
	MaxToolCallsPerBatch         int                 `mapstructure:"max_tool_calls_per_batch"`
	MaxToolIterationsPerUserTurn int                 `mapstructure:"max_tool_iterations_per_user_turn"`
	MaxToolArgsBytes             int                 `mapstructure:"max_tool_args_bytes"`
	Sandbox                      Sandbox             `mapstructure:"sandbox"`
	Timeouts                     Timeouts            `mapstructure:"timeouts"`
	Output                       Output              `mapstructure:"output"`
	Environment                  Environment         `mapstructure:"environment"`
	Approval                     Approval            `mapstructure:"approval"`
	ReadFile                     ReadFile            `mapstructure:"read_file"`
	ApplyPatch                   ApplyPatch          `mapstructure:"apply_patch"`
	RunCommand                   RunCommand          `mapstructure:"run_command"`
	Jobs                         Jobs                `mapstructure:"jobs"`
	Overrides                    map[string]Override `mapstructure:"overrides"`
	Definitions                  []Definition        `mapstructure:"definitions"`
}

// Sandbox is [tools.sandbox] (CFG-SBX-01).
type Sandbox struct {
	AllowedRoots         []string `mapstructure:"allowed_roots"`
	DeniedPatterns       []string `mapstructure:"denied_patterns"`
	AllowAbsolute        bool     `mapstructure:"allow_absolute"`
	IncludeDefaultDenies bool     `mapstructure:"include_default_denies"`
	ReadOnlyPatterns     []string `mapstructure:"read_only_patterns"`
	// MaxPathBytes, MaxPathComponentBytes and MaxPathDepth bound the paths
	// tools name, so that one call cannot build a directory chain no
	// other program can handle.
	MaxPathBytes          int `mapstructure:"max_path_bytes"`
	MaxPathComponentBytes int `mapstructure:"max_path_component_bytes"`
	MaxPathDepth          int `mapstructure:"max_path_depth"`
}

// Timeouts is [tools.timeouts] (CFG-TMO-01).
type Timeouts struct {
	DefaultSeconds        int `mapstructure:"default_seconds"`
	FileOperationsSeconds int `mapstructure:"file_operations_seconds"`
	ShellCommandsSeconds  int `mapstructure:"shell_commands_seconds"`
}

// Output is [tools.output] (CFG-OUT-01).
type Output struct {
	MaxBytes               int `mapstructure:"max_bytes"`
	AvailableCapacityBytes int `mapstructure:"available_capacity_bytes"`
}

// Environment is [tools.environment] (CFG-ENV-01): what the commands
// tools start do not see (Sanitize).
type Environment struct {
	// Denylist adds globs of variable names to DefaultEnvDenylist.
	Denylist []string `mapstructure:"denylist"`
	// Keep names variables that the secret-looking-name, value-shape and
	// URL-credential rules would hide but commands need (SSH_AUTH_SOCK);
	// the denylist still wins.
	Keep []string `mapstructure:"keep"`
}

// Approval is [tools.approval] (CFG-APR-01).
type Approval struct {
	Enabled             bool         `mapstructure:"enabled"`
	Mode                ApprovalMode `mapstructure:"mode"`
	Allowlist           []string     `mapstructure:"allowlist"`
	Denylist            []string     `mapstructure:"denylist"`
	PromptSideEffects   bool         `mapstructure:"prompt_side_effects"`
	AutoApproveNewFiles bool         `mapstructure:"auto_approve_new_files"`
	// CodePatterns are globs of paths that make tools run code when they
	// are written (.envrc, .vscode/**, shell rc files): a call writing
	// one is never auto-approved as only creating new files.
	CodePatterns []string `mapstructure:"code_patterns"`
}

// ReadFile is [tools.read_file] (CFG-READ-01).
type ReadFile struct {
	MaxFileReadBytes int `mapstructure:"max_file_read_bytes"`
	MaxScanBytes     int `mapstructure:"max_scan_bytes"`
}

// ApplyPatch is [tools.apply_patch] (CFG-PATCH-01).
type ApplyPatch struct {
	MaxPatchBytes int `mapstructure:"max_patch_bytes"`
	// MaxFiles is the most files one patch may change.
	MaxFiles int `mapstructure:"max_files"`
}

// Override is [tools.overrides.<tool>]; nil fields keep the manifest's.
type Override struct {
	TimeoutSeconds   *int  `mapstructure:"timeout_seconds"`
	RequiresApproval *bool `mapstructure:"requires_approval"`
	Denied           *bool `mapstructure:"denied"`
}

// Definition is one [[tools.definitions]] entry (CFG-TOOLS-02).
type Definition struct {
	Name        string         `mapstructure:"name"`
	Description string         `mapstructure:"description"`
	Parameters  map[string]any `mapstructure:"parameters"`
}

// Default is the SRD's defaults, with toolhost's choices where it has none:
// tools run (enabled), side effects ask, run_command is denied.
func Default() *Config {
	return &Config{Tools: Tools{
		Mode:                         ModeEnabled,
		MaxToolCallsPerBatch:         8,
		MaxToolIterationsPerUserTurn: 4,
		MaxToolArgsBytes:             256 << 10,
		Sandbox: Sandbox{
			AllowedRoots:          []string{"."},
			DeniedPatterns:        []string{},
			IncludeDefaultDenies:  true,
			ReadOnlyPatterns:      []string{"**/.git/**", "**/.git"},
			MaxPathBytes:          4096,
			MaxPathComponentBytes: 255,
			MaxPathDepth:          64,
		},
		Timeouts:    Timeouts{DefaultSeconds: 30, FileOperationsSeconds: 30, ShellCommandsSeconds: 300},
		Output:      Output{MaxBytes: 100 << 10, AvailableCapacityBytes: 64 << 10},
		Environment: Environment{Denylist: []string{}, Keep: []string{}},
		Approval: Approval{
			Enabled: true, Mode: ApprovalPrompt,
			Allowlist: []string{"read_file"}, Denylist: []string{"run_command"},
			PromptSideEffects: true, AutoApproveNewFiles: true,
			CodePatterns: DefaultCodePatterns(),
		},
		ReadFile:   ReadFile{MaxFileReadBytes: 200 << 10, MaxScanBytes: 2 << 20},
		ApplyPatch: ApplyPatch{MaxPatchBytes: 512 << 10, MaxFiles: 1000},
		RunCommand: defaultRunCommand(),
		Jobs:       defaultJobs(),
		Overrides:  map[string]Override{},
	},
		Server:   Server{ApprovalHoldSeconds: 600, Approvals: "elicitation"},
		Journal:  Journal{MaxPreimageBytes: 8 << 20, RetentionDays: 30},
		Profiles: map[string]Profile{},
		Extism:   map[string]ExtismPlugin{},
	}
}
