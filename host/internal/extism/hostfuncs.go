package extism

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	extism "github.com/extism/go-sdk"

	"github.com/toolhost/toolhost/abi"
	"github.com/toolhost/toolhost/host/internal/hostfn"
)

// callKey holds a call's *callState in the context go-sdk passes to host
// functions and to HTTP requests.
type callKey struct{}

// callState is what host functions and Guard need of the call running.
type callState struct {
	mod *Module
	// call is where the call's events go: an Extism plugin reaches
	// no files or commands, so it needs no other part of the call's
	// hostfn.Env. Nil while the module lists its tools at load.
	call *hostfn.Call
}

func stateOf(ctx context.Context) *callState {
	st, _ := ctx.Value(callKey{}).(*callState)
	return st
}

// maxNotification bounds the text one notification becomes: a plugin
// cannot flood the event stream with one call.
const maxNotification = 1 << 10

// userFunctions are the hyper-mcp host functions toolhost provides. Progress
// and log notifications become the call's stderr events, the stream the
// engine passes through sanitized to MCP clients and consoles (it has no
// progress event of its own); list-changed notifications are no-ops, since
// the registry does not change while toolhost runs.
func userFunctions() []extism.HostFunction {
	ptr := []extism.ValueType{extism.ValueTypePTR}
	return []extism.HostFunction{
		extism.NewHostFunctionWithStack("notify_progress", notifyProgress, ptr, nil),
		extism.NewHostFunctionWithStack("notify_logging_message", notifyLog, ptr, nil),
		extism.NewHostFunctionWithStack("notify_resource_updated", discard, ptr, nil),
		extism.NewHostFunctionWithStack("notify_tool_list_changed", nothing, nil, nil),
		extism.NewHostFunctionWithStack("notify_prompt_list_changed", nothing, nil, nil),
		extism.NewHostFunctionWithStack("notify_resource_list_changed", nothing, nil, nil),
	}
}

// userFunctionNames lists userFunctions' names, for messages and checks.
func userFunctionNames() []string {
	return []string{"notify_progress", "notify_logging_message", "notify_resource_updated",
		"notify_tool_list_changed", "notify_prompt_list_changed", "notify_resource_list_changed"}
}

func nothing(context.Context, *extism.CurrentPlugin, []uint64) {}

func discard(_ context.Context, p *extism.CurrentPlugin, stack []uint64) { p.Free(stack[0]) }

// notifyProgress turns hyper-mcp's ProgressNotificationParam into a stderr
// event of the call: "progress 2/5: message".
func notifyProgress(ctx context.Context, p *extism.CurrentPlugin, stack []uint64) {
	var n struct {
		Progress float64  `json:"progress"`
		Total    *float64 `json:"total"`
		Message  string   `json:"message"`
	}
	if !readNotification(p, stack[0], &n) {
		return
	}
	text := "progress " + number(n.Progress)
	if n.Total != nil {
		text += "/" + number(*n.Total)
	}
	if n.Message != "" {
		text += ": " + n.Message
	}
	emit(ctx, text)
}

// notifyLog turns an MCP logging message into a stderr event of the call:
// "[level logger] data".
func notifyLog(ctx context.Context, p *extism.CurrentPlugin, stack []uint64) {
	var n struct {
		Level  string          `json:"level"`
		Logger string          `json:"logger"`
		Data   json.RawMessage `json:"data"`
	}
	if !readNotification(p, stack[0], &n) {
		return
	}
	var data string
	if json.Unmarshal(n.Data, &data) != nil {
		data = string(n.Data)
	}
	emit(ctx, "["+strings.TrimSpace(n.Level+" "+n.Logger)+"] "+data)
	if st := stateOf(ctx); st != nil {
		st.mod.log.Debug("plugin log notification", "plugin", st.mod.path, "level", n.Level, "data", cut(data, maxNotification))
	}
}

// readNotification decodes a notification's JSON; a malformed one is
// dropped, as an MCP client would ignore it.
func readNotification(p *extism.CurrentPlugin, handle uint64, v any) bool {
	b, err := p.ReadBytes(handle)
	p.Free(handle)
	return err == nil && json.Unmarshal(b, v) == nil
}

// emit delivers one line to the call's stderr stream. At load (no call)
// and without a consumer it goes nowhere; a consumer that is slow costs
// the call its line, never its deadline.
func emit(ctx context.Context, text string) {
	st := stateOf(ctx)
	if st == nil || st.call == nil || st.call.Emit == nil {
		return
	}
	_ = st.call.Emit(ctx, hostfn.Event{CallID: st.call.CallID, Kind: abi.EventStderr, Data: []byte(cut(text, maxNotification) + "\n")})
}

func number(f float64) string { return fmt.Sprintf("%g", f) }

// cut shortens s to at most n bytes, on a rune boundary, marking the cut.
func cut(s string, n int) string {
	if len(s) <= n {
		return s
	}
	i := n
	for i > 0 && !utf8RuneStart(s[i]) {
		i--
	}
	return s[:i] + "…"
}

func utf8RuneStart(b byte) bool { return b&0xC0 != 0x80 }
