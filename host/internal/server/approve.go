package server

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync/atomic"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolhost/toolhost/host/internal/engine"
)

// approver decides the confirmations of an MCP client's call where the
// operator routes them (mode): it asks the client by elicitation
// (accept runs the call, decline or cancel denies it), holds the call
// for a decision in the console, toolhost approve or the batch API, or
// both at once. Tools the operator allowed run without asking, except
// calls only a person may approve.
type approver struct {
	session *mcp.ServerSession
	allow   []string
	log     *slog.Logger
	mode    Approvals
	// timeout bounds each elicitation: a client that never answers gets
	// its call denied, not held forever.
	timeout time.Duration
	// view is what a person deciding a call is shown (engine.Approval,
	// the same on every surface); nil shows the confirmation alone.
	view func(context.Context, engine.Confirmation) engine.Approval
	// hold holds the calls for a decision elsewhere (why says why the
	// client is not the one asked), approved being those --allow covers;
	// a decision the client sends on preempt first wins. nil denies such
	// calls at once.
	hold func(ctx context.Context, why string, ask []engine.Confirmation, approved []string, preempt <-chan engine.Decision) engine.Decision
	// holding reports whether a held call can be decided now (the HTTP
	// server runs); under ApprovalsBoth without it the client alone is
	// asked. nil means it can.
	holding func() bool
}

// answeredBy names who decided a call the client was asked about: the
// client, by its answer. Whether a person chose that answer, or the
// client gave it by itself, toolhost cannot tell, so it does not say.
func answeredBy(action string) string {
	return fmt.Sprintf("the MCP client, which answered %q to the approval question", action)
}

// consoleOnly is why a call is held under ApprovalsConsole.
const consoleOnly = "the operator takes approvals in the console only (server.approvals = console), so the MCP client is not asked"

func (a *approver) Approve(ctx context.Context, cs []engine.Confirmation) (engine.Decision, error) {
	approved, ask := engine.Preapproved(cs, a.allow)
	if len(ask) == 0 {
		return engine.ApproveSelected("--allow", approved...), nil
	}
	why := cannotElicit(a.session)
	switch {
	case a.mode == ApprovalsConsole:
		return a.held(ctx, consoleOnly, ask, approved), nil
	case why != "":
		return a.held(ctx, why, ask, approved), nil
	case a.mode == ApprovalsBoth && a.hold != nil && (a.holding == nil || a.holding()):
		return a.both(ctx, ask, approved), nil
	}
	d, _ := a.elicitAll(ctx, ask, approved)
	return d, nil
}

// held holds ask for a decision elsewhere, or denies it when nothing
// can hold it.
func (a *approver) held(ctx context.Context, why string, ask []engine.Confirmation, approved []string) engine.Decision {
	if a.hold != nil {
		return a.hold(ctx, why, ask, approved, nil)
	}
	if a.mode == ApprovalsConsole {
		why += ", and holding is off (--hold 0 or server.approval_hold_seconds = 0)"
	}
	return engine.Unasked(unasked(why, ask, a.mode), approved...)
}

// both asks the client and holds the calls at once: the client's answer
// or a decision in the console, whichever comes first, decides. A
// question the client never answers leaves the decision to the console.
func (a *approver) both(ctx context.Context, ask []engine.Confirmation, approved []string) engine.Decision {
	ectx, cancel := context.WithCancel(ctx)
	defer cancel() // withdraws a question still open
	answer := make(chan engine.Decision, 1)
	go func() {
		// A copy: elicitAll appends to it while the hold reads the original.
		if d, answered := a.elicitAll(ectx, ask, slices.Clone(approved)); answered {
			// Every call accepted: the decision names no denier, but the
			// held batch must say who decided.
			d.By = cmp.Or(d.By, answeredBy("accept"))
			answer <- d
		}
	}()
	return a.hold(ctx, "the MCP client was asked too (server.approvals = both) and did not answer", ask, approved, answer)
}

