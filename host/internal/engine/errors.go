package engine

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/toolhost/toolhost/abi"
	"github.com/toolhost/toolhost/host/internal/output"
	"github.com/toolhost/toolhost/host/internal/runtime"
)

// maxPanicMessage bounds the guest text quoted in "Tool panicked: …".
const maxPanicMessage = 512

// runError maps a failure of the plugin run itself: the tool's deadline,
// the caller's cancellation, a trap, or a load failure.
func (e *Engine) runError(parent context.Context, tool string, sideEffecting bool, err error, timeout, elapsed time.Duration) *ToolError {
	var ie *runtime.InterruptedError
	var te *runtime.TrapError
	switch {
	case errors.As(err, &ie) && ie.Startup && parent.Err() == nil:
		// The tool never ran: its plugin was still starting (its init
		// code) when the call's deadline came.
		return &ToolError{Kind: abi.KindTimeout, Message: fmt.Sprintf(
			"%s did not start within its %s deadline (its plugin's start-up code took too long); nothing ran. Try again; if it keeps happening, the plugin is at fault", tool, timeout)}
	case errors.As(err, &ie):
		return mayHaveActed(sideEffecting, stopped(parent, tool, timeout, elapsed))
	case errors.As(err, &te):
		return panicked(te.Message)
	}
	return &ToolError{Kind: abi.KindExecutionFailed, Message: fmt.Sprintf("%s failed: %v", tool, err)}
}

// stopped is the error of a call its deadline or its caller stopped.
func stopped(parent context.Context, tool string, timeout, elapsed time.Duration) *ToolError {
	if parent.Err() != nil {
		return &ToolError{Kind: abi.KindCancelled, Message: "Cancelled by user"}
	}
	details, _ := json.Marshal(map[string]any{"tool": tool, "timeout_ms": timeout.Milliseconds(), "elapsed_ms": elapsed.Milliseconds()})
	return &ToolError{Kind: abi.KindTimeout, Details: details, Message: fmt.Sprintf(
		"%s timed out after %s; the call was stopped. Retry with a smaller request, or raise the tool's timeout in the configuration.", tool, timeout)}
}

// mayHaveActed warns, on a side-effecting call its deadline stopped
// midway, that what it did before is not undone: a model that simply
// retries may apply a change twice. (Cancelled and panicked calls keep
// the SRD's exact messages.)
func mayHaveActed(sideEffecting bool, te *ToolError) *ToolError {
	if sideEffecting && te.Kind == abi.KindTimeout {
		te.Message += " It may have changed files or started processes before it stopped; check their state before calling it again."
	}
	return te
}

// panicked builds FR-EXE-04b's message; the guest's text is sanitized and
// bounded because it may echo anything the model sent (FR-EXE-04b-3).
func panicked(msg string) *ToolError {
	msg = output.Sanitize(msg)
	if i := strings.Index(msg, "\ngoroutine "); i >= 0 {
		msg = msg[:i]
	}
	return &ToolError{Kind: abi.KindPanicked, Message: "Tool panicked: " + output.Truncate(strings.TrimSpace(msg), maxPanicMessage)}
}

// pluginError maps an error result the plugin returned.
func pluginError(tool string, r abi.Result) *ToolError {
	te := &ToolError{Kind: r.Kind, Message: string(r.Content)}
	if len(r.Details) > 0 && json.Valid(r.Details) {
		te.Details = json.RawMessage(r.Details)
	}
	switch r.Kind {
	case abi.KindPanicked:
		return panicked(te.Message)
	case abi.KindDeniedByUser:
		// Only toolhost knows whether anyone was asked: a plugin that
		// ran does not report a person's no.
		te.Kind = abi.KindExecutionFailed
		te.Message = fmt.Sprintf("%s failed: it ran and reported %s, a kind only toolhost gives (a person's or client's no to a call that then does not run): %s",
			tool, abi.KindDeniedByUser, te.Message)
		te.Details = nil
	case abi.KindExecutionFailed:
		// FR-ERR-JSON-TOOL-01: a JSON object passes through verbatim.
		if !isJSONObject(te.Message) {
			te.Message = tool + " failed: " + te.Message
		}
	}
	return te
}

func isJSONObject(s string) bool {
	s = strings.TrimSpace(s)
	return strings.HasPrefix(s, "{") && json.Valid([]byte(s))
}

// finish applies the last rules to every result, including pre-resolved
// errors (FR-OUT-04 scope): sanitize, then truncate to the effective limit.
// A JSON error message is only sanitized if that leaves it unchanged
// (FR-ERR-JSON-TOOL-02).
func (e *Engine) finish(r Result) Result {
	if r.Error == nil {
		return r
	}
	r.Error.Details = e.cleanDetails(r.Error.Details)
	msg := r.Error.Message
	if isJSONObject(msg) && r.Error.Kind == abi.KindExecutionFailed {
		if output.Sanitize(msg) == msg {
			return r
		}
	}
	r.Error.Message = truncate(sanitize(msg), e.outputLimit())
	return r
}

// cleanDetails gives every string in a plugin's details the treatment
// content gets (sanitized, truncated): they are just as untrusted, and a
// UI that shows them decodes the JSON escapes back into live control codes.
func (e *Engine) cleanDetails(d json.RawMessage) json.RawMessage {
	if len(d) == 0 {
		return d
	}
	dec := json.NewDecoder(bytes.NewReader(d))
	dec.UseNumber() // keep integers beyond 2^53 exact
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil
	}
	var out bytes.Buffer
	enc := json.NewEncoder(&out)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(e.cleanValue(v)); err != nil {
		return nil
	}
	return bytes.TrimSuffix(out.Bytes(), []byte("\n"))
}

func (e *Engine) cleanValue(v any) any {
	switch v := v.(type) {
	case string:
		return truncate(sanitize(v), e.outputLimit())
	case map[string]any:
		for k, x := range v {
			v[k] = e.cleanValue(x)
		}
	case []any:
		for i, x := range v {
			v[i] = e.cleanValue(x)
		}
	}
	return v
}

func sanitize(s string) string { return output.Sanitize(s) }

func truncate(s string, limit int) string { return output.Truncate(s, limit) }
