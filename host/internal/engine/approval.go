package engine

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/toolhost/toolhost/host/internal/output"
)

// What a person approves is what will run (FR-APR-03, FR-APR-06), on
// every surface: an MCP elicitation, the terminal's question, a batch
// planned through /v1 or an MCP call held for it, a pending call in the
// journal API. Each shows the one Approval the engine builds for the
// call, so no surface can show less than another: the summary with
// flags saying it is shortened or redacted, why the call is asked, its
// arguments in full and unredacted (secrets in them are the model's own
// text, and hiding them hides what runs), every file as the sandbox
// resolved it, and for a write the diff of a dry run. Only journals and
// logs redact.

// MaxApprovalArgumentBytes is the most argument text (the arguments'
// JSON) an Approval carries and a surface shows unasked: 1 MiB, far more
// than a person reads in a prompt, while a 10 MB argument is neither
// copied into every view nor sent to every client that lists what
// waits. Past it the arguments are left out of the view, never cut:
// Omitted says how large they are and where to read them in full, and
// each argument is still named with its size and its files.
const MaxApprovalArgumentBytes = 1 << 20

// maxDiffLines bounds the diff a text surface shows: enough for the
// changes a person reviews in a prompt, not a flood that pushes the
// recap out of view. The rows left out are counted, and the Approval's
// Diff holds them all.
const maxDiffLines = 200

// previewTimeout bounds a dry run: the approval never waits long for
// the diff, it goes on without one and says so.
const previewTimeout = 10 * time.Second

// Approval is a call awaiting a decision as every surface shows it: the
// Confirmation (its summary, flags, risk, reason, the arguments as they
// will run and each argument rendered visibly with its files), and what
// the engine adds for the person deciding.
type Approval struct {
	Confirmation
	// SummaryNote says how the summary differs from what will run, ""
	// when it does not (Confirmation.SummaryNote).
	SummaryNote string `json:"summary_note,omitempty"`
	// ArgumentBytes is the length of the arguments' JSON as they will
	// run; past MaxApprovalArgumentBytes they are not in the view.
	ArgumentBytes int `json:"argument_bytes"`
	// Paths are every file the call names, as the sandbox resolved them
	// (canonical, relative to their root), each once, in the order the
	// arguments name them.
	Paths []PathInfo `json:"paths"`
	// Diff is the change a write would make, from a dry run of the same
	// call; nil for a tool without a dry run.
	Diff *Diff `json:"diff,omitempty"`
	// Omitted says what this view leaves out, why, and where to read it
	// in full; "" when it shows everything.
	Omitted string `json:"omitted,omitempty"`
}

// Diff is the change a write would make, as its dry run reported it.
type Diff struct {
	// Text is the dry run's unified diff (or its sentence saying nothing
	// would change), whole up to the output limit, each line rendered
	// visibly as the arguments' are (Visible): every byte the write
	// would write shows, a carriage return as ␍, an escape, a bidi
	// override or a zero-width space as <U+XXXX>, none dropped and none
	// raw.
	Text string `json:"text,omitempty"`
	// Truncated says the dry run's output was cut at the output limit:
	// the arguments hold the whole change.
	Truncated bool `json:"truncated,omitempty"`
	// Unavailable says why there is no diff (the dry run failed or took
	// too long); the call is asked about all the same.
	Unavailable string `json:"unavailable,omitempty"`
}

// ApprovalOptions say how to build an Approval.
type ApprovalOptions struct {
	// Conversation is the call's conversation, whose reads the dry run
	// checks as the call would be; Narrowing is its batch's.
	Conversation string
	Narrowing    Narrowing
	// MaxArgumentBytes bounds the arguments the view carries: 0 means
	// MaxApprovalArgumentBytes, a negative value no bound (a terminal
	// already holding the arguments, showing them when asked).
	MaxArgumentBytes int
	// FullAt says where the arguments can be read in full when the
	// view leaves them out, such as "GET /v1/batches/ID/calls/1/arguments".
	FullAt string
}

