// Command misbehave is a hyper-mcp plugin whose tools do what an untrusted
// plugin might: spin, flood the host with output, print to its stdout and
// look for files, environment and arguments, panic, or report an error.
// Config "extra_tool" adds a tool of that name (to test names the host
// refuses), with config "extra_schema" as its input schema and
// "extra_description" as its description; config "spin_at_load" makes
// list_tools spin.
package main

import (
	"encoding/json"
	"fmt"
	"os"
	"strings"

	pdk "github.com/extism/go-pdk"
)

func tool(name, desc string) map[string]any {
	return map[string]any{"name": name, "description": desc, "inputSchema": map[string]any{"type": "object",
		"properties": map[string]any{"bytes": map[string]any{"type": "integer"}}}}
}

//go:wasmexport list_tools
func listTools() int32 {
	if _, ok := pdk.GetConfig("spin_at_load"); ok {
		for i := 0; ; i++ {
			sink += i
		}
	}
	tools := []any{
		tool("spin", "Loops forever."),
		tool("flood", "Returns bytes bytes of text."),
		tool("probe", "Prints to stdout and looks for files, environment and arguments."),
		tool("crash", "Panics."),
		tool("fail", "Reports an error result."),
	}
	if extra, ok := pdk.GetConfig("extra_tool"); ok {
		t := tool(extra, "Configured.")
		if schema, ok := pdk.GetConfig("extra_schema"); ok {
			t["inputSchema"] = json.RawMessage(schema)
		}
		if desc, ok := pdk.GetConfig("extra_description"); ok {
			t["description"] = desc
		}
		tools = append(tools, t)
	}
	return output(map[string]any{"tools": tools})
}

var sink int

//go:wasmexport call_tool
func callTool() int32 {
	var in struct {
		Request struct {
			Name      string `json:"name"`
			Arguments struct {
				Bytes int `json:"bytes"`
			} `json:"arguments"`
		} `json:"request"`
	}
	if err := pdk.InputJSON(&in); err != nil {
		pdk.SetError(err)
		return 1
	}
	switch in.Request.Name {
	case "spin":
		for i := 0; ; i++ {
			sink += i
		}
	case "flood":
		return output(map[string]any{"content": []any{map[string]any{"type": "text", "text": strings.Repeat("x", in.Request.Arguments.Bytes)}}})
	case "probe":
		fmt.Println("GUEST-STDOUT-MARKER")
		fmt.Fprintln(os.Stderr, "GUEST-STDERR-MARKER")
		var found []string
		for _, p := range []string{"/etc/passwd", "/etc/hostname", "/proc/self/environ", "."} {
			if _, err := os.ReadFile(p); err == nil {
				found = append(found, "read "+p)
			}
			if _, err := os.ReadDir(p); err == nil {
				found = append(found, "listed "+p)
			}
		}
		found = append(found, fmt.Sprintf("env=%d args=%d", len(os.Environ()), len(os.Args)))
		return output(map[string]any{"content": []any{map[string]any{"type": "text", "text": strings.Join(found, "; ")}}})
	case "crash":
		panic("misbehave crashed on purpose")
	case "fail":
		return output(map[string]any{"isError": true, "content": []any{map[string]any{"type": "text", "text": "the service said no"}}})
	}
	return output(map[string]any{"content": []any{map[string]any{"type": "text", "text": "configured tool " + in.Request.Name}}})
}

func output(v any) int32 {
	if err := pdk.OutputJSON(v); err != nil {
		pdk.SetError(err)
		return 1
	}
	return 0
}

func main() {}
