// Command servlet is an mcp.run servlet (describe / call, the older
// protocol hyper-mcp still serves) with one tool, servlet_echo, which
// returns its text and an image block.
package main

import pdk "github.com/extism/go-pdk"

//go:wasmexport describe
func describe() int32 {
	return output(map[string]any{"tools": []any{map[string]any{
		"name": "servlet_echo", "description": "Echoes text.",
		"inputSchema": map[string]any{"type": "object", "properties": map[string]any{"text": map[string]any{"type": "string"}}},
	}}})
}

//go:wasmexport call
func call() int32 {
	var in struct {
		Params struct {
			Name      string         `json:"name"`
			Arguments map[string]any `json:"arguments"`
		} `json:"params"`
	}
	if err := pdk.InputJSON(&in); err != nil {
		pdk.SetError(err)
		return 1
	}
	text, _ := in.Params.Arguments["text"].(string)
	return output(map[string]any{"content": []any{
		map[string]any{"type": "text", "text": in.Params.Name + ": " + text},
		map[string]any{"type": "image", "mimeType": "image/png", "data": "iVBORw0KGgo="},
	}})
}

func output(v any) int32 {
	if err := pdk.OutputJSON(v); err != nil {
		pdk.SetError(err)
		return 1
	}
	return 0
}

func main() {}
