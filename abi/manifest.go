package abi

import "encoding/json"

// RiskLevel is shown to a person approving a call (FR-APR-03).
type RiskLevel string

// Risk levels.
const (
	RiskLow    RiskLevel = "low"
	RiskMedium RiskLevel = "medium"
	RiskHigh   RiskLevel = "high"
)

// TimeoutClass picks which configured timeout applies when a manifest
// gives no explicit one (CFG-TMO-01a).
type TimeoutClass string

// Timeout classes.
const (
	TimeoutDefault TimeoutClass = "default"
	TimeoutFile    TimeoutClass = "file_operations"
	TimeoutShell   TimeoutClass = "shell_commands"
)

// Manifest describes a tool. The describe export returns it as JSON.
type Manifest struct {
	ABI         string          `json:"abi"`
	Name        string          `json:"name"`
	Version     string          `json:"version"`
	Description string          `json:"description"`
	Parameters  json.RawMessage `json:"parameters"` // JSON Schema, Draft 2020-12
	// OutputSchema, when set, is the JSON Schema (Draft 2020-12, of
	// type "object") of the structured object every successful call
	// gives beside its text (Result.Structured). MCP clients are given
	// it as the tool's outputSchema; the host fails a call whose object
	// does not match it, or that gives none.
	OutputSchema json.RawMessage `json:"output_schema,omitempty"`

	SideEffecting    bool         `json:"side_effecting"`
	RequiresApproval bool         `json:"requires_approval"`
	RiskLevel        RiskLevel    `json:"risk_level"`
	TimeoutMillis    int64        `json:"timeout_ms,omitempty"` // 0: use TimeoutClass
	TimeoutClass     TimeoutClass `json:"timeout_class,omitempty"`

	// PathArgs names the arguments that are paths; the host checks them
	// against the sandbox before the plugin runs. Each is a selector:
	// object keys separated by "/", with "*" for every element of an
	// array ("path", "paths/*", "edits/*/path").
	PathArgs []string `json:"path_args,omitempty"`
	// CreateArgs names path arguments the call writes. The planner refuses
	// a call writing a read-only path before anyone is asked, and when none
	// of them exists yet the call only creates files, which policy may let
	// run without a prompt (tools.approval.auto_approve_new_files);
	// replacing a file still asks.
	CreateArgs []string `json:"create_args,omitempty"`
	// WritesUnnamedPaths says the tool writes files no path argument names
	// (apply_patch: the paths are inside the patch text). Without it, a
	// tool holding fs.write may write only the paths its create_args name
	// (or, when it has none, its path_args); with it, the host lets an
	// approved call write wherever the sandbox allows, and never approves
	// one as only creating new files.
	WritesUnnamedPaths bool `json:"writes_unnamed_paths,omitempty"`
	// ReadsUnderPathArgs says the tool reads what it finds below the
	// directories its path arguments name (list_directory; a search, a
	// glob). Without it, a call may read, stat, list or diff against only
	// the paths its arguments name (and, for a tool that writes unnamed
	// paths, the files it writes); with it, anything below them too.
	ReadsUnderPathArgs bool `json:"reads_under_path_args,omitempty"`
	// DescribesLinks says the tool describes a symbolic link its path
	// argument ends in, rather than what it leads to (file_info, through
	// fs_lstat). Such an argument that leads outside the roots or to a
	// denied path is then checked as the link itself, so the tool can
	// say so (without where); every host function but fs_lstat still
	// follows it there and refuses. The host honours it only for a tool
	// without side effects that holds neither fs.write, fs.delete nor
	// proc.exec.
	DescribesLinks bool `json:"describes_links,omitempty"`
	// Nondeterministic says two identical calls on identical files may
	// give different results (a command's output, a clock). Without it,
	// toolhost test expects the same result each time.
	Nondeterministic bool `json:"nondeterministic,omitempty"`
	// OpenWorld says the tool reaches beyond the sandbox's files (the
	// network). Capabilities imply it too; a host sets it for a plugin
	// it grants network hosts, whatever the plugin says.
	OpenWorld bool `json:"open_world,omitempty"`
	// Additive says the tool only adds: it creates files or directories
	// and never replaces or removes what exists (create_directory). The
	// host holds it to that (fs_commit refuses a replacement, a removal
	// or a move from it), so such a tool holding fs.write may stay low
	// risk, and clients are told it is not destructive.
	Additive bool `json:"additive,omitempty"`
	// Idempotent says a second identical call changes nothing more than
	// the first (creating a directory that then exists). It is only told
	// to clients (MCP's idempotentHint); a tool without side effects is
	// idempotent anyway.
	Idempotent   bool         `json:"idempotent,omitempty"`
	Capabilities []Capability `json:"capabilities,omitempty"`
}

// Hints are what clients are told about a tool's behaviour (MCP's tool
// annotations), so that their plan or review modes let the read-only
// tools through and ask about the rest.
type Hints struct {
	ReadOnly, Destructive, Idempotent, OpenWorld bool
}

// Hints derives the behaviour hints from the manifest. A tool without
// side effects is read-only, and reading again changes nothing
// (idempotent). A side-effecting tool may replace or remove what was
// there (destructive) unless it is additive, which the host enforces;
// it is idempotent only when its manifest says so. A tool's world is
// closed when it reaches only the sandbox's files (removing and moving
// them included); any other capability (running a command: any program
// the root holds, with effects no manifest can list) opens it.
func (m Manifest) Hints() Hints {
	open := m.OpenWorld
	for _, c := range m.Capabilities {
		if c != CapFSRead && c != CapFSWrite && c != CapFSList && c != CapFSDelete && c != CapFSSearch {
			open = true
		}
	}
	return Hints{
		ReadOnly:    !m.SideEffecting,
		Destructive: m.SideEffecting && !m.Additive,
		Idempotent:  !m.SideEffecting || m.Idempotent,
		OpenWorld:   open,
	}
}
