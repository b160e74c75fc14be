package server

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/toolhost/toolhost/host"
	"github.com/toolhost/toolhost/host/internal/engine"
)

// maxDiffLines bounds the diff an elicitation shows: enough for the
// changes a person reviews in a prompt, not a flood that pushes the
// recap out of view.
const maxDiffLines = 200

// previewTimeout bounds a dry run: the approval never waits long for
// the diff, it goes on without one.
const previewTimeout = 10 * time.Second

// The marks a diff's rows start with, as Details draws an argument's:
// no row of the diff starts at the margin, where it could pass for the
// question's own text; toolhost's notes start with a mark no diff line
// can produce.
const (
	diffMark = "    │"
	foldMark = "    ┆"
	noteMark = "    ⋮ "
)

// hasDryRun reports the tools whose dry run an approval shows: toolhost's write_file and apply_patch, which with
// "dry_run": true check the change as a write would and return its
// unified diff, writing nothing (fs_commit with abi.CommitDryRun).
func hasDryRun(tool string) bool {
	return tool == "write_file" || tool == "apply_patch"
}

// preview is the change c's call would make, for its approval question:
// the dry run's diff rendered and indented, or one line saying why there
// is none; "" for a tool without a dry run. It never fails the approval.
func (s *Server) preview(ctx context.Context, conversation string, c engine.Confirmation, n engine.Narrowing) string {
	if !hasDryRun(c.Tool) {
		return ""
	}
	out, err := s.dryRun(ctx, conversation, c, n)
	if err != nil {
		return "The change it would make:\n" + engine.Fold("diff unavailable: "+firstLine(err.Error()), noteMark, noteMark, questionWidth)
	}
	return "The change it would make (from a dry run, nothing written yet):\n" + renderDiff(out, maxDiffLines)
}

// dryRun runs c's call again with "dry_run": true, as a one-call batch
// of the same conversation through the Host, so the same policy and
// stale-file checks apply, and returns its output. The batch is narrowed
// to a dry run (engine.Narrowing.DryRun): the host functions refuse every
// write and command whatever the plugin does with dry_run, so nothing is
// approved on a person's behalf and a plugin that ignored the flag would
// change nothing.
func (s *Server) dryRun(ctx context.Context, conversation string, c engine.Confirmation, n engine.Narrowing) (string, error) {
	var args map[string]json.RawMessage
	if err := json.Unmarshal(c.Args, &args); err != nil || args == nil {
		return "", fmt.Errorf("call %s: the arguments are not a JSON object", c.CallID)
	}
	args["dry_run"] = json.RawMessage("true")
	raw, err := json.Marshal(args)
	if err != nil {
		return "", fmt.Errorf("call %s: encoding the dry run's arguments: %w", c.CallID, err)
	}
	ctx, cancel := context.WithTimeout(ctx, previewTimeout)
	defer cancel()
	id := c.CallID + "-dry-run"
	b := engine.Batch{Conversation: conversation, Calls: []engine.Call{{ID: id, Name: c.Tool, Arguments: raw}}}
	n.DryRun = true
	_, results := s.h.Process(ctx, b, host.BatchOptions{Narrowing: n})
	r := results[0]
	if !r.OK {
		return "", errors.New(errorText(r.Error))
	}
	return r.Content, nil
}

// renderDiff lays a dry run's output out for the question: its first
// max lines, each rendered visibly and folded under diffMark, then how
// many are not shown. The plugins' "nothing was written" header goes:
// the question says so.
func renderDiff(out string, max int) string {
	out = strings.TrimPrefix(out, "dry run: nothing was written\n")
	lines := strings.Split(strings.TrimSuffix(out, "\n"), "\n")
	var b strings.Builder
	for i, line := range lines {
		if i == max {
			b.WriteString(engine.Fold(fmt.Sprintf("%d more lines of the diff not shown", len(lines)-max), noteMark, noteMark, questionWidth))
			break
		}
		b.WriteString(engine.Fold(engine.Visible(line), diffMark, foldMark, questionWidth))
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
	s = engine.Visible(s)
	if more {
		s += " …"
	}
	return s
}