// Approval builds what a person deciding c is shown: c with every file
// it names and, for a tool with a dry run, the diff of one. The dry run
// is a batch of its own in the call's conversation, narrowed to a dry
// run (Narrowing.DryRun): the host functions refuse every write and
// command whatever the plugin does with "dry_run", nothing is approved
// on the person's behalf, and it is not journaled.
func (e *Engine) Approval(ctx context.Context, c Confirmation, o ApprovalOptions) Approval {
	a := Approval{Confirmation: c, SummaryNote: c.SummaryNote(), ArgumentBytes: len(c.Args)}
	seen := map[PathInfo]bool{}
	for _, arg := range c.Arguments {
		for _, p := range arg.Paths {
			if !seen[p] {
				seen[p] = true
				a.Paths = append(a.Paths, p)
			}
		}
	}
	if a.Paths == nil {
		a.Paths = []PathInfo{}
	}
	if e.hasDryRun(c.Tool) {
		a.Diff = e.dryRunDiff(ctx, c, o)
	}
	limit := o.MaxArgumentBytes
	if limit == 0 {
		limit = MaxApprovalArgumentBytes
	}
	if limit > 0 && len(c.Args) > limit {
		a.omitArguments(limit, o.FullAt)
	}
	return a
}

// HeldBytes is about what a kept in memory holds: the arguments' JSON,
// each argument's text and files, the diff, the summary and reason, and
// what their structures take besides. A server keeping views waiting
// for a decision counts it against its budget, since a view of a long
// write holds several times the arguments sent.
func (a Approval) HeldBytes() int64 {
	n := len(a.Args) + len(a.Summary) + len(a.Reason) + len(a.CallID) + len(a.Tool) + len(a.Omitted) + 512
	for _, arg := range a.Arguments {
		n += arg.heldBytes()
	}
	for _, p := range a.Paths {
		n += len(p.Root) + len(p.Rel) + 32
	}
	if a.Diff != nil {
		n += len(a.Diff.Text) + len(a.Diff.Unavailable)
	}
	return int64(n)
}

// omitArguments leaves the arguments out of the view, keeping each
// argument's name, size and files, and says where to read them.
func (a *Approval) omitArguments(limit int, fullAt string) {
	a.Args = nil
	args := make([]Argument, len(a.Arguments))
	for i, arg := range a.Arguments {
		args[i] = Argument{Name: arg.Name, Paths: arg.Paths, Size: arg.size0(), Lines: nil, Omitted: true}
	}
	a.Arguments = args
	a.Omitted = fmt.Sprintf("the arguments are %s, more than the %s an approval shows: they are not shown here (nor cut)",
		count(a.ArgumentBytes, "byte"), count(limit, "byte"))
	if fullAt != "" {
		a.Omitted += "; read them in full at " + fullAt + " before deciding"
	} else {
		a.Omitted += "; deny the call unless you have read them in full"
	}
}

// hasDryRun reports the tools whose dry run an approval shows: those
// with side effects whose parameters declare a boolean "dry_run"
// (write_file, apply_patch, the edit tools, delete_file, move_file),
// which with "dry_run": true check the change as the call would and
// describe it, writing nothing. Whatever a plugin does with the
// argument, the dry run is narrowed: its host functions refuse every
// write and command (Narrowing.DryRun).
func (e *Engine) hasDryRun(name string) bool {
	tool, ok := e.cfg.Registry.Lookup(name)
	return ok && tool.HasDryRun()
}

// dryRunDiff runs c's call again with "dry_run": true and returns its
// diff, or why there is none.
func (e *Engine) dryRunDiff(ctx context.Context, c Confirmation, o ApprovalOptions) *Diff {
	var args map[string]json.RawMessage
	if err := json.Unmarshal(c.Args, &args); err != nil || args == nil {
		return &Diff{Unavailable: fmt.Sprintf("call %s: the arguments are not a JSON object", c.CallID)}
	}
	args["dry_run"] = json.RawMessage("true")
	raw, err := json.Marshal(args)
	if err != nil {
		return &Diff{Unavailable: fmt.Sprintf("call %s: encoding the dry run's arguments: %v", c.CallID, err)}
	}
	ctx, cancel := context.WithTimeout(ctx, previewTimeout)
	defer cancel()
	n := o.Narrowing
	n.DryRun = true
	b := Batch{Conversation: o.Conversation, Calls: []Call{{ID: c.CallID + "-dry-run", Name: c.Tool, Arguments: raw}}}
	var approver Approver
	if tool, ok := e.cfg.Registry.Lookup(c.Tool); ok && onlyTouchesFiles(e.manifest(tool)) {
		// A tool that requires approval (delete_file, move_file) would
		// be asked about again for its own dry run. One that reaches
		// only files can change nothing in a dry run (its host
		// functions refuse every write), and what it shows goes to the
		// person deciding on the call: it runs unasked. Any other tool
		// (a command, the network) is asked about as ever.
		approver = ApproverFunc(func(context.Context, []Confirmation) (Decision, error) {
			return ApproveAll("the dry run of call " + c.CallID + " for its approval"), nil
		})
	}
	_, results := e.Process(ctx, b, approver, RunOptions{Narrowing: n})
	r := results[0]
	if !r.OK {
		why := "the dry run failed"
		if r.Error != nil {
			why = string(r.Error.Kind) + ": " + r.Error.Message
		}
		return &Diff{Unavailable: why}
	}
	return &Diff{Text: r.Content, Truncated: strings.HasSuffix(r.Content, output.TruncationMarker)}
}

