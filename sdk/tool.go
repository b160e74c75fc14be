package sdk

import (
	"fmt"

	"github.com/toolhost/toolhost/abi"
)

// Tool declares a plugin's tool. A is the argument struct; the SDK decodes
// the call's arguments into it once, after the host has validated them
// against Manifest.Parameters.
type Tool[A any] struct {
	Manifest abi.Manifest
	// Summary returns the approval text for a call (SRD FR-APR-01). It runs
	// with every host function refused, so it can only look at its arguments.
	// Nil means "<tool name>".
	Summary func(args A) (string, error)
	// Handle runs a call and returns its output.
	Handle func(c *Call, args A) (string, error)
}

// Call is the per-call context a handler receives.
type Call struct {
	ID           string
	Conversation string
	Limits       abi.Limits
	noTruncate   bool
	structured   []byte
}

// SelfLimited tells the host that the handler kept its output within
// Limits.OutputLimit itself and the host must not truncate it (FR-TOOL-READ-01b).
func (c *Call) SelfLimited() { c.noTruncate = true }

// SetStructured gives the call's output as one JSON object (obj, encoded
// by the plugin) beside the text the handler returns: MCP clients receive
// it as structuredContent, /v1 batches as structured. The last call wins;
// nil or empty sets none. It goes with a successful result only.
//
// The host fails a call whose obj is not exactly one JSON object, and
// leaves obj out when it and the text together are over
// Limits.OutputLimit, so keep both within it. The text should still say
// what a model needs: clients that show only the text are many.
func (c *Call) SetStructured(obj []byte) { c.structured = append([]byte(nil), obj...) }

// plugin is the type-erased form of a registered Tool.
type plugin struct {
	dec      *decoder
	manifest []byte
	summary  func(args []byte) abi.Result
	call     func(req []byte) abi.Result
}

// registered holds the tool this module exports. It is set once, during
// package initialisation, and only read afterwards.
var registered *plugin

// Register makes t the tool this module exports. Call it from an init
// function of the plugin's main package, exactly once.
func Register[A any](t Tool[A]) {
	if registered != nil {
		panic("sdk.Register called twice")
	}
	t.Manifest.ABI = abi.Version
	manifest := appendManifest(nil, t.Manifest)
	dec := newDecoder()
	registered = &plugin{
		dec:      dec,
		manifest: manifest,
		summary:  func(args []byte) abi.Result { return runSummary(dec, t, args) },
		call:     func(req []byte) abi.Result { return runCall(dec, t, req) },
	}
}

func runSummary[A any](dec *decoder, t Tool[A], raw []byte) (r abi.Result) {
	defer recoverInto(&r)
	var args A
	if err := dec.args(raw, &args); err != nil {
		return toResult(err)
	}
	if t.Summary == nil {
		return abi.Result{Content: []byte(t.Manifest.Name)}
	}
	s, err := t.Summary(args)
	if err != nil {
		return toResult(err)
	}
	return abi.Result{Content: []byte(s)}
}

func runCall[A any](dec *decoder, t Tool[A], raw []byte) (r abi.Result) {
	defer recoverInto(&r)
	var req abi.Request
	if err := dec.request(raw, &req); err != nil {
		return abi.Result{Kind: abi.KindExecutionFailed, Content: []byte("plugin could not decode the request envelope: " + err.Error())}
	}
	var args A
	if err := dec.args(req.Args, &args); err != nil {
		return toResult(err)
	}
	c := &Call{ID: req.ID, Conversation: req.Conversation, Limits: req.Limits}
	out, err := t.Handle(c, args)
	if err != nil {
		return toResult(err)
	}
	r = abi.Result{Content: []byte(out), Structured: c.structured}
	if c.noTruncate {
		r.Flags |= abi.ResultNoTruncate
	}
	return r
}

// recoverInto turns a handler panic into a Panicked result; the host then
// discards this instance, whose state can no longer be trusted.
func recoverInto(r *abi.Result) {
	if v := recover(); v != nil {
		*r = abi.Result{Kind: abi.KindPanicked, Content: fmt.Appendf(nil, "%v", v)}
	}
}

// registeredDecoder returns the registered plugin's decoder, or a fresh one
// before registration.
func registeredDecoder() *decoder {
	if registered == nil {
		return newDecoder()
	}
	return registered.dec
}
