package extism

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"regexp"
	"strings"

	"github.com/toolhost/toolhost/abi"
	"github.com/toolhost/toolhost/host/internal/hostfn"
)

// Tool is one tool an Extism module described: toolhost's manifest for it
// and the module serving it. It implements registry.Plugin.
type Tool struct {
	mod      *Module
	manifest abi.Manifest
}

// Manifest is the tool's manifest as toolhost derived it.
func (t *Tool) Manifest() abi.Manifest { return t.manifest }

// Path returns the module's file.
func (t *Tool) Path() string { return t.mod.path }

// Compile does nothing: the module was compiled when it loaded, to list
// its tools.
func (t *Tool) Compile(context.Context) error { return nil }

// Warm readies n instances of the module.
func (t *Tool) Warm(ctx context.Context, n int) error { return t.mod.warm(ctx, n) }

// maxSummaryArgs bounds the arguments quoted in a summary.
const maxSummaryArgs = 200

// Summary is host-made approval text, "<tool>: <arguments>" (and the
// hosts the plugin may reach): an Extism plugin has no summary export,
// and a summary must do no I/O.
func (t *Tool) Summary(_ context.Context, args []byte) (abi.Result, error) {
	var compact bytes.Buffer
	if json.Compact(&compact, args) != nil {
		compact.Reset()
		compact.Write(args)
	}
	s := t.manifest.Name + ": " + cut(compact.String(), maxSummaryArgs)
	if len(t.mod.grant.AllowedHosts) > 0 {
		s += " (may contact " + strings.Join(t.mod.grant.AllowedHosts, ", ") + ")"
	}
	return abi.Result{Content: []byte(s)}, nil
}

// Call runs the tool once. state is the call's host-function state (nil:
// no events); only its Call part, where events go, is used. A deadline, a trap, a refused request or the plugin's error
// becomes an error result of the right kind; the engine maps them like a
// native tool's.
func (t *Tool) Call(ctx context.Context, state *hostfn.Env, req abi.Request) (abi.Result, error) {
	var call *hostfn.Call
	if state != nil {
		call = &state.Call
	}
	export, input, err := t.request(req)
	if err != nil {
		return abi.Result{}, err
	}
	out, err := t.mod.run(ctx, call, export, input)
	if err != nil {
		return t.failure(ctx, err), nil
	}
	limit := req.Limits.OutputLimit()
	if limit <= 0 {
		limit = abi.DefaultLimits().OutputLimit()
	}
	return callResult(t.manifest.Name, out, int(limit)), nil
}

// request is the export to call and its input: hyper-mcp's
// {context, request} or a servlet's CallToolRequest. The call's id is the
// progress token, as an MCP client would send one.
func (t *Tool) request(req abi.Request) (string, []byte, error) {
	args := req.Args
	if len(bytes.TrimSpace(args)) == 0 {
		args = json.RawMessage(`{}`)
	}
	call := map[string]any{"name": t.manifest.Name, "arguments": args}
	var v any
	export := "call_tool"
	if t.mod.kind == Servlet {
		export, v = "call", map[string]any{"method": "tools/call", "params": call}
	} else {
		v = map[string]any{"context": map[string]any{"id": req.ID, "_meta": map[string]any{"progressToken": req.ID}}, "request": call}
	}
	b, err := json.Marshal(v)
	return export, b, err
}