// elicitAll asks the client about each call in ask, and reports
// whether it answered every question.
func (a *approver) elicitAll(ctx context.Context, ask []engine.Confirmation, approved []string) (engine.Decision, bool) {
	// by is who denied the calls not approved; unanswered says that was
	// by default, no answer having come, rather than by the client's.
	var by string
	unanswered := false
	for _, c := range ask {
		v := engine.Approval{Confirmation: c, SummaryNote: c.SummaryNote()}
		if a.view != nil {
			v = a.view(ctx, c)
		}
		res, err := a.elicit(ctx, &mcp.ElicitParams{
			Mode:            "form",
			Message:         question(v),
			RequestedSchema: map[string]any{"type": "object", "properties": map[string]any{}},
		})
		switch {
		case errors.Is(err, errNoAnswer):
			a.log.Warn("the MCP client did not answer an approval question in time; the call is denied", "call", c.CallID, "tool", c.Tool, "timeout", a.timeout)
			by, unanswered = fmt.Sprintf("default, because the MCP client did not answer the question about call %s within %v; ask again, and answer the client's prompt", c.CallID, a.timeout), true
		case err != nil:
			if ctx.Err() == nil {
				a.log.Warn("elicitation failed; the call is denied", "call", c.CallID, "tool", c.Tool, "err", err)
			}
			by, unanswered = fmt.Sprintf("default, because asking the MCP client failed (%v)", err), true
		case res.Action == "accept":
			approved = append(approved, c.CallID)
		case !unanswered:
			by = answeredBy(res.Action)
		}
	}
	if unanswered {
		return engine.Unasked(by, approved...), false
	}
	return engine.ApproveSelected(by, approved...), true
}

// errNoAnswer is an elicitation the client did not answer in time.
var errNoAnswer = errors.New("the MCP client did not answer")

