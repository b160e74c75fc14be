package abi

import "encoding/json"

// ErrorKind mirrors the SRD's ToolError variants (NFR-ERR-01), plus the
// kinds the host adds (Panicked, Denied).
type ErrorKind string

// Error kinds.
const (
	KindBadArgs             ErrorKind = "BadArgs"
	KindTimeout             ErrorKind = "Timeout"
	KindSandboxViolation    ErrorKind = "SandboxViolation"
	KindExecutionFailed     ErrorKind = "ExecutionFailed"
	KindCancelled           ErrorKind = "Cancelled"
	KindUnknownTool         ErrorKind = "UnknownTool"
	KindDuplicateTool       ErrorKind = "DuplicateTool"
	KindDuplicateToolCallID ErrorKind = "DuplicateToolCallId"
	KindPatchFailed         ErrorKind = "PatchFailed"
	KindStaleFile           ErrorKind = "StaleFile"
	KindPanicked            ErrorKind = "Panicked"
)

// DenialReason mirrors the SRD's DenialReason (NFR-ERR-02); it is carried in
// the details of a SandboxViolation as "reason".
type DenialReason string

// Denial reasons.
const (
	DenialDenylisted           DenialReason = "Denylisted"
	DenialDisabled             DenialReason = "Disabled"
	DenialPathOutsideSandbox   DenialReason = "PathOutsideSandbox"
	DenialDeniedPatternMatched DenialReason = "DeniedPatternMatched"
	DenialLimitsExceeded       DenialReason = "LimitsExceeded"
	DenialAbsolutePath         DenialReason = "AbsolutePath"
	DenialTraversal            DenialReason = "Traversal"
	DenialInvalidPath          DenialReason = "InvalidPath"
	DenialNotAllowlisted       DenialReason = "NotAllowlisted" // approval mode deny
	DenialByUser               DenialReason = "DeniedByUser"
	DenialReadOnly             DenialReason = "ReadOnly" // a write to a read-only path
	DenialNotNamed             DenialReason = "NotNamed" // a write to a path the call's arguments did not name
	// DenialProtected is a write to toolhost's configuration or lock file
	// or to git's internals, at any depth: refused whatever the policy.
	DenialProtected DenialReason = "Protected"
	// DenialNotAsked is a call that needed a person's approval when
	// nobody could be asked (no terminal, a client that cannot elicit, no
	// approver connected): not a person's no.
	DenialNotAsked DenialReason = "NotAsked"
)

// HostError is the staged response of a failed host function call. The SDK
// turns it into a tool error of the same kind when a plugin returns it.
type HostError struct {
	Kind    ErrorKind       `json:"kind"`
	Message string          `json:"message"`
	Details json.RawMessage `json:"details,omitempty"`
}
