package registry

import (
	"bytes"
	"encoding/json"
	"fmt"

	"github.com/toolhost/toolhost/abi"
	"github.com/toolhost/toolhost/host/internal/output"
)

// cleanText returns m with its text made safe to show, as results are
// (NFR-SEC-05): the description, the version and every string in the
// parameters schema (titles, descriptions, examples, enum values) pass
// through output.Prose, so no terminal control sequence or bidi override
// a plugin wrote reaches tools/list, /v1/tools, toolhost tools or a
// model. It is done once, here, so every surface lists the same clean
// text and validation uses the schema clients were shown.
//
// A schema key (a property name) is not text but a name arguments are
// matched by, so one that Prose would change is refused rather than
// rewritten: the plugin would then read arguments under a name no client
// was shown.
//
// The output schema is cleaned the same way: clients are shown it too.
func cleanText(m abi.Manifest) (abi.Manifest, error) {
	m.Description = output.Prose(m.Description)
	m.Version = output.Prose(m.Version)
	var err error
	if m.Parameters, err = cleanSchema("parameters schema", m.Parameters); err != nil {
		return m, err
	}
	m.OutputSchema, err = cleanSchema("output_schema", m.OutputSchema)
	return m, err
}

// cleanSchema is raw with its text cleaned (cleanValue); what names it in
// errors.
func cleanSchema(what string, raw json.RawMessage) (json.RawMessage, error) {
	if len(raw) == 0 {
		return raw, nil
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var schema any
	if err := dec.Decode(&schema); err != nil {
		return raw, nil // compileSchema says what is wrong with it
	}
	cleaned, changed, err := cleanValue(what, schema)
	if err != nil || !changed {
		return raw, err
	}
	out, err := json.Marshal(cleaned)
	if err != nil {
		return raw, fmt.Errorf("%s: re-encoding its cleaned text: %w", what, err)
	}
	return out, nil
}

// cleanValue returns v with every string passed through output.Prose,
// and whether any changed. A key Prose would change is an error.
func cleanValue(what string, v any) (any, bool, error) {
	switch v := v.(type) {
	case string:
		c := output.Prose(v)
		return c, c != v, nil
	case []any:
		changed := false
		for i, x := range v {
			c, ch, err := cleanValue(what, x)
			if err != nil {
				return nil, false, err
			}
			v[i], changed = c, changed || ch
		}
		return v, changed, nil
	case map[string]any:
		changed := false
		for k, x := range v {
			if output.Prose(k) != k {
				return nil, false, fmt.Errorf("%s: key %q holds control or bidi characters; name properties with printable text", what, k)
			}
			c, ch, err := cleanValue(what, x)
			if err != nil {
				return nil, false, err
			}
			v[k], changed = c, changed || ch
		}
		return v, changed, nil
	}
	return v, false, nil
}
