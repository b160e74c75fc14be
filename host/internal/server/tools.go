package server

import (
	"encoding/json"
	"fmt"
	"slices"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolhost/toolhost/abi"
)

// toolFor is the MCP definition of a tool: its schema as inputSchema, its
// output_schema as outputSchema, and the four behaviour hints, so clients' plan or review modes let the
// read-only tools through and ask about the rest.
func toolFor(m abi.Manifest) (*mcp.Tool, error) {
	var schema map[string]any
	if err := json.Unmarshal(m.Parameters, &schema); err != nil {
		return nil, fmt.Errorf("tool %s: its parameters are not a JSON Schema object: %w", m.Name, err)
	}
	if schema["type"] != "object" {
		return nil, fmt.Errorf("tool %s: MCP needs an object schema for its arguments, it declares type %v", m.Name, schema["type"])
	}
	t := &mcp.Tool{
		Name:        m.Name,
		Description: m.Description,
		InputSchema: json.RawMessage(m.Parameters),
		Annotations: annotations(m),
	}
	if len(m.OutputSchema) > 0 {
		// The registry compiled it, checked it describes an object and
		// cleaned its text; the engine holds every result to it.
		t.OutputSchema = json.RawMessage(m.OutputSchema)
	}
	return t, nil
}

// annotations are the manifest's behaviour hints (abi.Manifest.Hints),
// as MCP carries them.
func annotations(m abi.Manifest) *mcp.ToolAnnotations {
	h := m.Hints()
	return &mcp.ToolAnnotations{
		ReadOnlyHint:    h.ReadOnly,
		DestructiveHint: &h.Destructive,
		IdempotentHint:  h.Idempotent,
		OpenWorldHint:   &h.OpenWorld,
	}
}

// composesOutput reports whether a tool's result is text the tool itself
// composed (a directory listing rendered as JSON), rather than text it
// read from a file or a command's output. Only such a result is also sent
// as structuredContent when it is a JSON object: a file that happens to
// hold JSON must reach a model as the text it is, and some clients hand
// the model structuredContent alone, re-encoded, which would lose the
// file's layout.
func composesOutput(m abi.Manifest) bool {
	return !slices.ContainsFunc(m.Capabilities, func(c abi.Capability) bool {
		return c == abi.CapFSRead || c == abi.CapProcExec
	})
}