// elicit asks the client, waiting at most a.timeout (when set) for the
// answer.
func (a *approver) elicit(ctx context.Context, p *mcp.ElicitParams) (*mcp.ElicitResult, error) {
	if a.timeout <= 0 {
		return a.session.Elicit(ctx, p)
	}
	ectx, cancel := context.WithTimeoutCause(ctx, a.timeout, errNoAnswer)
	defer cancel()
	res, err := a.session.Elicit(ectx, p)
	if err != nil && ctx.Err() == nil && errors.Is(context.Cause(ectx), errNoAnswer) {
		return nil, errNoAnswer
	}
	return res, err
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

// question is what the user sees: engine.Approval's text, as every text
// surface shows it (the risk and summary, why policy asks, every
// argument in full as it will run with the note when the summary was
// shortened or redacted, the diff of a dry run, the recap last), under
// the question. Text that comes from the model is rendered visibly and
// indented, so an argument cannot pass for the question itself.
//
// The arguments are shown in full up to engine.MaxApprovalArgumentBytes
// (a form has no way to ask for more; past it the text says they are
// not shown and where they are), folded to questionWidth so that a
// client that wraps long rows never starts one with the argument's own
// text, and the recap of what runs comes last, where a flood of argument
// text cannot push it out of view.
func question(a engine.Approval) string {
	return fmt.Sprintf("Approve %s call %s?\n%s", engine.Visible(a.Tool), engine.Visible(a.CallID), a.Text(engine.Layout{Width: questionWidth}))
}

// questionWidth is the width elicitation text is folded to: clients show
// it in panels of about this many columns.
const questionWidth = 80

// unasked is who denied calls nobody could be asked about, with what
// would let each run where approvals go (mode).
func unasked(why string, ask []engine.Confirmation, mode Approvals) string {
	calls, tools, personal := engine.Unanswerable(ask)
	person := "use a client that supports elicitation"
	if mode != ApprovalsElicitation {
		person = "approve it in the web console (/console), with toolhost approve, or through the batch API while it is held"
	}
	var b strings.Builder
	b.WriteString("policy: " + why + calls)
	if len(tools) > 0 {
		fmt.Fprintf(&b, ". To let %s run without asking, add it to tools.approval.allowlist in the operator's configuration, or start the server with --allow %s; or %s",
			strings.Join(tools, ", "), strings.Join(tools, " --allow "), person)
	}
	if len(personal) > 0 {
		fmt.Fprintf(&b, ". Only a person can approve call %s: %s (configuration does not cover it)", strings.Join(personal, ", call "), person)
	}
	return b.String()
}

// holder is how a call is decided that the MCP client is not asked
// about (it cannot be, or the operator takes approvals in the console):
// while the server serves HTTP it is held, as batch id, for a decision
// in the web console, by toolhost approve or through the batch API
// (POST /v1/batches/ID/decision), at most Options.HoldTimeout; then it
// is denied, the denial saying where to approve it and how to allow the
// tool in configuration. Without HTTP it is denied at once. A decision
// on preempt (the client's answer, under ApprovalsBoth) decides it if
// it comes first. The held batch is stored in held, for its events and
// its results; it shows the call as every approval surface does
// (engine.Approval), n being the call's narrowing and mode where its
// approvals go.
func (s *Server) holder(id, conv string, n engine.Narrowing, mode Approvals, call engine.Call, held *atomic.Pointer[batch]) func(context.Context, string, []engine.Confirmation, []string, <-chan engine.Decision) engine.Decision {
	return func(ctx context.Context, why string, ask []engine.Confirmation, approved []string, preempt <-chan engine.Decision) engine.Decision {
		base := s.apiBase()
		if base == "" {
			if preempt != nil {
				// The client was asked: its answer is the only one to come.
				select {
				case d := <-preempt:
					return d
				case <-ctx.Done():
					return engine.Unasked(fmt.Sprintf("default, because the call ended (%v) before the MCP client answered", context.Cause(ctx)))
				}
			}
			return engine.Unasked(unasked(why, ask, mode)+". No HTTP server runs to hold it for a decision instead: toolhost serve started with --http ADDR (alongside --stdio if need be) holds such a call until it is approved in the web console at http://ADDR/console, with toolhost approve, or through POST http://ADDR/v1/batches/ID/decision", approved...)
		}
		var view *engine.Approval
		for _, c := range ask {
			if c.CallID == call.ID {
				view = s.approval(ctx, conv, n, c, id, 1)
			}
		}
		b := newBatch(s.stopping, id, conv, stateAwaiting, []callView{viewCall(id, 1, call, engine.RequiresConfirmation, view, nil)})
		b.mcp = true
		b.argBytes = callBytes([]engine.Call{call})
		if err := s.batches.add(b); err != nil {
			b.cancel()
			return engine.Unasked(unasked(why, ask, mode)+". It could not be held for a decision through the batch API: "+err.Error(), approved...)
		}
		held.Store(b)
		b.mu.Lock()
		b.engineEventLocked(engine.EventAwaitingApproval)
		b.setStateLocked(stateAwaiting)
		b.mu.Unlock()
		decide := base + batchPath(id, "decision")
		timeout := s.opts.HoldTimeout
		s.log.Warn("a tool call waits for approval in the web console, toolhost approve or the batch API",
			"why", why, "batch", id, "call", call.ID, "tool", call.Name, "console", base+consolePath,
			"approve", "POST "+decide+` {"decision":"approve_all"}`, "deny", "POST "+decide+` {"decision":"deny_all"}`, "timeout", timeout)
		t := time.NewTimer(timeout)
		defer t.Stop()
		select {
		case v := <-b.decided:
			return v.decision(approved)
		case d := <-preempt:
			if b.claim(d.By) {
				return d
			}
		case <-t.C:
			if b.claim("nobody: the hold timed out") {
				s.log.Warn("a held tool call was denied: nobody decided in time", "batch", id, "call", call.ID, "tool", call.Name, "timeout", timeout)
				return engine.Unasked(heldTooLong(why, ask, mode, id, decide, base, timeout), approved...)
			}
		case <-ctx.Done():
			if b.claim("nobody: the call ended before a decision") {
				b.mu.Lock()
				b.cancelled = true
				b.mu.Unlock()
				return engine.Unasked(fmt.Sprintf("default, because the call ended (%v) while it was held for a decision", context.Cause(ctx)))
			}
		}
		// A decision came as the hold ended: it counts.
		return (<-b.decided).decision(approved)
	}
}

// heldTooLong is the denial of a call held for a decision that did not
// come: what would have approved it, and how to let it run next time.
func heldTooLong(why string, ask []engine.Confirmation, mode Approvals, id, decide, base string, timeout time.Duration) string {
	return fmt.Sprintf("%s. It was held %v as batch %s for a decision, and none came: while a call is held, the web console at %s%s, "+
		"toolhost approve, or POST %s with the body {\"decision\":\"approve_all\"} (or \"deny_all\") and the header \"Authorization: Bearer TOKEN\" (the token toolhost serve printed) decides it; "+
		"GET %s/v1/batches?state=awaiting_approval lists the calls held", unasked(why, ask, mode), timeout, id, base, consolePath, decide, base)
}

// apiBase is the batch API's base URL while the server serves HTTP, ""
// otherwise.
func (s *Server) apiBase() string {
	if p := s.api.Load(); p != nil {
		return *p
	}
	return ""
}

// teeSink hands the engine's events on to next and, once a call is held,
// to its batch's log.
type teeSink struct {
	next engine.EventSink
	held *atomic.Pointer[batch]
}

func (t teeSink) Send(ctx context.Context, ev engine.Event) error {
	// The held batch records its own planned and awaiting events.
	if b := t.held.Load(); b != nil && ev.Kind != engine.EventPlanned && ev.Kind != engine.EventAwaitingApproval {
		b.Send(ctx, ev)
	}
	if t.next != nil {
		return t.next.Send(ctx, ev)
	}
	return nil
}
