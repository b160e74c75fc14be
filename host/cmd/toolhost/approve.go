package main

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/toolhost/toolhost/host/internal/engine"
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
	// width is the terminal's width in columns, asked each time a
	// question is shown (the window may have been resized); nil or 0
	// means defaultWidth.
	width func() int
}

// defaultWidth is the width assumed when the terminal does not say.
const defaultWidth = 80

func newApprover(allow []string) *approver {
	return &approver{allow: allow, in: os.Stdin, out: os.Stderr, tty: term.IsTerminal(int(os.Stdin.Fd())),
		width: func() int {
			w, _, err := term.GetSize(int(os.Stderr.Fd()))
			if err != nil {
				return 0
			}
			return w
		}}
}

func (a *approver) Approve(_ context.Context, cs []engine.Confirmation) (engine.Decision, error) {
	approved, ask := engine.Preapproved(cs, a.allow)
	if len(ask) == 0 {
		return engine.ApproveSelected("--allow", approved...), nil
	}
	if !a.tty {
		return engine.Unasked(unasked(ask), approved...), nil
	}
	r := bufio.NewReader(a.in)
	for _, c := range ask {
		if a.ask(r, c) {
			approved = append(approved, c.CallID)
		}
	}
	return engine.ApproveSelected("the user at the terminal", approved...), nil
}

// ask asks about c until the answer is not v (view all arguments), and
// reports whether it was yes.
func (a *approver) ask(r *bufio.Reader, c engine.Confirmation) bool {
	all := false
	for {
		a.show(c, all)
		line, err := r.ReadString('\n')
		switch answer := strings.ToLower(strings.TrimSpace(line)); {
		case answer == "y" || answer == "yes":
			return true
		case answer == "v" && err == nil:
			all = true
		default:
			return false
		}
	}
}

// shownLines is how many lines of a value the question shows before
// it is asked to show all: a value longer than a screen would push what
// is being approved out of sight.
const shownLines = 40

// show writes the question for c: the summary as a
// headline, why policy asks, every argument as it will run (all of each
// value when all is set, otherwise the first and last lines of a long
// one), then a recap and the question. The summary and details are
// rendered visibly already (engine.Visible); the rest may hold the
// model's text too (the call id, the tool name in the reason), so no
// line break, control or format character of theirs reaches the
// terminal either. Every row is folded to the terminal's width, so the
// terminal wraps nothing itself: only toolhost's own lines start at the
// margin, and the arguments, indented, cannot draw one. The recap, a
// few rows whatever the arguments, comes right before the question, so
// what is approved is on the screen when the person answers, however
// long the arguments above it.
func (a *approver) show(c engine.Confirmation, all bool) {
	w := defaultWidth
	if a.width != nil {
		if tw := a.width(); tw > 0 {
			w = tw
		}
	}
	const cont = "    ┆"
	l := engine.Layout{Width: w, MaxLines: shownLines, More: "answer v to view all"}
	if all {
		l.MaxLines = 0
	}
	var b strings.Builder
	b.WriteString("\n")
	b.WriteString(engine.Fold(engine.Visible(strings.ToUpper(string(c.Risk)))+" risk: "+c.Summary, "", cont, w))
	b.WriteString(engine.Fold("reason: "+engine.Visible(c.Reason), "  ", cont, w))
	b.WriteString(engine.Fold(fmt.Sprintf("call %s (%s) will run with these arguments:", engine.Visible(c.CallID), engine.Visible(c.Tool)), "  ", cont, w))
	b.WriteString(c.DetailsLayout(l))
	b.WriteString(c.Recap(w))
	b.WriteString(engine.Fold("y runs it, v shows every argument in full, anything else denies it", "┗━ ", "   ", w))
	fmt.Fprintf(&b, "Approve call %s? [y/N] ", questionID(c.CallID))
	io.WriteString(a.out, b.String())
}

// questionID is the call id as the question names it: cut short when
// long, so the question stays on one row (the recap names it whole).
func questionID(id string) string {
	r := []rune(engine.Visible(id))
	if len(r) <= 24 {
		return string(r)
	}
	return string(r[:11]) + "…" + string(r[len(r)-12:])
}

// unasked is who denied calls when there is no terminal to ask on: each
// call with why it was asked about, and what would allow it.
func unasked(ask []engine.Confirmation) string {
	why, tools, personal := engine.Unanswerable(ask)
	var b strings.Builder
	b.WriteString("policy: no terminal to ask on" + why)
	if len(tools) > 0 {
		fmt.Fprintf(&b, " (pass --allow %s, or add it to tools.approval.allowlist)", strings.Join(tools, " --allow "))
	}
	if len(personal) > 0 {
		fmt.Fprintf(&b, "; only a person can approve call %s: run it at a terminal to be asked (--allow does not cover it)", strings.Join(personal, ", call "))
	}
	return b.String()
}