// Text is a as a text surface shows it, laid out by l: the risk and
// summary as a headline, why the call is asked, every argument as it
// will run (Confirmation.DetailsLayout, with the note when the summary
// is shortened or redacted, and what the view leaves out), the diff,
// and the recap last, right before the surface's question. Every row
// holding text of the model's is rendered visibly and indented, so
// nothing in an argument or a diff can pass for the surface's own lines.
func (a Approval) Text(l Layout) string {
	w := l.Width
	var b strings.Builder
	b.WriteString(Fold(Visible(strings.ToUpper(string(a.Risk)))+" risk: "+a.Summary, "", foldMark, w))
	b.WriteString(Fold("reason: "+Visible(a.Reason), "  ", foldMark, w))
	b.WriteString(Fold(fmt.Sprintf("call %s (%s) will run with these arguments:", Visible(a.CallID), Visible(a.Tool)), "  ", foldMark, w))
	if a.Omitted != "" {
		b.WriteString(Fold("("+Visible(a.Omitted)+")", "  ", foldMark, w))
	}
	b.WriteString(a.DetailsLayout(l))
	b.WriteString(a.DiffText(w, maxDiffLines))
	b.WriteString(a.Recap(w))
	return b.String()
}

// DiffText lays the diff out for a text surface width columns wide: its
// first max lines, each rendered visibly and folded under valueMark,
// then how many are not shown; one line saying why when there is none;
// "" for a tool without a dry run. The plugins' "nothing was written"
// header goes: the text says so.
func (a Approval) DiffText(width, max int) string {
	switch {
	case a.Diff == nil:
		return ""
	case a.Diff.Unavailable != "":
		return "The change it would make:\n" + Fold("diff unavailable: "+firstLine(a.Diff.Unavailable), noteMark, noteMark, width)
	}
	out := strings.TrimPrefix(a.Diff.Text, "dry run: nothing was written\n")
	lines := strings.Split(strings.TrimSuffix(out, "\n"), "\n")
	var b strings.Builder
	b.WriteString("The change it would make (from a dry run, nothing written yet):\n")
	for i, line := range lines {
		if max > 0 && i == max {
			b.WriteString(Fold(fmt.Sprintf("%s of the diff not shown", count(len(lines)-max, "more line")), noteMark, noteMark, width))
			break
		}
		b.WriteString(Fold(rendered(line), valueMark, foldMark, width))
	}
	if a.Diff.Truncated {
		b.WriteString(Fold("the diff is longer than a dry run's output may be: the arguments above are the whole change", noteMark, noteMark, width))
	}
	return b.String()
}

// rendered is a line of text Visible already rendered, as a text
// surface shows it: the rendering's own glyphs (⏎ ␍ ⇥ …) stay, and any
// other invisible character, which a Diff built elsewhere may hold, is
// written out too, so the line holds no control or format character
// whoever built it.
func rendered(line string) string {
	line = strings.ToValidUTF8(line, "\uFFFD")
	var b strings.Builder
	b.Grow(len(line))
	for _, r := range line {
		switch r {
		case '⏎', '␍', '⇥', '…':
			b.WriteRune(r)
		default:
			b.WriteString(render(r))
		}
	}
	return b.String()
}

// maxWhyRunes bounds the line saying why a dry run gave no diff.
const maxWhyRunes = 400

// firstLine is s up to its first line feed and at most maxWhyRunes
// runes, rendered visibly, with toolhost's own "…" when more follows:
// added after the rendering, which writes out a … of the text itself as
// <U+2026>.
func firstLine(s string) string {
	more := false
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		s, more = s[:i], true
	}
	if r := []rune(s); len(r) > maxWhyRunes {
		s, more = string(r[:maxWhyRunes]), true
	}
	s = Visible(s)
	if more {
		s += " …"
	}
	return s
}
