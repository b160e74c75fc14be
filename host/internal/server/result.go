package server

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolhost/toolhost/abi"
	"github.com/toolhost/toolhost/host/internal/engine"
)

// toResult is an engine result as MCP's: the whole text as text content;
// a failure flagged isError, its kind and message first so a model reads
// what went wrong ("SandboxViolation: …"). The structured object a tool
// gave beside its text (engine.Result.Structured, already checked and
// encoded by the host) is structuredContent; without one, composed says
// the tool composes its output, so a JSON object result is also given as
// structuredContent: the host's encoding of it, as a plugin's own object
// is (engine.CanonicalObject), while the text stays as the tool wrote it.
// The text's bytes would not do: a name given twice reads differently
// in different clients, and a terminal escape written as \u001b, harmless
// in the text, is a live control once a client decodes the object.
func toResult(r engine.Result, composed bool) *mcp.CallToolResult {
	var res *mcp.CallToolResult
	if !r.OK {
		res = &mcp.CallToolResult{IsError: true, Content: []mcp.Content{&mcp.TextContent{Text: errorText(r.Error)}}}
	} else {
		res = &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: r.Content}}}
		switch {
		case len(r.Structured) > 0:
			res.StructuredContent = r.Structured
		case composed && isJSONObject(r.Content):
			if obj, err := engine.CanonicalObject([]byte(r.Content)); err == nil {
				res.StructuredContent = obj
			}
		}
	}
	if len(r.Confinement) > 0 {
		// What confined the call's commands, for the client and its user
		// rather than the model.
		res.Meta = mcp.Meta{confinementMeta: r.Confinement}
	}
	return res
}

// MCPResult is r as an MCP tools/call result: the text, structuredContent
// by the rule the server follows for the tool m describes, and isError.
// toolhost call --format json prints it.
func MCPResult(r engine.Result, m abi.Manifest) *mcp.CallToolResult {
	return toResult(r, composesOutput(m))
}

// confinementMeta is the _meta key of a result's confinement record.
const confinementMeta = "toolhost/confinement"

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

// stoppedByClient words the result of a call stopped because its request
// ended first, cause being the request context's cause. The engine's own "Cancelled by user" speaks of a terminal; here the
// client sent notifications/cancelled (cause context.Canceled: the SDK
// cancels the request without one) or its connection went away. It
// reports whether r was such a result; any other result is left alone.
//
// The answer still goes out: the SDK writes a handler's result even
// after its request was cancelled, and a client that gave up drops it,
// so the words are also for the server's log.
func stoppedByClient(r *engine.Result, cause error) bool {
	if r.OK || r.Error == nil || r.Error.Kind != abi.KindCancelled || cause == nil {
		return false
	}
	why := "the MCP client cancelled the request (notifications/cancelled)"
	if !errors.Is(cause, context.Canceled) {
		why = fmt.Sprintf("the MCP client's connection ended (%v)", cause)
	}
	r.Error.Message = fmt.Sprintf("call %s (%s) was stopped because %s; any command it started was killed, and what it changed before that stays changed: read the files again before you retry", r.ID, r.Name, why)
	return true
}

// isJSONObject reports whether s may be a JSON object: it starts with
// "{", so only such a text is decoded (engine.CanonicalObject decides).
func isJSONObject(s string) bool {
	return strings.HasPrefix(strings.TrimLeft(s, " \t\r\n"), "{")
}

// newConversationID names a session's conversation; it is random so two
// sessions never share reads by accident.
func newConversationID() string {
	var b [12]byte
	rand.Read(b[:])
	return "mcp-" + hex.EncodeToString(b[:])
}
