package main

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"

	"github.com/toolhost/toolhost/host/engine"
	"golang.org/x/term"
)

// approver decides confirmations at the CLI: tools named by --allow are
// approved, except calls only a person may approve (AlwaysAsk);
// otherwise a person at a terminal is asked, shown the whole arguments
// that will run, and without a terminal the call is denied with a
// message saying why it was asked about and what would allow it.
type approver struct {
	allow []string
	in    io.Reader
	out   io.Writer
	tty   bool
}

func newApprover(allow []string) *approver {
	return &approver{allow: allow, in: os.Stdin, out: os.Stderr, tty: term.IsTerminal(int(os.Stdin.Fd()))}
}

func (a *approver) Approve(_ context.Context, cs []engine.Confirmation) (engine.Decision, error) {
	var approved []string
	var ask []engine.Confirmation
	for _, c := range cs {
		if slices.Contains(a.allow, c.Tool) && !c.AlwaysAsk {
			approved = append(approved, c.CallID)
		} else {
			ask = append(ask, c)
		}
	}
	if len(ask) == 0 {
		return engine.ApproveSelected("--allow", approved...), nil
	}
	if !a.tty {
		return engine.ApproveSelected(unasked(ask), approved...), nil
	}
	r := bufio.NewReader(a.in)
	for _, c := range ask {
		a.show(c)
		line, _ := r.ReadString('\n')
		if answer := strings.ToLower(strings.TrimSpace(line)); answer == "y" || answer == "yes" {
			approved = append(approved, c.CallID)
		}
	}
	return engine.ApproveSelected("the user at the terminal", approved...), nil
}

// show writes the question for c: the summary as a headline, why policy
// asks, then every argument in full as it will run (issue 10 item 3).
// The summary and details are rendered visibly already (engine.Visible);
// the rest may hold the model's text too (the call id, the tool name in
// the reason), so no line break, control or format character of theirs
// reaches the terminal either. Only the question starts at the margin:
// the details are indented, so an argument cannot print a fake one.
func (a *approver) show(c engine.Confirmation) {
	fmt.Fprintf(a.out, "\n%s risk: %s\n  reason: %s\n  call %s (%s) will run with these arguments:\n%sApprove call %s? [y/N] ",
		engine.Visible(strings.ToUpper(string(c.Risk))), c.Summary, engine.Visible(c.Reason),
		engine.Visible(c.CallID), engine.Visible(c.Tool), c.Details(), engine.Visible(c.CallID))
}

// unasked is who denied calls when there is no terminal to ask on: each
// call with why it was asked about, and what would allow it.
func unasked(ask []engine.Confirmation) string {
	var b strings.Builder
	b.WriteString("policy: no terminal to ask on")
	var tools, personal []string
	for _, c := range ask {
		fmt.Fprintf(&b, "; call %s (%s) needs approval: %s", c.CallID, c.Tool, c.Reason)
		if c.AlwaysAsk {
			personal = append(personal, c.CallID)
		} else {
			tools = append(tools, c.Tool)
		}
	}
	if len(tools) > 0 {
		slices.Sort(tools)
		tools = slices.Compact(tools)
		fmt.Fprintf(&b, " (pass --allow %s, or add it to tools.approval.allowlist)", strings.Join(tools, " --allow "))
	}
	if len(personal) > 0 {
		fmt.Fprintf(&b, "; only a person can approve call %s: run it at a terminal to be asked (--allow does not cover it)", strings.Join(personal, ", call "))
	}
	return b.String()
}
