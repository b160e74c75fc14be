package engine

import (
	"context"
	"fmt"
	"slices"
	"strings"
)

// Approver decides the confirmations of one batch (FR-APR-03): a person at
// a terminal, an MCP client asked by elicitation, a console, a policy
// service. An error (the person left, ctx ended) denies every call that
// needed confirmation; the error's text says why in their results.
type Approver interface {
	Approve(ctx context.Context, cs []Confirmation) (Decision, error)
}

// ApproverFunc adapts a function to Approver.
type ApproverFunc func(ctx context.Context, cs []Confirmation) (Decision, error)

// Approve calls f.
func (f ApproverFunc) Approve(ctx context.Context, cs []Confirmation) (Decision, error) {
	return f(ctx, cs)
}

// EventSink receives a batch's events, one at a time and in order. Send
// may block, but only until ctx ends: a call's deadline or cancellation
// ends it on time whatever the consumer does. An error means the event was
// not delivered (the consumer is gone or too slow); the batch goes on and
// the engine counts what was missed.
type EventSink interface {
	Send(ctx context.Context, ev Event) error
}

// EventSinkFunc adapts a function to EventSink.
type EventSinkFunc func(ctx context.Context, ev Event) error

// Send calls f.
func (f EventSinkFunc) Send(ctx context.Context, ev Event) error { return f(ctx, ev) }

// Preapproved splits confirmations into the calls an operator's standing
// approval covers (their tool is in tools, as with --allow) and those a
// person must still be asked about. A call only a person may approve
// (AlwaysAsk: a write laying out a git directory) is never covered, so
// every surface keeps that rule in the same place.
func Preapproved(cs []Confirmation, tools []string) (approved []string, ask []Confirmation) {
	for _, c := range cs {
		if slices.Contains(tools, c.Tool) && !c.AlwaysAsk {
			approved = append(approved, c.CallID)
		} else {
			ask = append(ask, c)
		}
	}
	return approved, ask
}

// Unanswerable describes confirmations nobody could be asked about, for
// the denial each surface words with its own advice: every call with why
// it needed approval ("; call 1 (write_file) needs approval: ..."), the
// tools a standing approval could cover (sorted, once each), and the calls
// only a person may approve (AlwaysAsk), which no configuration covers.
func Unanswerable(ask []Confirmation) (why string, tools, personal []string) {
	var b strings.Builder
	for _, c := range ask {
		fmt.Fprintf(&b, "; call %s (%s) needs approval: %s", c.CallID, c.Tool, c.Reason)
		if c.AlwaysAsk {
			personal = append(personal, c.CallID)
		} else {
			tools = append(tools, c.Tool)
		}
	}
	slices.Sort(tools)
	return b.String(), slices.Compact(tools), personal
}
