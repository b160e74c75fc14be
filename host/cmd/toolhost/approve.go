package main

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/toolhost/toolhost/host"
	"github.com/toolhost/toolhost/host/internal/engine"
	"github.com/toolhost/toolhost/host/internal/inside"
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
	// view is what a person deciding a call is shown (engine.Approval,
	// the same on every surface); nil shows the confirmation alone.
	view func(context.Context, engine.Confirmation) engine.Approval
}

// defaultWidth is the width assumed when the terminal does not say.
const defaultWidth = 80

// newApprover asks at the terminal about the calls of conversation on
// h that allow does not cover.
func newApprover(h *host.Host, conversation string, allow []string) *approver {
	return &approver{allow: allow, in: os.Stdin, out: os.Stderr, tty: term.IsTerminal(int(os.Stdin.Fd())),
		view: func(ctx context.Context, c engine.Confirmation) engine.Approval {
			// Unbounded: the arguments are in this process already, and
			// the question shows their first and last lines until asked
			// for all of them.
			return h.Inside(inside.Key{}).Engine.Approval(ctx, c, engine.ApprovalOptions{Conversation: conversation, MaxArgumentBytes: -1})
		},
		width: func() int {
			w, _, err := term.GetSize(int(os.Stderr.Fd()))
			if err != nil {
				return 0
			}
			return w
		}}
}

func (a *approver) Approve(ctx context.Context, cs []engine.Confirmation) (engine.Decision, error) {
	approved, ask := engine.Preapproved(cs, a.allow)
	if len(ask) == 0 {
		return engine.ApproveSelected("--allow", approved...), nil
	}
	if !a.tty {
		return engine.Unasked(unasked(ask), approved...), nil
	}
	r := bufio.NewReader(a.in)
	for _, c := range ask {
		v := engine.Approval{Confirmation: c, SummaryNote: c.SummaryNote()}
		if a.view != nil {
			v = a.view(ctx, c)
		}
		if a.ask(r, v) {
			approved = append(approved, c.CallID)
		}
	}
	return engine.ApproveSelected("the user at the terminal", approved...), nil
}

// ask asks about c until the answer is not v (view all arguments), and
// reports whether it was yes.
func (a *approver) ask(r *bufio.Reader, c engine.Approval) bool {
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

// show writes the question for c: engine.Approval's text, as every
// text surface shows it (the summary as a headline, why policy asks,
// every argument as it will run, all of each value when all is set and
// otherwise the first and last lines of a long one, the diff of a dry
// run, and the recap), then the question. Every row is folded to the
// terminal's width, so the terminal wraps nothing itself: only
// toolhost's own lines start at the margin, and the arguments, indented,
// cannot draw one. The recap, a few rows whatever the arguments, comes
// right before the question, so what is approved is on the screen when
// the person answers, however long the arguments above it.
func (a *approver) show(c engine.Approval, all bool) {
	w := defaultWidth
	if a.width != nil {
		if tw := a.width(); tw > 0 {
			w = tw
		}
	}
	l := engine.Layout{Width: w, MaxLines: shownLines, More: "answer v to view all"}
	if all {
		l.MaxLines = 0
	}
	var b strings.Builder
	b.WriteString("\n")
	b.WriteString(c.Text(l))
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
