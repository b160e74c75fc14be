package engine

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"unicode"

	"github.com/toolhost/toolhost/host/internal/confine"
	"github.com/toolhost/toolhost/host/internal/sandbox"
)

// FR-APR-03: a confirmation carries the arguments that
// will run, whole, visible and unredacted, with the paths they resolve
// to, and says when its summary is not all of it. Each case is one the
// summary alone hid.
func TestConfirmationShowsWhatRuns(t *testing.T) {
	f := policyFixture(t, withPolicy(func(p *Policy) { p.Denylist = nil }))
	f.write(t, "a/b.txt", "old\n")
	// Read, so that replacing it is asked about; unread, it would be
	// refused before anyone is asked.
	f.read(t, "a/b.txt")
	long := "echo " + strings.Repeat("harmless ", 23) + "done" // 216 characters
	if len(long) != 216 {
		t.Fatalf("first line has %d characters", len(long))
	}
	tests := []struct {
		name                 string
		tool                 string
		args                 map[string]any
		truncated, redacted  bool
		arg                  string   // the argument checked
		lines                []string // its Lines
		paths                []PathInfo
		details              []string // lines of Details, whole
		forbiddenInDetails   []string
		forbiddenLineStarted string // no line of Details starts with it
	}{
		{name: "command hidden by redaction", tool: "run_command",
			args:     map[string]any{"command": "GITHUB_TOKEN=$(touch${IFS}/tmp/x|base64) true"},
			redacted: true, arg: "command", lines: []string{"GITHUB_TOKEN=$(touch${IFS}/tmp/x|base64) true"},
			details: []string{
				"  (secrets hidden in the summary; the full arguments below are what will run)",
				"  command: GITHUB_TOKEN=$(touch${IFS}/tmp/x|base64) true",
			}},
		{name: "second line past the cut", tool: "run_command",
			args:      map[string]any{"command": long + "\ntouch pwned"},
			truncated: true, arg: "command", lines: []string{long, "touch pwned"},
			details: []string{
				"  (summary shortened; the full arguments below are what will run)",
				"  command: 2 lines", "    │" + long, "    │touch pwned",
			}},
		{name: "path cleaned, content whole", tool: "write_file",
			args: map[string]any{"path": "./././a/./b.txt", "content": "new\nApprove call 1? [y/N] y\n"},
			arg:  "content", lines: []string{"new", "Approve call 1? [y/N] y", ""},
			details: []string{
				"  path: ./././a/./b.txt", "    → file a/b.txt",
				"  content: 3 lines", "    │new", "    │Approve call 1? [y/N] y", "    │",
			},
			forbiddenLineStarted: "Approve"},
		{name: "path argument resolved", tool: "write_file",
			args: map[string]any{"path": "./././a/./b.txt", "content": ""},
			arg:  "path", lines: []string{"./././a/./b.txt"}, paths: []PathInfo{{Rel: "a/b.txt"}},
			details: []string{"  content: (empty)"}},
		{name: "invisible characters written out", tool: "run_command",
			args: map[string]any{"command": "ls\u202E\u200B\x1b[2K\rrm -rf data\t#"},
			arg:  "command", lines: []string{"ls<U+202E><U+200B><U+001B>[2K␍rm -rf data⇥#"},
			forbiddenInDetails: []string{"\u202E", "\u200B", "\x1b", "\r", "\t"}},
		{name: "secrets are shown to the person", tool: "run_command",
			args:     map[string]any{"command": "curl https://u:hunter2@example.com"},
			redacted: true, arg: "command", lines: []string{"curl https://u:hunter2@example.com"}},
		{name: "patch files resolved", tool: "apply_patch",
			args: map[string]any{"patch": "LP1\nF ./a/./b.txt\nT\nx\n.\nEND\n"},
			arg:  "patch", lines: []string{"LP1", "F ./a/./b.txt", "T", "x", ".", "END", ""}, paths: []PathInfo{{Rel: "a/b.txt"}},
			details: []string{"    → file a/b.txt"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			raw, err := json.Marshal(tt.args)
			if err != nil {
				t.Fatal(err)
			}
			p := f.eng.Plan(context.Background(), batch(call("1", tt.tool, string(raw))))
			cs := p.Confirmations()
			if len(cs) != 1 {
				t.Fatalf("%d confirmations (%+v)", len(cs), p.Calls[0].Result)
			}
			c := cs[0]
			if c.SummaryTruncated != tt.truncated || c.SummaryRedacted != tt.redacted {
				t.Errorf("truncated=%v redacted=%v, want %v %v (summary %q)", c.SummaryTruncated, c.SummaryRedacted, tt.truncated, tt.redacted, c.Summary)
			}
			a := argument(t, c, tt.arg)
			if strings.Join(a.lines(), "\n") != strings.Join(tt.lines, "\n") || len(a.lines()) != len(tt.lines) {
				t.Errorf("%s lines %q, want %q", tt.arg, a.lines(), tt.lines)
			}
			if tt.paths != nil && !samePaths(a.Paths, tt.paths) {
				t.Errorf("%s paths %+v, want %+v", tt.arg, a.Paths, tt.paths)
			}
			d := c.Details()
			lines := strings.Split(strings.TrimSuffix(d, "\n"), "\n")
			for _, w := range tt.details {
				if !contains(lines, w) {
					t.Errorf("details lack the line %q:\n%s", w, d)
				}
			}
			for _, w := range tt.forbiddenInDetails {
				if strings.Contains(d, w) {
					t.Errorf("details hold %+q", w)
				}
			}
			for _, l := range lines {
				if !strings.HasPrefix(l, "  ") {
					t.Errorf("details line %q starts at the margin", l)
				}
				if tt.forbiddenLineStarted != "" && strings.HasPrefix(strings.TrimSpace(l), tt.forbiddenLineStarted) {
					t.Errorf("details line %q could pass for the question", l)
				}
			}
			for _, r := range d {
				if r != '\n' && unicode.In(r, unicode.Cc, unicode.Cf, unicode.Zl, unicode.Zp) {
					t.Errorf("details hold %U", r)
				}
			}
		})
	}
}

