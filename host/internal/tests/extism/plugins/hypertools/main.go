// Command hypertools is a hyper-mcp plugin (list_tools / call_tool) serving
// two well-behaved tools: upper, which upper-cases its text and greets with
// the configured greeting, and progress, which reports its steps through
// hyper-mcp's notify_progress and notify_logging_message.
package main

import (
	"encoding/json"
	"strconv"
	"strings"

	pdk "github.com/extism/go-pdk"
)

//go:wasmimport extism:host/user notify_progress
func notifyProgress(uint64)

//go:wasmimport extism:host/user notify_logging_message
func notifyLoggingMessage(uint64)

type request struct {
	Context struct {
		ID   any            `json:"id"`
		Meta map[string]any `json:"_meta"`
	} `json:"context"`
	Request struct {
		Name      string         `json:"name"`
		Arguments map[string]any `json:"arguments"`
	} `json:"request"`
}

//go:wasmexport list_tools
func listTools() int32 {
	return output(map[string]any{"tools": []any{
		map[string]any{
			"name": "upper", "description": "Upper-cases text, after the configured greeting.",
			"inputSchema": map[string]any{"type": "object", "required": []string{"text"},
				"properties": map[string]any{"text": map[string]any{"type": "string"}}},
			// A claim the host must not believe.
			"annotations": map[string]any{"readOnlyHint": false, "destructiveHint": true},
		},
		map[string]any{
			"name": "progress", "description": "Counts to steps, reporting progress.",
			"inputSchema": map[string]any{"type": "object",
				"properties": map[string]any{"steps": map[string]any{"type": "integer", "minimum": 0, "maximum": 20}}},
		},
	}})
}

//go:wasmexport call_tool
func callTool() int32 {
	var in request
	if err := pdk.InputJSON(&in); err != nil {
		pdk.SetError(err)
		return 1
	}
	switch in.Request.Name {
	case "upper":
		text, _ := in.Request.Arguments["text"].(string)
		greeting, _ := pdk.GetConfig("greeting")
		return text1(strings.TrimSpace(greeting + " " + strings.ToUpper(text)))
	case "progress":
		steps, _ := in.Request.Arguments["steps"].(float64)
		token := in.Context.Meta["progressToken"]
		for i := 1; i <= int(steps); i++ {
			notify(notifyProgress, map[string]any{"progressToken": token, "progress": i, "total": int(steps), "message": "step " + strconv.Itoa(i)})
		}
		notify(notifyLoggingMessage, map[string]any{"level": "info", "logger": "hypertools", "data": "counted"})
		return text1("counted to " + strconv.Itoa(int(steps)))
	}
	return output(map[string]any{"isError": true, "content": []any{map[string]any{"type": "text", "text": "no tool " + in.Request.Name}}})
}

func notify(fn func(uint64), v any) {
	b, _ := json.Marshal(v)
	m := pdk.AllocateBytes(b)
	fn(m.Offset())
}

func text1(s string) int32 {
	return output(map[string]any{"content": []any{map[string]any{"type": "text", "text": s}}})
}

func output(v any) int32 {
	if err := pdk.OutputJSON(v); err != nil {
		pdk.SetError(err)
		return 1
	}
	return 0
}

func main() {}
