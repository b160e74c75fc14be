package engine

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"unicode/utf8"
)

// FR-APR-03: the Approval every surface shows carries the arguments as
// they will run, every file resolved, and a write's diff from a dry run
// that writes nothing; arguments past the bound are left out whole,
// never cut, saying how large they are and where to read them.
func TestApprovalShowsWhatRunsWithinItsBound(t *testing.T) {
	f := policyFixture(t, withPolicy(func(p *Policy) { p.Denylist = nil }))
	f.write(t, "a/b.txt", "old\n")
	f.read(t, "a/b.txt")
	content := "new\n" + strings.Repeat("x", 200) + "\n"
	raw, _ := json.Marshal(map[string]any{"path": "./a/./b.txt", "content": content})
	p := f.eng.Plan(context.Background(), batch(call("1", "write_file", string(raw))))
	cs := p.Confirmations()
	if len(cs) != 1 {
		t.Fatalf("%d confirmations (%+v)", len(cs), p.Calls[0].Result)
	}
	ctx := context.Background()

	a := f.eng.Approval(ctx, cs[0], ApprovalOptions{Conversation: "c"})
	if string(a.Args) != string(raw) || a.ArgumentBytes != len(raw) || a.Omitted != "" {
		t.Errorf("within the bound: arguments %s (%d bytes), omitted %q; want %s whole", a.Args, a.ArgumentBytes, a.Omitted, raw)
	}
	if len(a.Paths) != 1 || a.Paths[0].Rel != "a/b.txt" {
		t.Errorf("paths %+v, want a/b.txt as resolved", a.Paths)
	}
	if a.Diff == nil || !strings.Contains(a.Diff.Text, "-old") || !strings.Contains(a.Diff.Text, "+new") {
		t.Errorf("diff %+v, want -old +new", a.Diff)
	}
	if b, _ := os.ReadFile(filepath.Join(f.root, "a", "b.txt")); string(b) != "old\n" {
		t.Errorf("a/b.txt holds %q after the approval's dry run, want it unchanged", b)
	}

	small := f.eng.Approval(ctx, cs[0], ApprovalOptions{Conversation: "c", MaxArgumentBytes: 64, FullAt: "GET /where"})
	if small.Args != nil || !strings.Contains(small.Omitted, "GET /where") || !strings.Contains(small.Omitted, "64 bytes") {
		t.Errorf("past the bound: arguments %q, omitted %q; want none, and where to read them", small.Args, small.Omitted)
	}
	for _, arg := range small.Arguments {
		if !arg.Omitted || arg.Lines != nil || arg.Size == 0 {
			t.Errorf("past the bound, argument %+v: want it named with its size, its text left out", arg)
		}
	}
	if len(small.Paths) != 1 || small.Diff == nil || small.Diff.Text == "" {
		t.Errorf("past the bound the files and the diff are still shown: paths %+v, diff %+v", small.Paths, small.Diff)
	}
	text := small.Text(Layout{Width: 80})
	if !strings.Contains(text, "content: 205 bytes, not shown here") || strings.Contains(text, "│new") || !strings.Contains(text, "GET /where") {
		t.Errorf("the text past the bound:\n%s", text)
	}
}

// TestDiffText: a dry run's diff is shown bounded, each line rendered
// visibly and indented under the value mark, folded to the surface's
// width, with a count of the lines left out; a diff that could not be
// made says why on one line.
func TestDiffText(t *testing.T) {
	long := "+" + strings.Repeat("x", 150)
	for _, tc := range []struct {
		name string
		diff Diff
		max  int
		want []string
		not  []string
	}{
		{name: "header dropped", diff: Diff{Text: "dry run: nothing was written\n--- a/f\n+++ b/f\n-old\n+new\n"}, max: 200,
			want: []string{"    │--- a/f\n", "    │-old\n    │+new\n"}, not: []string{"nothing was written"}},
		{name: "bounded", diff: Diff{Text: "1\n2\n3\n4\n5\n"}, max: 2,
			want: []string{"    │1\n    │2\n", "    ⋮ 3 more lines of the diff not shown"}, not: []string{"│3"}},
		{name: "control characters", diff: Diff{Text: "+a\x1b[2Jb\r\n+Approve? yes\n"}, max: 200,
			want: []string{"    │+a<U+001B>[2Jb␍", "    │+Approve? yes"}, not: []string{"\x1b", "\r"}},
		{name: "folded", diff: Diff{Text: long + "\n"}, max: 200, want: []string{"    │+xxx", "    ┆xxx"}},
		{name: "no change", diff: Diff{Text: "dry run: a.txt already has this content; nothing would change"}, max: 200,
			want: []string{"    │dry run: a.txt already has this content"}},
		{name: "cut at the output limit", diff: Diff{Text: "+a\n", Truncated: true}, max: 200,
			want: []string{"    ⋮ the diff is longer than"}},
		{name: "unavailable", diff: Diff{Unavailable: "PatchFailed: no match\nsecond line"}, max: 200,
			want: []string{"The change it would make:\n    ⋮ diff unavailable: PatchFailed: no match …\n"}, not: []string{"second line"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d := tc.diff
			got := Approval{Diff: &d}.DiffText(80, tc.max)
			for _, w := range tc.want {
				if !strings.Contains(got, w) {
					t.Errorf("DiffText lacks %q:\n%s", w, got)
				}
			}
			for _, n := range tc.not {
				if strings.Contains(got, n) {
					t.Errorf("DiffText holds %q:\n%s", n, got)
				}
			}
			rows := strings.Split(strings.TrimSuffix(got, "\n"), "\n")
			for _, row := range rows[1:] {
				if !strings.HasPrefix(row, "    ") {
					t.Errorf("a row starts at the margin: %q", row)
				}
				if n := utf8.RuneCountInString(row); n > 80 {
					t.Errorf("a row of %d columns, wider than 80: %q", n, row)
				}
			}
		})
	}
}

