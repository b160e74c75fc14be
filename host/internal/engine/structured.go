package engine

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"strings"

	"github.com/toolhost/toolhost/abi"
	"github.com/toolhost/toolhost/host/internal/output"
	"github.com/toolhost/toolhost/host/internal/registry"
)

// structured is a successful result's structured object (abi.Result's
// Structured), given textLen bytes of text were kept beside it. A plugin's
// object is data and nothing more: the host passes on its own encoding
// of it, never the plugin's bytes, so no client reads a member (a name
// given twice, a number spelled oddly) other than the one the host
// checked, and its strings are sanitized as text is (FR-OUT-02). The text
// comes first in the output limit (FR-OUT-04): an object that does not fit
// beside it is left out, and logged. Anything but exactly one JSON object,
// and one that breaks the tool's output_schema, fails the call as the
// plugin's fault; so does a result without one when the tool declares an
// output_schema, which promises clients an object with every result.
func (e *Engine) structured(call Call, tool *registry.Tool, out abi.Result, textLen, limit int) (json.RawMessage, *ToolError) {
	raw := out.Structured
	if len(raw) == 0 {
		if tool.HasOutputSchema() {
			return nil, e.badStructured(call, tool, "returned no structured result, which its output_schema promises with every result")
		}
		return nil, nil
	}
	// Checked on the plugin's bytes first, so an object the host did not
	// read whole (it reads what fits twice the limit) is never parsed.
	if textLen+len(raw) > limit {
		return nil, e.dropStructured(call, tool, textLen, len(raw), limit)
	}
	obj, v, err := canonicalObject(raw)
	if err != nil {
		return nil, e.badStructured(call, tool, fmt.Sprintf("returned a structured result that is not one JSON object (%v)", err))
	}
	if textLen+len(obj) > limit {
		return nil, e.dropStructured(call, tool, textLen, len(obj), limit)
	}
	if vs := tool.ValidateStructured(v); len(vs) > 0 {
		var b strings.Builder
		for _, v := range vs {
			ptr := v.Pointer
			if ptr == "" {
				ptr = "(root)"
			}
			fmt.Fprintf(&b, "; at %s: %s", ptr, v.Message)
		}
		return nil, e.badStructured(call, tool, "returned a structured result that does not match its output_schema"+b.String())
	}
	return obj, nil
}

// badStructured fails a call for its plugin's structured result.
func (e *Engine) badStructured(call Call, tool *registry.Tool, what string) *ToolError {
	msg := fmt.Sprintf("%s failed: its plugin %s; this is the plugin's fault, not the call's arguments, and its text is not returned either", call.Name, what)
	if e.manifest(tool).SideEffecting {
		msg += ". It may have changed files before it returned; check their state before calling it again"
	}
	return &ToolError{Kind: abi.KindExecutionFailed, Message: msg + "."}
}

// dropStructured leaves out an object that does not fit beside the text:
// logged, or, for a tool whose output_schema promises one, a failure.
func (e *Engine) dropStructured(call Call, tool *registry.Tool, textLen, objLen, limit int) *ToolError {
	if tool.HasOutputSchema() {
		return e.badStructured(call, tool, fmt.Sprintf(
			"returned a structured result of %d bytes that does not fit beside its %d bytes of text in the call's %d-byte output limit, and its output_schema promises one; ask for less",
			objLen, textLen, limit))
	}
	e.log.Warn("a plugin's structured result does not fit beside its text in the output limit; the result carries the text alone",
		"tool", call.Name, "id", call.ID, "text_bytes", textLen, "structured_bytes", objLen, "limit", limit)
	return nil
}

// CanonicalObject is raw, which must hold exactly one JSON object, as
// the host passes on a plugin's structured object (canonicalObject). The
// MCP server gives a composing tool's JSON object text as structuredContent
// through it, so that object can hold no more than a plugin's own could:
// no name given twice, no terminal escape written as a \u escape.
func CanonicalObject(raw []byte) (json.RawMessage, error) {
	obj, _, err := canonicalObject(raw)
	return obj, err
}

// canonicalObject is raw, which must hold exactly one JSON object,
// encoded again: compact, members sorted, a repeated name once with its
// last value (as encoding/json decodes it), numbers as written, and every
// string, names included, sanitized as text is (output.Sanitize). Escaping
// a control character would not do: a client decodes the escape back into
// the live character before it shows the string.
// It returns the encoding and the sanitized value it encodes.
func canonicalObject(raw []byte) (json.RawMessage, any, error) {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber() // integers beyond 2^53 stay exact
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, nil, err
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, nil, fmt.Errorf("more follows the first JSON value")
	}
	if _, ok := v.(map[string]any); !ok {
		return nil, nil, fmt.Errorf("it is %s", jsonKind(v))
	}
	v = sanitizeValue(v)
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, nil, err
	}
	return json.RawMessage(bytes.TrimSuffix(b.Bytes(), []byte("\n"))), v, nil
}

// sanitizeValue is v with every string and member name sanitized.
func sanitizeValue(v any) any {
	switch v := v.(type) {
	case string:
		return output.Sanitize(v)
	case []any:
		for i, x := range v {
			v[i] = sanitizeValue(x)
		}
	case map[string]any:
		out := make(map[string]any, len(v))
		for k, x := range v {
			out[output.Sanitize(k)] = sanitizeValue(x)
		}
		return out
	}
	return v
}

func jsonKind(v any) string {
	switch v.(type) {
	case []any:
		return "an array"
	case string:
		return "a string"
	case json.Number:
		return "a number"
	case bool:
		return "a boolean"
	case nil:
		return "null"
	}
	return fmt.Sprintf("a %T", v)
}
