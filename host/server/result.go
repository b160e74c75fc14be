package server

import (
	"bytes"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolhost/toolhost/host/engine"
)

// toResult is an engine result as MCP's: the whole text as text content;
// a failure flagged isError, its kind and message first so a model reads
// what went wrong ("SandboxViolation: …"). structured says the tool
// composes its output, so a JSON object result is also given as
// structuredContent, byte for byte the text.
func toResult(r engine.Result, structured bool) *mcp.CallToolResult {
	if !r.OK {
		return &mcp.CallToolResult{IsError: true, Content: []mcp.Content{&mcp.TextContent{Text: errorText(r.Error)}}}
	}
	res := &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: r.Content}}}
	if structured && isJSONObject(r.Content) {
		res.StructuredContent = json.RawMessage(r.Content)
	}
	return res
}

// errorText renders a tool error for a model: "Kind: message", then the
// details as JSON but for what the message already says, then a
// command's output as plain text (its details carry it, and a model reads
// it better unescaped).
func errorText(e *engine.ToolError) string {
	if e == nil {
		return "ExecutionFailed: the call failed without saying why"
	}
	var b strings.Builder
	b.WriteString(string(e.Kind))
	b.WriteString(": ")
	b.WriteString(e.Message)
	var details map[string]json.RawMessage
	if len(e.Details) == 0 || json.Unmarshal(e.Details, &details) != nil {
		if len(bytes.TrimSpace(e.Details)) > 0 {
			b.WriteString("\ndetails: ")
			b.Write(e.Details)
		}
		return b.String()
	}
	var output string
	if raw, ok := details["output"]; ok && json.Unmarshal(raw, &output) == nil {
		delete(details, "output")
	}
	for k, raw := range details { // said already: a denial's denied_by is in its message
		var v string
		if json.Unmarshal(raw, &v) == nil && len(v) > 20 && strings.Contains(e.Message, v) {
			delete(details, k)
		}
	}
	if len(details) > 0 {
		rest, _ := json.Marshal(details)
		b.WriteString("\ndetails: ")
		b.Write(rest)
	}
	if output != "" {
		b.WriteString("\noutput:\n")
		b.WriteString(output)
	}
	return b.String()
}

func isJSONObject(s string) bool {
	t := strings.TrimSpace(s)
	return strings.HasPrefix(t, "{") && json.Valid([]byte(t))
}

// newConversationID names a session's conversation; it is random so two
// sessions never share reads by accident.
func newConversationID() string {
	var b [12]byte
	rand.Read(b[:])
	return "mcp-" + hex.EncodeToString(b[:])
}
