package server

import (
	"context"
	"fmt"
	"log/slog"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolhost/toolhost/host/engine"
)

// approver asks the MCP client's user about each confirmation by
// elicitation (issue 11 item 4): accept runs the call, decline or cancel
// denies it. Tools the operator allowed run without asking, except calls
// only a person may approve.
type approver struct {
	session *mcp.ServerSession
	allow   []string
	log     *slog.Logger
	// preview is the change a call would make, shown in its question;
	// nil shows none.
	preview func(context.Context, engine.Confirmation) string
}

// askedBy names who decided in the results of calls the user was asked
// about.
const askedBy = "the MCP client's user"

func (a *approver) Approve(ctx context.Context, cs []engine.Confirmation) (engine.Decision, error) {
	approved, ask := engine.Preapproved(cs, a.allow)
	if len(ask) == 0 {
		return engine.ApproveSelected("--allow", approved...), nil
	}
	if why := cannotElicit(a.session); why != "" {
		// Until the batch API exists there is nobody else to ask: the call
		// is denied at once, saying how to let it run.
		return engine.Unasked(unasked(why, ask), approved...), nil
	}
	by := askedBy
	for _, c := range ask {
		var change string
		if a.preview != nil {
			change = a.preview(ctx, c)
		}
		res, err := a.session.Elicit(ctx, &mcp.ElicitParams{
			Mode:            "form",
			Message:         question(c, change),
			RequestedSchema: map[string]any{"type": "object", "properties": map[string]any{}},
		})
		switch {
		case err != nil:
			a.log.Warn("elicitation failed; the call is denied", "call", c.CallID, "tool", c.Tool, "err", err)
			by = fmt.Sprintf("default, because asking the MCP client failed (%v)", err)
		case res.Action == "accept":
			approved = append(approved, c.CallID)
		default:
			by = fmt.Sprintf("%s (answered %q)", askedBy, res.Action)
		}
	}
	return engine.ApproveSelected(by, approved...), nil
}

// cannotElicit says why the session's client cannot be asked in a form,
// "" when it can.
func cannotElicit(ss *mcp.ServerSession) string {
	p := ss.InitializeParams()
	if p == nil || p.Capabilities == nil || p.Capabilities.Elicitation == nil {
		return "the MCP client cannot be asked (it does not support elicitation)"
	}
	if e := p.Capabilities.Elicitation; e.Form == nil && e.URL != nil {
		return "the MCP client cannot be asked (it supports only URL elicitation, not forms)"
	}
	return ""
}

// question is what the user sees: the summary as a headline, the risk
// and why policy asks, then every argument in full as it will run (with
// the note when the headline was shortened or redacted), then change,
// the diff a dry run gave (already rendered; "" for none). Text that comes
// from the model (the call id, the tool name in the reason) is rendered
// visibly, and Details indents every line of an argument, so an argument
// cannot pass for the question itself.
//
// The arguments are shown in full (a form has no way to ask for more),
// folded to questionWidth so that a client that wraps long rows never
// starts one with the argument's own text, and the recap of what runs
// comes last, where a flood of argument text cannot push it out of view
// (issue 10 item 3).
func question(c engine.Confirmation, change string) string {
	return fmt.Sprintf("Approve %s call %s?\n%s risk: %s\nreason: %s\nIt will run with these arguments:\n%s%s%s",
		engine.Visible(c.Tool), engine.Visible(c.CallID), strings.ToUpper(string(c.Risk)), c.Summary,
		engine.Visible(c.Reason), c.DetailsWidth(questionWidth), change, c.Recap(questionWidth))
}

// questionWidth is the width elicitation text is folded to: clients show
// it in panels of about this many columns.
const questionWidth = 80

// unasked is who denied calls nobody could be asked about, with what
// would let each run.
func unasked(why string, ask []engine.Confirmation) string {
	calls, tools, personal := engine.Unanswerable(ask)
	var b strings.Builder
	b.WriteString("policy: " + why + calls)
	if len(tools) > 0 {
		fmt.Fprintf(&b, ". To let %s run without asking, add it to tools.approval.allowlist in the operator's configuration, or start the server with --allow %s; or use a client that supports elicitation",
			strings.Join(tools, ", "), strings.Join(tools, " --allow "))
	}
	if len(personal) > 0 {
		fmt.Fprintf(&b, ". Only a person can approve call %s: use a client that supports elicitation (configuration does not cover it)", strings.Join(personal, ", call "))
	}
	return b.String()
}