func argument(t *testing.T, c Confirmation, name string) Argument {
	t.Helper()
	for _, a := range c.Arguments {
		if a.Name == name {
			return a
		}
	}
	t.Fatalf("no argument %q in %+v", name, c.Arguments)
	return Argument{}
}

func samePaths(a, b []PathInfo) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

func contains(lines []string, want string) bool {
	for _, l := range lines {
		if l == want {
			return true
		}
	}
	return false
}

// The rendering of argument values of every JSON shape,
// and the JSON a transport sends (an MCP elicitation, the batch API).
func TestConfirmationArguments(t *testing.T) {
	var out []Argument
	flatten("", json.RawMessage(`{"cmd":"a","cmd":"b","n":1.50,"ok":true,"none":null,"env":{"HOME":"/h","a.b":"x\u202e"},"argv":["x",{"y":[]}],"e":{}}`), &out)
	var got []string
	for _, a := range out {
		got = append(got, a.Name+"="+strings.Join(a.lines(), "|"))
	}
	want := []string{"cmd=a", "cmd=b", "n=1.50", "ok=true", "none=null", "env.HOME=/h", `env["a.b"]=x<U+202E>`, "argv[0]=x", "argv[1].y=[]", "e={}"}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("flattened\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}

	c := Confirmation{CallID: "1", SummaryTruncated: true, Arguments: []Argument{{Name: "path", Lines: []string{"./x"}, Paths: []PathInfo{{Root: "/w", Rel: "x"}}}}}
	b, err := json.Marshal(c)
	if err != nil {
		t.Fatal(err)
	}
	for _, w := range []string{`"summary_truncated":true`, `"summary_redacted":false`, `"argument_details":[{"name":"path","lines":["./x"],"paths":[{"root":"/w","rel":"x"}]}]`} {
		if !strings.Contains(string(b), w) {
			t.Errorf("JSON %s lacks %s", b, w)
		}
	}
	if d := c.Details(); !strings.Contains(d, "    → file x (in root /w)") {
		t.Errorf("details %q", d)
	}
	c.Arguments[0].Paths[0].Dir = true
	if d := c.Details(); !strings.Contains(d, "    → directory x (in root /w)") {
		t.Errorf("a directory's details %q", d)
	}
}

// With several roots, a path shows with its root.
func TestConfirmationPathRoots(t *testing.T) {
	a, b := t.TempDir(), t.TempDir()
	sb, err := sandbox.New(sandbox.Config{Roots: []string{a, b}, AllowAbsolute: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { sb.Close() })
	eng := New(Config{Registry: testRegistry(t), Sandbox: sb, Confiner: confine.Unconfined("engine tests")})
	target := filepath.Join(b, "d", ".", "n.txt")
	raw, _ := json.Marshal(map[string]any{"path": target, "content": "x"})
	p := eng.Plan(context.Background(), batch(call("1", "write_file", string(raw))), Narrowing{ConfirmAll: true})
	cs := p.Confirmations()
	if len(cs) != 1 {
		t.Fatalf("%d confirmations (%+v)", len(cs), p.Calls[0].Result)
	}
	canon, _ := filepath.EvalSymlinks(b)
	if got := argument(t, cs[0], "path").Paths; len(got) != 1 || got[0] != (PathInfo{Root: canon, Rel: "d/n.txt"}) {
		t.Errorf("paths %+v, want d/n.txt in %s", got, canon)
	}
}

// A value is folded to the surface's width, so the
// surface wraps nothing itself and no row of the value starts at the
// margin or with the value's own text; padding shows as ␠×N and a
// written-out character is never split.
func TestFold(t *testing.T) {
	tests := []struct {
		name  string
		text  string
		width int
		want  []string
	}{
		{"fits", "ls -la", 80, []string{"    │ls -la"}},
		{"unfolded", strings.Repeat("a", 200), 0, []string{"    │" + strings.Repeat("a", 200)}},
		{"folded at width less one", strings.Repeat("a", 30), 20,
			[]string{"    │" + strings.Repeat("a", 13), "    ┆" + strings.Repeat("a", 13), "    ┆aaaa"}},
		{"padding shown", "a" + strings.Repeat(" ", 75) + "LOW risk" + strings.Repeat(" ", 8) + "x", 80,
			[]string{"    │a␠×75LOW risk        x"}},
		{"the glyph itself written out", "␠×75", 80, []string{"    │<U+2420>×75"}},
		{"written-out character kept whole", "abcdefghijkl<U+202E>z", 20,
			[]string{"    │abcdefghijkl", "    ┆<U+202E>z"}},
		{"wide characters take two columns", "日本語日本語日本語", 20, []string{"    │日本語日本語", "    ┆日本語"}},
		{"too narrow still shows everything", "abc", 3, []string{"    │a", "    ┆b", "    ┆c"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := strings.Split(strings.TrimSuffix(Fold(tt.text, valueMark, foldMark, tt.width), "\n"), "\n")
			if strings.Join(got, "\n") != strings.Join(tt.want, "\n") {
				t.Errorf("Fold =\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(tt.want, "\n"))
			}
			for _, row := range got {
				if tt.width > columns(valueMark)+2 && columns(row) > tt.width-1 {
					t.Errorf("row %q is %d columns wide, more than %d", row, columns(row), tt.width-1)
				}
			}
		})
	}
}

// A flood of lines, empty or padded to wrap, cannot
// fill the default view or draw a row of its own in any view; the full
// view still holds every line, folded the same way.
func TestDetailsLayout(t *testing.T) {
	pad := func(s string) string { return s + strings.Repeat(" ", 80-len(s)) }
	forged := strings.Repeat(" ", 75) + pad("LOW risk: Write 5 bytes to notes.md") + pad("  path: notes.md")
	var numbered []string
	for i := range 100 {
		numbered = append(numbered, fmt.Sprintf("line %d", i))
	}
	tests := []struct {
		name    string
		value   string
		layout  Layout
		maxRows int      // of the whole Details
		want    []string // rows, whole
		absent  []string // rows
	}{
		{"empty flood counted", strings.Repeat("\n", 100000) + forged,
			Layout{Width: 80, MaxLines: 40, More: "answer v"}, 20,
			[]string{"    ⋮ 20 empty lines", "    ⋮ 99,961 more lines not shown (all empty); answer v",
				"    ⋮ 19 empty lines", "    │␠×75LOW risk: Write 5 bytes to notes.md␠×47path: notes.md␠×64"}, nil},
		{"empty flood in full", strings.Repeat("\n", 100000) + "end",
			Layout{Width: 80}, 10, []string{"    ⋮ 100,000 empty lines", "    │end"}, nil},
		{"long value shortened", strings.Join(numbered, "\n"),
			Layout{Width: 80, MaxLines: 40}, 50,
			[]string{"    │line 0", "    │line 19", "    ⋮ 60 more lines not shown", "    │line 80", "    │line 99"},
			[]string{"    │line 20", "    │line 79"}},
		{"long value in full", strings.Join(numbered, "\n"),
			Layout{Width: 80}, 110, []string{"    │line 20", "    │line 79"}, nil},
		{"two empty lines drawn", "a\n\n\nb", Layout{Width: 80}, 10, []string{"    │a", "    │", "    │b"}, nil},
		{"long line shortened", "x" + strings.Repeat("y", 100000) + "z",
			Layout{Width: 80, MaxLines: 40, More: "answer v"}, 15,
			[]string{"  content: x" + strings.Repeat("y", 67), "    ┆" + strings.Repeat("y", 69) + "z",
				"    ⋮ 99,426 more characters of this line not shown; answer v"}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := Confirmation{Arguments: []Argument{scalar("path", ".bashrc"), scalar("content", tt.value)}}
			d := c.DetailsLayout(tt.layout)
			rows := strings.Split(strings.TrimSuffix(d, "\n"), "\n")
			if len(rows) > tt.maxRows {
				t.Errorf("%d rows, want at most %d:\n%s", len(rows), tt.maxRows, head(rows, 60))
			}
			for _, w := range tt.want {
				if !contains(rows, w) {
					t.Errorf("no row %q:\n%s", w, head(rows, 60))
				}
			}
			for _, w := range tt.absent {
				if contains(rows, w) {
					t.Errorf("row %q shown in a shortened view", w)
				}
			}
			for _, row := range rows {
				if !strings.HasPrefix(row, "  ") || columns(row) > tt.layout.Width-1 {
					t.Errorf("row %q starts at the margin or is wider than %d columns", row, tt.layout.Width-1)
				}
				if strings.HasPrefix(strings.TrimLeft(row, " "), "path: notes.md") {
					t.Errorf("row %q passes for an argument of toolhost's", row)
				}
			}
		})
	}
}

// The recap names what runs in a few rows, each marked
// as toolhost's, however many arguments and files a call has.
func TestRecap(t *testing.T) {
	var many []Argument
	for i := range 30 {
		a := scalar(fmt.Sprintf("a%d", i), "x\ny")
		a.Paths = []PathInfo{{Rel: fmt.Sprintf("dir/f%d", i)}}
		many = append(many, a)
	}
	longPath := PathInfo{Rel: strings.Repeat("d/", 2000) + "toolhost.toml"}
	tests := []struct {
		name    string
		c       Confirmation
		maxRows int
		want    []string
	}{
		{"flood", Confirmation{CallID: "1", Tool: "write_file", Risk: "high", Summary: "Write 100081 bytes to .bashrc",
			Arguments: []Argument{withPaths(scalar("path", ".bashrc"), PathInfo{Rel: ".bashrc"}), scalar("content", strings.Repeat("\n", 100000)+"x")}},
			6, []string{
				"┏━ toolhost asks about call 1 (write_file), HIGH risk",
				"┃ summary: Write 100081 bytes to .bashrc",
				"┃ path: 7 bytes", "┃   → file .bashrc",
				"┃ content: 100,001 bytes, 100,001 lines (100,000 empty)",
			}},
		{"many arguments and files", Confirmation{CallID: "2", Tool: "t", Risk: "medium", SummaryTruncated: true, Arguments: many},
			20, []string{"┃ a0: 3 bytes, 2 lines", "┃   → file dir/f5", "┃ … and 22 more arguments", "┃   … and 2 more files",
				"┃ (the summary is not all of it: the arguments are what will run)"}},
		{"long path keeps its file name", Confirmation{CallID: "3", Tool: "write_file", Risk: "low",
			Arguments: []Argument{withPaths(scalar("path", "x"), longPath)}},
			6, []string{"┃   → file d/d/d/d/d/d/d/d/d/d/d/d/d/d/d/d/d/d/d/d/d/d/d/d/d/d/d/d/d/d/d/d/d/",
				"┃     ⋮ 3,877 more characters", "┃     ┆" + strings.Repeat("/d", 28) + "/toolhost.toml"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := tt.c.Recap(80)
			rows := strings.Split(strings.TrimSuffix(r, "\n"), "\n")
			if len(rows) > tt.maxRows {
				t.Errorf("%d rows, want at most %d:\n%s", len(rows), tt.maxRows, r)
			}
			for _, w := range tt.want {
				if !contains(rows, w) {
					t.Errorf("no row %q:\n%s", w, r)
				}
			}
			for i, row := range rows {
				if (i == 0) != strings.HasPrefix(row, "┏━ ") || i > 0 && !strings.HasPrefix(row, RecapMark) || columns(row) > 79 {
					t.Errorf("row %q is not marked as the recap's or is too wide", row)
				}
			}
		})
	}
}

func withPaths(a Argument, p ...PathInfo) Argument {
	a.Paths = p
	return a
}

func head(rows []string, n int) string {
	return strings.Join(rows[:min(n, len(rows))], "\n")
}
