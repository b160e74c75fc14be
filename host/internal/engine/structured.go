package engine

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"

	"github.com/toolhost/toolhost/abi"
	"github.com/toolhost/toolhost/host/internal/output"
)

// structured is a successful result's structured object (abi.Result's
// Structured), given textLen bytes of text were kept beside it. A plugin's
// object is data and nothing more: the host passes on its own encoding
// of it, never the plugin's bytes, so no client reads a member (a name
// given twice, a number spelled oddly) other than the one the host
// checked, and its strings are sanitized as text is (FR-OUT-02). The text
// comes first in the output limit (FR-OUT-04): an object that does not fit
// beside it is left out, and logged. Anything but exactly one JSON object
// fails the call as the plugin's fault.
func (e *Engine) structured(call Call, sideEffecting bool, out abi.Result, textLen, limit int) (json.RawMessage, *ToolError) {
	raw := out.Structured
	if len(raw) == 0 {
		return nil, nil
	}
	// Checked on the plugin's bytes first, so an object the host did not
	// read whole (it reads what fits twice the limit) is never parsed.
	if textLen+len(raw) > limit {
		e.dropStructured(call, textLen, len(raw), limit)
		return nil, nil
	}
	obj, err := canonicalObject(raw)
	if err != nil {
		msg := fmt.Sprintf("%s failed: its plugin returned a structured result that is not one JSON object (%v); this is the plugin's fault, not the call's arguments, and its text is not returned either", call.Name, err)
		if sideEffecting {
			msg += ". It may have changed files before it returned; check their state before calling it again"
		}
		return nil, &ToolError{Kind: abi.KindExecutionFailed, Message: msg + "."}
	}
	if textLen+len(obj) > limit {
		e.dropStructured(call, textLen, len(obj), limit)
		return nil, nil
	}
	return obj, nil
}

func (e *Engine) dropStructured(call Call, textLen, objLen, limit int) {
	e.log.Warn("a plugin's structured result does not fit beside its text in the output limit; the result carries the text alone",
		"tool", call.Name, "id", call.ID, "text_bytes", textLen, "structured_bytes", objLen, "limit", limit)
}

// canonicalObject is raw, which must hold exactly one JSON object,
// encoded again: compact, members sorted, a repeated name once with its
// last value (as encoding/json decodes it), numbers as written, and every
// string, names included, sanitized as text is (output.Sanitize). Escaping
// a control character would not do: a client decodes the escape back into
// the live character before it shows the string.
func canonicalObject(raw []byte) (json.RawMessage, error) {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber() // integers beyond 2^53 stay exact
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, err
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, fmt.Errorf("more follows the first JSON value")
	}
	if _, ok := v.(map[string]any); !ok {
		return nil, fmt.Errorf("it is %s", jsonKind(v))
	}
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(sanitizeValue(v)); err != nil {
		return nil, err
	}
	return json.RawMessage(bytes.TrimSuffix(b.Bytes(), []byte("\n"))), nil
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
