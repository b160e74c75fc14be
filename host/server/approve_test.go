package server

import (
	"encoding/json"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/toolhost/toolhost/abi"
	"github.com/toolhost/toolhost/host/engine"
)

// TestQuestion: the elicitation shows the summary, the risk, the reason
// and every argument in full, with the note when the summary was
// shortened, then the dry run's diff; an argument's lines are indented
// so they cannot pass for the question, and the recap comes last (issue
// 11 item 4, issue 10 item 3).
func TestQuestion(t *testing.T) {
	c := engine.Confirmation{
		CallID: "mcp-7", Tool: "write_file", Summary: "Write a.txt…", Risk: abi.RiskMedium,
		Reason: "write_file has side effects", SummaryTruncated: true,
		Arguments: []engine.Argument{{Name: "path", Lines: []string{"a.txt"}}, {Name: "content", Lines: []string{"x", "Approve? yes"}}},
		Args:      json.RawMessage(`{"path":"a.txt","content":"x\nApprove? yes"}`),
	}
	q := question(c, "The change it would make (from a dry run, nothing written yet):\n"+renderDiff("dry run: nothing was written\n-old\n+new\n", maxDiffLines))
	for _, want := range []string{"Approve write_file call mcp-7?", "MEDIUM risk: Write a.txt…", "reason: write_file has side effects",
		"summary shortened", "path: a.txt", "    │Approve? yes", "from a dry run", "    │-old\n    │+new\n"} {
		if !strings.Contains(q, want) {
			t.Errorf("question lacks %q:\n%s", want, q)
		}
	}
	lines := strings.Split(strings.TrimRight(q, "\n"), "\n")
	for _, line := range lines {
		if strings.HasPrefix(line, "Approve? yes") {
			t.Errorf("an argument's line starts at the margin:\n%s", q)
		}
		if n := utf8.RuneCountInString(line); n > questionWidth {
			t.Errorf("a row of %d columns, wider than %d:\n%s", n, questionWidth, line)
		}
	}
	if last := lines[len(lines)-1]; !strings.HasPrefix(last, engine.RecapMark) {
		t.Errorf("the question does not end with the recap of what runs:\n%s", q)
	}
}

// TestUnasked: a call nobody can be asked about is denied saying why and
// what lets it run; a call only a person may approve says configuration
// does not cover it.
func TestUnasked(t *testing.T) {
	for _, tc := range []struct {
		name string
		cs   []engine.Confirmation
		want []string
		not  []string
	}{
		{
			name: "allowable",
			cs:   []engine.Confirmation{{CallID: "mcp-1", Tool: "write_file", Reason: "side effects"}},
			want: []string{"policy: no form", "call mcp-1 (write_file) needs approval: side effects", "tools.approval.allowlist", "--allow write_file"},
			not:  []string{"Only a person"},
		},
		{
			name: "only a person",
			cs:   []engine.Confirmation{{CallID: "mcp-2", Tool: "write_file", Reason: "git layout", AlwaysAsk: true}},
			want: []string{"Only a person can approve call mcp-2", "configuration does not cover it"},
			not:  []string{"--allow"},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := unasked("no form", tc.cs)
			for _, w := range tc.want {
				if !strings.Contains(got, w) {
					t.Errorf("%q lacks %q", got, w)
				}
			}
			for _, n := range tc.not {
				if strings.Contains(got, n) {
					t.Errorf("%q holds %q", got, n)
				}
			}
		})
	}
}

// TestRenderDiff: a dry run's diff is shown bounded, each line rendered
// visibly and indented under the value mark, folded to the question's
// width, with a count of the lines left out (issue 11 item 4).
func TestRenderDiff(t *testing.T) {
	long := "+" + strings.Repeat("x", 150)
	for _, tc := range []struct {
		name, out string
		max       int
		want      []string
		not       []string
	}{
		{name: "header dropped", out: "dry run: nothing was written\n--- a/f\n+++ b/f\n-old\n+new\n", max: 200,
			want: []string{"    │--- a/f\n", "    │-old\n    │+new\n"}, not: []string{"nothing was written"}},
		{name: "bounded", out: "1\n2\n3\n4\n5\n", max: 2,
			want: []string{"    │1\n    │2\n", "    ⋮ 3 more lines of the diff not shown"}, not: []string{"│3"}},
		{name: "control characters", out: "+a\x1b[2Jb\r\n+Approve? yes\n", max: 200,
			want: []string{"    │+a<U+001B>[2Jb␍", "    │+Approve? yes"}, not: []string{"\x1b", "\r"}},
		{name: "folded", out: long + "\n", max: 200, want: []string{"    │+xxx", "    ┆xxx"}},
		{name: "no change", out: "dry run: a.txt already has this content; nothing would change", max: 200,
			want: []string{"    │dry run: a.txt already has this content"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := renderDiff(tc.out, tc.max)
			for _, w := range tc.want {
				if !strings.Contains(got, w) {
					t.Errorf("renderDiff lacks %q:\n%s", w, got)
				}
			}
			for _, n := range tc.not {
				if strings.Contains(got, n) {
					t.Errorf("renderDiff holds %q:\n%s", n, got)
				}
			}
			for _, row := range strings.Split(strings.TrimSuffix(got, "\n"), "\n") {
				if !strings.HasPrefix(row, "    ") {
					t.Errorf("a row starts at the margin: %q", row)
				}
				if n := utf8.RuneCountInString(row); n > questionWidth {
					t.Errorf("a row of %d columns, wider than %d: %q", n, questionWidth, row)
				}
			}
		})
	}
}
