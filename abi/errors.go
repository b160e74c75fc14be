package abi

import "encoding/json"

// ErrorKind mirrors the SRD's ToolError variants (NFR-ERR-01), plus the
// kinds the host adds (Panicked, DeniedByUser).
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
	// KindDeniedByUser is a call that needed approval and was refused by
	// whoever was asked: a person at a terminal, an MCP client's answer to
	// its question, a decision through the batch API. It is never a
	// policy's refusal (SandboxViolation), nor a call nobody answered for
	// (SandboxViolation with reason NotAsked). The details' "denied_by"
	// names who answered.
	KindDeniedByUser ErrorKind = "DeniedByUser"
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
	// DenialByUser was the reason of a person's denial.
	//
	// Deprecated: a person's or client's denial is reported with kind
	// KindDeniedByUser, not as a SandboxViolation.
	DenialByUser   DenialReason = "DeniedByUser"
	DenialReadOnly DenialReason = "ReadOnly" // a write to a read-only path
	DenialNotNamed DenialReason = "NotNamed" // a write to a path the call's arguments did not name
	// DenialProtected is a write to toolhost's configuration or lock file
	// or to git's internals, at any depth: refused whatever the policy.
	DenialProtected DenialReason = "Protected"
	// DenialNotAsked is a call that needed a person's approval when no
	// answer came: nobody could be asked (no terminal, a client that
	// cannot elicit, no approver connected), or the question went
	// unanswered (it timed out, asking failed, the batch ended first).
	// It is not a person's no (KindDeniedByUser).
	DenialNotAsked DenialReason = "NotAsked"
)

// HostError is the staged response of a failed host function call. The SDK
// turns it into a tool error of the same kind when a plugin returns it.
type HostError struct {
	Kind    ErrorKind       `json:"kind"`
	Message string          `json:"message"`
	Details json.RawMessage `json:"details,omitempty"`
}
