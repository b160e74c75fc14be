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
// approved; otherwise a person at a terminal is asked, and without a
// terminal the call is denied with a message saying what would allow it.
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
		if slices.Contains(a.allow, c.Tool) {
			approved = append(approved, c.CallID)
		} else {
			ask = append(ask, c)
		}
	}
	if len(ask) == 0 {
		return engine.ApproveSelected("--allow", approved...), nil
	}
	if !a.tty {
		tools := make([]string, 0, len(ask))
		for _, c := range ask {
			tools = append(tools, c.Tool)
		}
		slices.Sort(tools)
		tools = slices.Compact(tools)
		by := fmt.Sprintf("policy: no terminal to ask on (pass --allow %s, or add it to tools.approval.allowlist)", strings.Join(tools, " --allow "))
		return engine.ApproveSelected(by, approved...), nil
	}
	r := bufio.NewReader(a.in)
	for _, c := range ask {
		// The summary is rendered visibly already (engine.Visible); the
		// rest may hold the model's text too (the call id, the tool name
		// in the reason), so no line break, control or format character
		// of theirs reaches the terminal either.
		fmt.Fprintf(a.out, "\n%s risk: %s\n  reason: %s\nApprove call %s? [y/N] ",
			engine.Visible(strings.ToUpper(string(c.Risk))), c.Summary, engine.Visible(c.Reason), engine.Visible(c.CallID))
		line, _ := r.ReadString('\n')
		if answer := strings.ToLower(strings.TrimSpace(line)); answer == "y" || answer == "yes" {
			approved = append(approved, c.CallID)
		}
	}
	return engine.ApproveSelected("the user at the terminal", approved...), nil
}
