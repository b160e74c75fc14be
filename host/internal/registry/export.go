package registry

import (
	"encoding/json"
	"fmt"
	"sort"
	"strings"

	"github.com/toolhost/toolhost/abi"
)

// Formats lists the definition formats Definitions accepts.
func Formats() []string { return []string{"json", "openai", "anthropic", "gemini", "mcp"} }

// Definitions renders the tools' definitions for a model provider or
// protocol, sorted by name.
func (r *Registry) Definitions(format string) (any, error) {
	ms := make([]abi.Manifest, len(r.sorted))
	for i, t := range r.sorted {
		ms[i] = t.Manifest
	}
	return Definitions(ms, format)
}

// Definitions formats manifests as tool definitions for a model provider,
// in the order given.
func Definitions(ms []abi.Manifest, format string) (any, error) {
	switch format {
	case "json":
		return mapTools(ms, func(m abi.Manifest) any {
			return map[string]any{
				"name": m.Name, "description": m.Description, "parameters": json.RawMessage(m.Parameters),
				"side_effecting": m.SideEffecting, "requires_approval": m.RequiresApproval,
				"risk_level": m.RiskLevel, "version": m.Version, "capabilities": m.Capabilities,
			}
		}), nil
	case "openai":
		return mapTools(ms, func(m abi.Manifest) any {
			return map[string]any{"type": "function", "function": map[string]any{
				"name": m.Name, "description": m.Description, "parameters": json.RawMessage(m.Parameters),
			}}
		}), nil
	case "anthropic":
		return mapTools(ms, func(m abi.Manifest) any {
			return map[string]any{"name": m.Name, "description": m.Description, "input_schema": json.RawMessage(m.Parameters)}
		}), nil
	case "mcp":
		return mapTools(ms, func(m abi.Manifest) any {
			h := m.Hints()
			def := map[string]any{
				"name": m.Name, "description": m.Description, "inputSchema": json.RawMessage(m.Parameters),
				"annotations": map[string]any{
					"readOnlyHint": h.ReadOnly, "destructiveHint": h.Destructive,
					"idempotentHint": h.Idempotent, "openWorldHint": h.OpenWorld,
				},
			}
			if len(m.OutputSchema) > 0 {
				def["outputSchema"] = json.RawMessage(m.OutputSchema)
			}
			return def
		}), nil
	case "gemini":
		decls := make([]any, 0, len(ms))
		for _, m := range ms {
			var schema any
			if err := json.Unmarshal(m.Parameters, &schema); err != nil {
				return nil, fmt.Errorf("tool %s: %w", m.Name, err)
			}
			decls = append(decls, map[string]any{"name": m.Name, "description": m.Description, "parameters": geminiSchema(schema)})
		}
		return map[string]any{"functionDeclarations": decls}, nil
	}
	return nil, fmt.Errorf("unknown definition format %q (known: %s)", format, strings.Join(Formats(), ", "))
}

func mapTools(ms []abi.Manifest, f func(abi.Manifest) any) []any {
	out := make([]any, len(ms))
	for i, m := range ms {
		out[i] = f(m)
	}
	return out
}

// geminiSchema keeps the OpenAPI subset Gemini's function declarations
// accept; keywords such as additionalProperties are rejected by its API.
func geminiSchema(v any) any {
	m, ok := v.(map[string]any)
	if !ok {
		return v
	}
	keep := map[string]bool{"type": true, "format": true, "description": true, "nullable": true, "enum": true,
		"required": true, "minimum": true, "maximum": true, "minItems": true, "maxItems": true,
		"minLength": true, "maxLength": true, "pattern": true}
	out := map[string]any{}
	for k, val := range m {
		switch {
		case k == "type":
			if s, ok := val.(string); ok {
				out[k] = strings.ToUpper(s)
			}
		case k == "properties":
			props := map[string]any{}
			pm, _ := val.(map[string]any)
			names := make([]string, 0, len(pm))
			for name, sub := range pm {
				props[name] = geminiSchema(sub)
				names = append(names, name)
			}
			sort.Strings(names)
			out[k], out["propertyOrdering"] = props, names
		case k == "items":
			out[k] = geminiSchema(val)
		case keep[k]:
			out[k] = val
		}
	}
	return out
}
