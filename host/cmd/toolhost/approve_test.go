package main

import (
	"bufio"
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/toolhost/toolhost/host/internal/engine"
)

// The CLI's approver: --allow approves, a terminal asks per call, no
// terminal denies with a hint.
func TestApprover(t *testing.T) {
	cs := []engine.Confirmation{
		{CallID: "1", Tool: "write_file", Summary: "Write 1 bytes to a.txt", Risk: "medium"},
		{CallID: "2", Tool: "run_command", Summary: "Run command: ls", Risk: "high"},
		{CallID: "3", Tool: "apply_patch", Summary: "Apply patch to 1 file(s): a", Risk: "medium"},
	}
	tests := []struct {
		name     string
		allow    []string
		tty      bool
		answers  string
		approved []string
		by       string
	}{
		{"terminal answers", nil, true, "y\nno\nYES\n", []string{"1", "3"}, "the user at the terminal"},
		{"allow skips the question", []string{"run_command"}, true, "n\ny\n", []string{"2", "3"}, "the user at the terminal"},
		{"no terminal", []string{"write_file"}, false, "", []string{"1"}, "--allow apply_patch --allow run_command"},
		{"all allowed", []string{"write_file", "run_command", "apply_patch"}, false, "", []string{"1", "2", "3"}, "--allow"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var out strings.Builder
			a := &approver{allow: tt.allow, tty: tt.tty, in: strings.NewReader(tt.answers), out: &out}
			d, err := a.Approve(context.Background(), cs)
			if err != nil {
				t.Fatal(err)
			}
			if !strings.Contains(d.By, tt.by) {
				t.Errorf("By = %q, want it to contain %q", d.By, tt.by)
			}
			p := &engine.Plan{}
			for _, c := range cs {
				p.Calls = append(p.Calls, engine.PlannedCall{Call: engine.Call{ID: c.CallID, Name: c.Tool}, Disposition: engine.RequiresConfirmation, Confirmation: &c})
			}
			var got []string
			eng := engine.New(engine.Config{})
			for _, r := range eng.Run(context.Background(), p, d, engine.RunOptions{}) {
				if r.Error == nil || !strings.Contains(r.Error.Message, "Denied by") {
					got = append(got, r.ID)
				}
			}
			if strings.Join(got, ",") != strings.Join(tt.approved, ",") {
				t.Errorf("approved %v, want %v", got, tt.approved)
			}
			if tt.tty && !strings.Contains(out.String(), "Approve call") {
				t.Errorf("no question asked: %q", out.String())
			}
		})
	}
}

// The question shows every argument in full, with
// the resolved path and a note when the summary is not all of it; text in
// an argument never starts a line of its own; a call only a person may
// approve is asked about even with --allow, and without a terminal it is
// denied saying why.
func TestApproverShowsArguments(t *testing.T) {
	c := engine.Confirmation{
		CallID: "1", Tool: "write_file", Summary: "Write 31 bytes to ./././a/./b.txt", Risk: "medium",
		Reason: "vendor/ would become a git repository", AlwaysAsk: true, SummaryTruncated: true,
		Arguments: []engine.Argument{
			{Name: "path", Lines: []string{"./././a/./b.txt"}, Paths: []engine.PathInfo{{Rel: "a/b.txt"}}},
			{Name: "content", Lines: []string{"hi", "Approve call 1? [y/N] y"}},
		},
	}
	var out strings.Builder
	a := &approver{allow: []string{"write_file"}, tty: true, in: strings.NewReader("n\n"), out: &out}
	d, err := a.Approve(context.Background(), []engine.Confirmation{c})
	if err != nil {
		t.Fatal(err)
	}
	if d.By != "the user at the terminal" {
		t.Errorf("--allow approved a call only a person may approve: %q", d.By)
	}
	for _, want := range []string{
		"\nMEDIUM risk: Write 31 bytes to ./././a/./b.txt\n",
		"  reason: vendor/ would become a git repository\n",
		"  (summary shortened; the full arguments below are what will run)\n",
		"  path: ./././a/./b.txt\n    → file a/b.txt\n",
		"  content: 2 lines\n    │hi\n    │Approve call 1? [y/N] y\n",
	} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("question lacks %q:\n%s", want, out.String())
		}
	}
	if n := strings.Count(out.String(), "\nApprove call"); n != 1 {
		t.Errorf("%d lines start with the question:\n%s", n, out.String())
	}

	a = &approver{allow: []string{"write_file"}}
	d, _ = a.Approve(context.Background(), []engine.Confirmation{c})
	for _, want := range []string{"call 1 (write_file) needs approval: vendor/ would become a git repository", "only a person can approve call 1"} {
		if !strings.Contains(d.By, want) {
			t.Errorf("By = %q, want %q", d.By, want)
		}
	}
}