// FR-APR-03: a write's diff shows every byte the write would write. The
// dry run's lines are rendered visibly as the arguments are (a carriage
// return, escape sequences, bidi and zero-width characters written
// out, none dropped), and a text surface shows that rendering as it is,
// never rendered twice.
func TestApprovalDiffShowsEveryByte(t *testing.T) {
	f := policyFixture(t, withPolicy(func(p *Policy) { p.Denylist = nil }))
	f.write(t, "v.txt", "line1\nold\n")
	f.read(t, "v.txt")
	content := "line1\nsafe\rrm -rf ~ \u001b[2K\u001b[1A\nline2\u202e\u200b\tend\n"
	raw, _ := json.Marshal(map[string]any{"path": "v.txt", "content": content})
	p := f.eng.Plan(context.Background(), batch(call("1", "write_file", string(raw))))
	cs := p.Confirmations()
	if len(cs) != 1 {
		t.Fatalf("%d confirmations (%+v)", len(cs), p.Calls[0].Result)
	}
	a := f.eng.Approval(context.Background(), cs[0], ApprovalOptions{Conversation: "c"})
	if a.Diff == nil || a.Diff.Unavailable != "" {
		t.Fatalf("diff %+v, want one", a.Diff)
	}
	want := []string{"+safe␍rm -rf ~ <U+001B>[2K<U+001B>[1A", "+line2<U+202E><U+200B>⇥end"}
	for _, surface := range []struct{ name, text string }{{"Diff.Text", a.Diff.Text}, {"DiffText", a.DiffText(0, 0)}, {"Text", a.Text(Layout{Width: 200})}} {
		for _, w := range want {
			if !strings.Contains(surface.text, w) {
				t.Errorf("%s does not show %q:\n%s", surface.name, w, surface.text)
			}
		}
		if strings.ContainsAny(surface.text, "\r\u001b\u202e\u200b\t") {
			t.Errorf("%s holds a control or format character raw: %q", surface.name, surface.text)
		}
	}
	// A diff built by hand holding raw characters is still shown visibly.
	hand := Approval{Diff: &Diff{Text: "+a\u202eb\r"}}
	if got := hand.DiffText(0, 0); !strings.Contains(got, "+a<U+202E>b␍") || strings.ContainsAny(got, "\r\u202e") {
		t.Errorf("DiffText of a raw diff: %q", got)
	}
}

// An argument keeps a string's text once, and shows it split into
// visibly rendered lines on every surface and in its JSON.
func TestArgumentKeepsTextOnce(t *testing.T) {
	a := scalar("content", "x\n\ny\u202e\n")
	if a.Lines != nil {
		t.Errorf("Lines %q: a string's lines are split only when shown", a.Lines)
	}
	want := []string{"x", "", "y<U+202E>", ""}
	if got := a.lines(); strings.Join(got, "|") != strings.Join(want, "|") {
		t.Errorf("lines %q, want %q", got, want)
	}
	data, err := json.Marshal(a)
	if err != nil {
		t.Fatal(err)
	}
	var back struct {
		Name  string   `json:"name"`
		Lines []string `json:"lines"`
		Size  int      `json:"size"`
	}
	if err := json.Unmarshal(data, &back); err != nil || back.Name != "content" || back.Size != 8 || strings.Join(back.Lines, "|") != strings.Join(want, "|") {
		t.Errorf("JSON %s: %+v %v", data, back, err)
	}
	if got := a.size(); got != "8 bytes, 4 lines (2 empty)" {
		t.Errorf("size %q", got)
	}
}
