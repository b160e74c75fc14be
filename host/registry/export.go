package registry

import (
	"encoding/json"
	"fmt"
	"sort"
	"strings"
)

// Formats lists the definition formats Definitions accepts.
func Formats() []string { return []string{"json", "openai", "anthropic", "gemini", "mcp"} }

// Definitions renders the tools' definitions for a model provider or
// protocol, sorted by name.
func (r *Registry) Definitions(format string) (any, error) {
	switch format {
	case "json":
		return mapTools(r, func(t *Tool) any {
			m := t.Manifest
			return map[string]any{
				"name": m.Name, "description": m.Description, "parameters": json.RawMessage(m.Parameters),
				"side_effecting": m.SideEffecting, "requires_approval": m.RequiresApproval,
				"risk_level": m.RiskLevel, "version": m.Version, "capabilities": m.Capabilities,
			}
		}), nil
	case "openai":
		return mapTools(r, func(t *Tool) any {
			return map[string]any{"type": "function", "function": map[string]any{
				"name": t.Manifest.Name, "description": t.Manifest.Description, "parameters": json.RawMessage(t.Manifest.Parameters),
			}}
		}), nil
	case "anthropic":
		return mapTools(r, func(t *Tool) any {
			return map[string]any{"name": t.Manifest.Name, "description": t.Manifest.Description, "input_schema": json.RawMessage(t.Manifest.Parameters)}
		}), nil
	case "mcp":
		return mapTools(r, func(t *Tool) any {
			return map[string]any{
				"name": t.Manifest.Name, "description": t.Manifest.Description, "inputSchema": json.RawMessage(t.Manifest.Parameters),
				"annotations": map[string]any{
					"readOnlyHint":    !t.Manifest.SideEffecting,
					"destructiveHint": t.Manifest.SideEffecting,
				},
			}
		}), nil
	case "gemini":
		decls := make([]any, 0, len(r.sorted))
		for _, t := range r.sorted {
			var schema any
			if err := json.Unmarshal(t.Manifest.Parameters, &schema); err != nil {
				return nil, fmt.Errorf("tool %s: %w", t.Manifest.Name, err)
			}
			decls = append(decls, map[string]any{"name": t.Manifest.Name, "description": t.Manifest.Description, "parameters": geminiSchema(schema)})
		}
		return map[string]any{"functionDeclarations": decls}, nil
	}
	return nil, fmt.Errorf("unknown definition format %q (known: %s)", format, strings.Join(Formats(), ", "))
}

func mapTools(r *Registry, f func(*Tool) any) []any {
	out := make([]any, len(r.sorted))
	for i, t := range r.sorted {
		out[i] = f(t)
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