// A value of 100,000 empty lines and
// a last line padded to wrap into a fake question cannot push what is
// approved off the screen or draw a line of toolhost's: the rows right
// above the question are a recap naming the call, its risk, its
// arguments' sizes and the file it writes; the value shows its first and
// last lines, folded, and v shows it all, then asks again.
func TestApproverRecapAndViewAll(t *testing.T) {
	pad := func(s string) string { return s + strings.Repeat(" ", 80-len(s)) }
	forged := strings.Repeat(" ", 75) + pad("LOW risk: Write 5 bytes to notes.md") + pad("  path: notes.md")
	var lines []string
	for i := range 100 {
		lines = append(lines, fmt.Sprintf("line %d", i))
	}
	lines = append(append(lines, make([]string, 100000)...), forged)
	c := engine.Confirmation{
		CallID: "1", Tool: "write_file", Summary: "Write 100081 bytes to .bashrc", Risk: "high", Reason: ".bashrc makes tools run code",
		Arguments: []engine.Argument{
			{Name: "path", Lines: []string{".bashrc"}, Paths: []engine.PathInfo{{Rel: ".bashrc"}}},
			{Name: "content", Lines: lines, Size: len(strings.Join(lines, "\n"))},
		},
	}
	recap := []string{
		"┏━ toolhost asks about call 1 (write_file), HIGH risk",
		"┃ summary: Write 100081 bytes to .bashrc",
		"┃ path: 7 bytes",
		"┃   → file .bashrc",
		"┃ content: 101,025 bytes, 100,101 lines (100,000 empty)",
		"┗━ y runs it, v shows every argument in full, anything else denies it",
		"Approve call 1? [y/N] ",
	}
	tests := []struct {
		name      string
		answers   string
		approved  bool
		questions int
		maxRows   int
		want      []string // rows shown
		absent    []string
	}{
		{"default view", "n\n", false, 1, 60,
			[]string{"    │line 19", "    ⋮ 100,061 more lines not shown (99,981 empty); answer v to view all",
				"    │␠×75LOW risk: Write 5 bytes to notes.md␠×47path: notes.md␠×64"},
			[]string{"    │line 20", "    │line 99"}},
		{"v shows all, then asks again", "v\ny\n", true, 2, 200,
			[]string{"    │line 20", "    │line 99", "    ⋮ 100,000 empty lines"}, nil},
		{"v at the end of input denies", "v", false, 1, 60, nil, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var out strings.Builder
			a := &approver{tty: true, out: &out, width: func() int { return 80 }}
			if got := a.ask(bufio.NewReader(strings.NewReader(tt.answers)), engine.Approval{Confirmation: c, SummaryNote: c.SummaryNote()}); got != tt.approved {
				t.Errorf("approved %v, want %v", got, tt.approved)
			}
			rows := strings.Split(out.String(), "\n")
			if len(rows) > tt.maxRows {
				t.Errorf("%d rows shown, want at most %d", len(rows), tt.maxRows)
			}
			if n := strings.Count(out.String(), "\nApprove call"); n != tt.questions {
				t.Errorf("asked %d times, want %d", n, tt.questions)
			}
			if got := rows[len(rows)-len(recap):]; strings.Join(got, "\n") != strings.Join(recap, "\n") {
				t.Errorf("the rows above the answer are\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(recap, "\n"))
			}
			for _, w := range tt.want {
				if !slices.Contains(rows, w) {
					t.Errorf("no row %q", w)
				}
			}
			for _, w := range tt.absent {
				if slices.Contains(rows, w) {
					t.Errorf("row %q shown in the default view", w)
				}
			}
			for _, row := range rows {
				if utf8.RuneCountInString(row) > 79 {
					t.Errorf("row %q is wider than the terminal", row)
				}
				if strings.HasPrefix(strings.TrimLeft(row, " "), "path: notes.md") || strings.HasPrefix(row, "LOW") {
					t.Errorf("row %q passes for toolhost's", row)
				}
			}
		})
	}
}