// failure maps a failed call to an error result.
func (t *Tool) failure(ctx context.Context, err error) abi.Result {
	name := t.manifest.Name
	switch {
	case ctx.Err() != nil && errors.Is(ctx.Err(), context.DeadlineExceeded):
		return abi.Result{Kind: abi.KindTimeout, Content: []byte(name + " timed out")}
	case ctx.Err() != nil:
		return abi.Result{Kind: abi.KindCancelled, Content: []byte("Cancelled by user")}
	case errors.Is(err, errClosed):
		return abi.Result{Kind: abi.KindExecutionFailed, Content: []byte("toolhost is closing; call it again")}
	case errors.Is(err, errUnguarded):
		return abi.Result{Kind: abi.KindSandboxViolation, Content: []byte(err.Error())}
	}
	if nd, ok := netDenied(t.mod.name, err); ok {
		return abi.Result{Kind: abi.KindSandboxViolation, Content: []byte(nd.Error())}
	}
	var ue *url.Error
	if errors.As(err, &ue) {
		return abi.Result{Kind: abi.KindExecutionFailed, Content: []byte("its HTTP request failed: " + cut(ue.Error(), 512))}
	}
	var exit *ExitError
	var trap *TrapError
	if errors.As(err, &exit) || errors.As(err, &trap) {
		return abi.Result{Kind: abi.KindPanicked, Content: []byte(err.Error())}
	}
	return abi.Result{Kind: abi.KindExecutionFailed, Content: []byte(cut(err.Error(), 4<<10))}
}

// manifest is toolhost's manifest for a tool a module described. The
// module's own claims about itself (MCP annotations) are ignored: side
// effects, risk and approval follow from what toolhost grants it. With no
// host to reach it can only compute on its arguments and config, so it is
// read-only and low risk; with hosts it may act on the world through them,
// so it is side-effecting, medium risk, asks first, and its results may
// differ between identical calls.
func (m *Module) manifest(lt listedTool) (abi.Manifest, error) {
	if !validName.MatchString(lt.Name) {
		return abi.Manifest{}, fmt.Errorf("plugin %s describes tool %q, whose name toolhost cannot serve: tool names must match %s (lowercase letters, digits and underscores, starting with a letter); rebuild the plugin with another name",
			m.path, lt.Name, validName)
	}
	params, err := parameters(lt.InputSchema)
	if err != nil {
		return abi.Manifest{}, fmt.Errorf("plugin %s: tool %q: %w", m.path, lt.Name, err)
	}
	desc := strings.TrimSpace(lt.Description)
	if desc == "" {
		desc = strings.TrimSpace(lt.Title)
	}
	if desc == "" {
		desc = fmt.Sprintf("Tool %s of the Extism plugin %s.", lt.Name, m.name)
	}
	mf := abi.Manifest{
		ABI: "extism/" + string(m.kind), Name: lt.Name, Version: "extism", Description: desc, Parameters: params,
		RiskLevel: abi.RiskLow, TimeoutClass: abi.TimeoutDefault,
	}
	if len(m.grant.AllowedHosts) > 0 {
		mf.SideEffecting, mf.RequiresApproval, mf.RiskLevel, mf.Nondeterministic, mf.OpenWorld = true, true, abi.RiskMedium, true, true
	}
	return mf, nil
}

// validName is toolhost's tool name rule (registry.ValidateManifest).
var validName = regexp.MustCompile(`^[a-z][a-z0-9_]{0,63}$`)

// listedTool is one tool of list_tools' or describe's result.
type listedTool struct {
	Name        string          `json:"name"`
	Title       string          `json:"title"`
	Description string          `json:"description"`
	InputSchema json.RawMessage `json:"inputSchema"`
}

// parameters is a tool's input schema, which must be a JSON object
// schema; none means any object.
func parameters(raw json.RawMessage) (json.RawMessage, error) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || bytes.Equal(raw, []byte("null")) {
		return json.RawMessage(`{"type":"object"}`), nil
	}
	// The registry compiles the schema, once (registry.NewTool), and
	// refuses any reference to another document.
	if len(raw) > maxSchemaBytes {
		return nil, fmt.Errorf("inputSchema is %d bytes, more than %d", len(raw), maxSchemaBytes)
	}
	var schema map[string]any
	if err := json.Unmarshal(raw, &schema); err != nil {
		return nil, fmt.Errorf("inputSchema is not a JSON object: %w", err)
	}
	if typ, ok := schema["type"]; ok && typ != "object" {
		return nil, fmt.Errorf(`inputSchema has type %v; a tool's arguments are an object ("type": "object")`, typ)
	}
	return raw, nil
}

// maxSchemaBytes bounds a described tool's input schema.
const maxSchemaBytes = 256 << 10
