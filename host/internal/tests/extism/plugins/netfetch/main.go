// Command netfetch is a hyper-mcp plugin with one tool, fetch, that GETs a
// URL through Extism HTTP: the host lets it reach only the hosts its
// configuration allow-lists. Config "tool_name" renames
// the tool, so that two copies can be served side by side with different
// grants.
package main

import (
	"strconv"

	pdk "github.com/extism/go-pdk"
)

//go:wasmexport list_tools
func listTools() int32 {
	name, ok := pdk.GetConfig("tool_name")
	if !ok {
		name = "fetch"
	}
	return output(map[string]any{"tools": []any{map[string]any{
		"name": name, "description": "Fetches a URL and returns its body.",
		"inputSchema": map[string]any{"type": "object", "required": []string{"url"},
			"properties": map[string]any{"url": map[string]any{"type": "string"}}},
	}}})
}

//go:wasmexport call_tool
func callTool() int32 {
	var in struct {
		Request struct {
			Arguments struct {
				URL string `json:"url"`
			} `json:"arguments"`
		} `json:"request"`
	}
	if err := pdk.InputJSON(&in); err != nil {
		pdk.SetError(err)
		return 1
	}
	res := pdk.NewHTTPRequest(pdk.MethodGet, in.Request.Arguments.URL).Send()
	return output(map[string]any{"content": []any{map[string]any{"type": "text",
		"text": strconv.Itoa(int(res.Status())) + " " + string(res.Body())}}})
}

func output(v any) int32 {
	if err := pdk.OutputJSON(v); err != nil {
		pdk.SetError(err)
		return 1
	}
	return 0
}

func main() {}
