package engine

import (
	"context"
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"
	"unicode"

	"github.com/toolhost/toolhost/host/internal/sandbox"
)

// issue 10 item 3, FR-APR-03: a confirmation carries the arguments that
// will run, whole, visible and unredacted, with the paths they resolve
// to, and says when its summary is not all of it. Each case is one the
// summary alone hid.
func TestConfirmationShowsWhatRuns_Issue10Item3(t *testing.T) {
	f := policyFixture(t, withPolicy(func(p *Policy) { p.Denylist = nil }))
	f.write(t, "a/b.txt", "old\n")
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
			if strings.Join(a.Lines, "\n") != strings.Join(tt.lines, "\n") || len(a.Lines) != len(tt.lines) {
				t.Errorf("%s lines %q, want %q", tt.arg, a.Lines, tt.lines)
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

// issue 10 item 3: the rendering of argument values of every JSON shape,
// and the JSON a transport sends (an MCP elicitation, the batch API).
func TestConfirmationArguments(t *testing.T) {
	var out []Argument
	flatten("", json.RawMessage(`{"cmd":"a","cmd":"b","n":1.50,"ok":true,"none":null,"env":{"HOME":"/h","a.b":"x\u202e"},"argv":["x",{"y":[]}],"e":{}}`), &out)
	var got []string
	for _, a := range out {
		got = append(got, a.Name+"="+strings.Join(a.Lines, "|"))
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
}

// issue 10 item 3: with several roots, a path shows with its root.
func TestConfirmationPathRoots(t *testing.T) {
	a, b := t.TempDir(), t.TempDir()
	sb, err := sandbox.New(sandbox.Config{Roots: []string{a, b}, AllowAbsolute: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { sb.Close() })
	eng := New(Config{Registry: testRegistry(t), Sandbox: sb})
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
