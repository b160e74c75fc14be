package edit

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// server is `toolhost serve --stdio` over a fresh root, with a client
// that approves every call it is asked about and keeps what it was shown.
type server struct {
	root    string
	state   string
	session *mcp.ClientSession
	mu      sync.Mutex
	asked   []string // each approval's message
}

func serve(t *testing.T) *server {
	t.Helper()
	s := &server{root: t.TempDir(), state: t.TempDir()}
	cmd := exec.Command(toolhost, "--state-dir", s.state, "serve", "--stdio", "--root", s.root)
	cmd.Dir = s.root
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	client := mcp.NewClient(&mcp.Implementation{Name: "toolhost-edit-tests", Version: "1"}, &mcp.ClientOptions{
		ElicitationHandler: func(_ context.Context, req *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
			s.mu.Lock()
			s.asked = append(s.asked, req.Params.Message)
			s.mu.Unlock()
			return &mcp.ElicitResult{Action: "accept"}, nil
		},
	})
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	session, err := client.Connect(ctx, &mcp.CommandTransport{Command: cmd}, nil)
	if err != nil {
		t.Fatalf("connecting to toolhost serve --stdio: %v\nstderr: %s", err, stderr.String())
	}
	s.session = session
	t.Cleanup(func() {
		session.Close()
		if t.Failed() {
			t.Logf("toolhost serve stderr:\n%s", stderr.String())
		}
	})
	return s
}

// call runs tools/call and returns the result's text, its structured
// content and whether it is an error.
func (s *server) call(t *testing.T, tool string, args map[string]any) (text string, structured map[string]any, isError bool) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	res, err := s.session.CallTool(ctx, &mcp.CallToolParams{Name: tool, Arguments: args})
	if err != nil {
		t.Fatalf("tools/call %s: %v", tool, err)
	}
	var b strings.Builder
	for _, c := range res.Content {
		if tc, ok := c.(*mcp.TextContent); ok {
			b.WriteString(tc.Text)
		}
	}
	if res.StructuredContent != nil {
		raw, err := json.Marshal(res.StructuredContent)
		if err != nil {
			t.Fatal(err)
		}
		if err := json.Unmarshal(raw, &structured); err != nil {
			t.Fatalf("structuredContent %s: %v", raw, err)
		}
	}
	return b.String(), structured, res.IsError
}

func (s *server) write(t *testing.T, name, content string) {
	t.Helper()
	if err := os.WriteFile(filepath.Join(s.root, name), []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

func (s *server) read(t *testing.T, name string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(s.root, name))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// readFirst reads name through read_file, as a model must before editing.
func (s *server) readFirst(t *testing.T, name string, lineNumbers bool) string {
	t.Helper()
	text, _, isErr := s.call(t, "read_file", map[string]any{"path": name, "line_numbers": lineNumbers})
	if isErr {
		t.Fatalf("read_file %s: %s", name, text)
	}
	return text
}

// TestEditFileTraps edits a file of each trap through edit_file over MCP
// and compares the file with what it must become, byte for byte.
func TestEditFileTraps(t *testing.T) {
	s := serve(t)
	tests := []struct {
		name        string
		file        string
		lineNumbers bool // read with line_numbers, and quote what it showed
		old, new    string
		all         bool
		want        string
		layer       string
		lines       []any
		fails       string // part of the error, for a trap that must fail
	}{
		{name: "tabs vs spaces", file: "func f() {\n\tif x {\n\t\treturn 1\n\t}\n}\n",
			old: "    if x {\n        return 1\n    }", new: "    if x {\n        log()\n        return 2\n    }",
			want: "func f() {\n\tif x {\n\t\tlog()\n\t\treturn 2\n\t}\n}\n", layer: "indentation", lines: []any{2.0, 5.0}},
		{name: "spaces vs tabs", file: "def f():\n    if x:\n        return 1\n",
			old: "\tif x:\n\t\treturn 1\n", new: "\tif x:\n\t\treturn 2\n",
			want: "def f():\n    if x:\n        return 2\n", layer: "indentation", lines: []any{2.0, 3.0}},
		{name: "CRLF file, LF strings", file: "one\r\ntwo\r\nthree\r\n", old: "one\ntwo\n", new: "uno\ndos\n",
			want: "uno\r\ndos\r\nthree\r\n", layer: "line_endings", lines: []any{1.0, 2.0}},
		{name: "LF file, CRLF strings", file: "one\ntwo\nthree\n", old: "two\r\nthree\r\n", new: "2\r\n3\r\n",
			want: "one\n2\n3\n", layer: "line_endings", lines: []any{2.0, 3.0}},
		{name: "trailing spaces", file: "keep  \nx := 1  \ny := 2\t\n", old: "x := 1\ny := 2\n", new: "x := 10\ny := 20\n",
			want: "keep  \nx := 10\ny := 20\n", layer: "trailing_whitespace", lines: []any{2.0, 3.0}},
		{name: "CRLF with trailing spaces", file: "a  \r\nb \r\nc\r\n", old: "a\nb\n", new: "A\nB\n",
			want: "A\r\nB\r\nc\r\n", layer: "trailing_whitespace", lines: []any{1.0, 2.0}},
		{name: "BOM", file: "\ufeffname = 1\nsize = 2\n", old: "size = 2", new: "size = 3",
			want: "\ufeffname = 1\nsize = 3\n", layer: "exact", lines: []any{2.0, 2.0}},
		{name: "no final newline", file: "a\nlast", old: "last", new: "final",
			want: "a\nfinal", layer: "exact", lines: []any{2.0, 2.0}},
		{name: "line-number prefixes from read_file", file: "alpha\n\tbeta\ngamma\n", lineNumbers: true,
			old: "2→\tbeta\n3→gamma", new: "2→\tBETA\n\tadded\n3→gamma",
			want: "alpha\n\tBETA\n\tadded\ngamma\n", layer: "line_numbers", lines: []any{2.0, 4.0}},
		{name: "cat -n prefixes", file: "alpha\nbeta\n", old: "     1\talpha\n", new: "     1\tALPHA\n",
			want: "ALPHA\nbeta\n", layer: "line_numbers", lines: []any{1.0, 1.0}},
		{name: "curly quotes", file: "say(\"it's\") - ok\n", old: "say(“it’s”) — ok", new: "say(\"done\")",
			want: "say(\"done\")\n", layer: "punctuation", lines: []any{1.0, 1.0}},
		{name: "the same snippet twice", file: "x = 1\ny\nx = 1\n", old: "x = 1", new: "x = 2",
			want: "x = 1\ny\nx = 1\n", fails: "lines 1, 3"},
		{name: "the same snippet twice, replace_all", file: "x = 1\ny\nx = 1\n", old: "x = 1", new: "x = 2", all: true,
			want: "x = 2\ny\nx = 2\n", layer: "exact", lines: []any{1.0, 3.0}},
		{name: "twice after normalizing", file: "x = 1  \ny\nx = 1\t\n", old: "x = 1\r\n", new: "x = 2\n",
			want: "x = 1  \ny\nx = 1\t\n", fails: "2 places (after ignoring trailing whitespace)"},
	}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			name := "f" + string(rune('a'+i)) + ".txt"
			s.write(t, name, tt.file)
			if shown := s.readFirst(t, name, tt.lineNumbers); tt.lineNumbers && !strings.Contains(shown, strings.SplitN(tt.old, "\n", 2)[0]) {
				t.Fatalf("read_file showed %q, which does not hold old_string's first line", shown)
			}
			text, st, isErr := s.call(t, "edit_file", map[string]any{"path": name, "old_string": tt.old, "new_string": tt.new, "replace_all": tt.all})
			if got := s.read(t, name); got != tt.want {
				t.Errorf("file is %q, want %q (result: %s)", got, tt.want, text)
			}
			if tt.fails != "" {
				if !isErr || !strings.Contains(text, tt.fails) {
					t.Errorf("result (error %v) %q, want an error containing %q", isErr, text, tt.fails)
				}
				return
			}
			if isErr {
				t.Fatalf("edit_file failed: %s", text)
			}
			if st["layer"] != tt.layer || st["path"] != name || !equalLines(st["lines"], tt.lines) || !strings.Contains(st["diff"].(string), "+++ b/"+name) {
				t.Errorf("structuredContent %v, want layer %s, lines %v and the diff", st, tt.layer, tt.lines)
			}
			if first := strings.SplitN(text, "\n", 2)[0]; !strings.HasPrefix(first, "edited "+name+": ") {
				t.Errorf("first line %q, want the sentence saying what changed", first)
			}
		})
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	// Every approval shows the dry run: the diff, or for an edit that
	// cannot be made, why.
	if len(s.asked) == 0 {
		t.Error("no edit was asked about")
	}
	for _, msg := range s.asked {
		if !strings.Contains(msg, "+++ b/") && !strings.Contains(msg, "diff unavailable: ExecutionFailed") {
			t.Errorf("an approval showed no diff:\n%s", msg)
		}
	}
}

func equalLines(got any, want []any) bool {
	g, ok := got.([]any)
	if !ok || len(g) != len(want) {
		return false
	}
	for i := range g {
		if g[i] != want[i] {
			return false
		}
	}
	return true
}

// TestEditFileRefusesUTF16: a UTF-16 file is refused with the reason and
// left as it is.
func TestEditFileRefusesUTF16(t *testing.T) {
	s := serve(t)
	utf16 := "\xff\xfea\x00\n\x00"
	s.write(t, "w.txt", utf16)
	s.readFirst(t, "w.txt", false)
	text, _, isErr := s.call(t, "edit_file", map[string]any{"path": "w.txt", "old_string": "a", "new_string": "b"})
	if !isErr || !strings.Contains(text, "UTF-16") {
		t.Errorf("result (error %v) %q, want an error naming UTF-16", isErr, text)
	}
	if got := s.read(t, "w.txt"); got != utf16 {
		t.Errorf("file changed to %q", got)
	}
}

// TestEditFileStale: a file changed since it was read is refused, and
// keeps what was written to it.
func TestEditFileStale(t *testing.T) {
	s := serve(t)
	s.write(t, "a.txt", "one\n")
	s.readFirst(t, "a.txt", false)
	s.write(t, "a.txt", "one\ntwo\n")
	text, _, isErr := s.call(t, "edit_file", map[string]any{"path": "a.txt", "old_string": "one", "new_string": "1"})
	if !isErr || !strings.Contains(text, "StaleFile") {
		t.Errorf("result (error %v) %q, want StaleFile", isErr, text)
	}
	if got := s.read(t, "a.txt"); got != "one\ntwo\n" {
		t.Errorf("file changed to %q", got)
	}
}

// TestEditRegionTraps: lines replaced in CRLF files, files without a final
// newline and with a byte order mark, compared byte for byte.
func TestEditRegionTraps(t *testing.T) {
	s := serve(t)
	tests := []struct {
		name  string
		file  string
		args  map[string]any
		want  string
		lines []any
		fails string
	}{
		{"CRLF", "a\r\nb\r\nc\r\n", map[string]any{"start_line": 2, "end_line": 2, "new_content": "X\nY"}, "a\r\nX\r\nY\r\nc\r\n", []any{2.0, 3.0}, ""},
		{"insert", "a\nb\n", map[string]any{"start_line": 2, "end_line": 1, "new_content": "x\n"}, "a\nx\nb\n", []any{2.0, 2.0}, ""},
		{"no final newline", "a\nb", map[string]any{"start_line": 2, "end_line": 2, "new_content": "c\n"}, "a\nc", []any{2.0, 2.0}, ""},
		{"append without final newline", "a\nb", map[string]any{"start_line": 3, "end_line": 2, "new_content": "c"}, "a\nb\nc", []any{3.0, 3.0}, ""},
		{"BOM", "\ufeffa\nb\n", map[string]any{"start_line": 1, "end_line": 1, "new_content": "A"}, "\ufeffA\nb\n", []any{1.0, 1.0}, ""},
		{"expected, LF against CRLF", "a\r\nb\r\n", map[string]any{"start_line": 1, "end_line": 2, "new_content": "z", "expected": "a\nb\n"}, "z\r\n", []any{1.0, 1.0}, ""},
		{"expected differs", "a\nb  \n", map[string]any{"start_line": 2, "end_line": 2, "new_content": "z", "expected": "B"}, "a\nb  \n", nil, "+b··"},
	}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			name := "r" + string(rune('a'+i)) + ".txt"
			s.write(t, name, tt.file)
			s.readFirst(t, name, false)
			tt.args["path"] = name
			text, st, isErr := s.call(t, "edit_region", tt.args)
			if got := s.read(t, name); got != tt.want {
				t.Errorf("file is %q, want %q (result: %s)", got, tt.want, text)
			}
			if tt.fails != "" {
				if !isErr || !strings.Contains(text, tt.fails) {
					t.Errorf("result (error %v) %q, want an error containing %q", isErr, text, tt.fails)
				}
				return
			}
			if isErr || st["layer"] != "region" || !equalLines(st["lines"], tt.lines) {
				t.Errorf("result (error %v) %q, structured %v; want lines %v", isErr, text, st, tt.lines)
			}
		})
	}
}

// TestMultiEditAllOrNothing: three files, the last edit failing: no file
// changes; with stop_on_error false exactly the failing file is unchanged.
func TestMultiEditAllOrNothing(t *testing.T) {
	s := serve(t)
	files := map[string]string{"a.go": "a\r\n", "b.go": "\tb\n", "c.go": "c\nd"}
	for name, content := range files {
		s.write(t, name, content)
		s.readFirst(t, name, false)
	}
	edits := []any{
		map[string]any{"path": "a.go", "old_string": "a\n", "new_string": "A\n"},
		map[string]any{"path": "b.go", "old_string": "    b", "new_string": "    B"},
		map[string]any{"path": "c.go", "start_line": 1, "end_line": 1, "new_content": "C"},
		map[string]any{"path": "c.go", "old_string": "not there", "new_string": "x"},
	}
	text, _, isErr := s.call(t, "multi_edit", map[string]any{"edits": edits})
	if !isErr || !strings.Contains(text, "changed no file: edit 4 failed") {
		t.Errorf("result (error %v) %q, want edit 4's failure", isErr, text)
	}
	for name, content := range files {
		if got := s.read(t, name); got != content {
			t.Errorf("%s is %q after a failed multi_edit, want it unchanged %q", name, got, content)
		}
	}

	text, st, isErr := s.call(t, "multi_edit", map[string]any{"edits": edits, "stop_on_error": false})
	if isErr {
		t.Fatalf("multi_edit with stop_on_error false: %s", text)
	}
	want := map[string]string{"a.go": "A\r\n", "b.go": "\tB\n", "c.go": "c\nd"}
	for name, content := range want {
		if got := s.read(t, name); got != content {
			t.Errorf("%s is %q, want %q", name, got, content)
		}
	}
	reported, _ := st["edits"].([]any)
	applied := []bool{true, true, false, false}
	if len(reported) != len(applied) {
		t.Fatalf("structured edits %v, want %d", st["edits"], len(applied))
	}
	for i, r := range reported {
		if e, _ := r.(map[string]any); e["applied"] != applied[i] {
			t.Errorf("edit %d reported %v, want applied %v", i+1, e, applied[i])
		}
	}
	if !strings.Contains(text, "4. c.go: failed") || !strings.Contains(text, "2 file(s) written") {
		t.Errorf("result text %q does not report the written files and the failure", text)
	}
}

// TestMultiEditUndo: toolhost undo of a multi_edit restores every file it
// wrote, byte for byte.
func TestMultiEditUndo(t *testing.T) {
	s := serve(t)
	files := map[string]string{"a.go": "a\r\nb\r\n", "b.go": "\ufeffx\n", "c.go": "1\n2"}
	for name, content := range files {
		s.write(t, name, content)
		s.readFirst(t, name, false)
	}
	edits := []any{
		map[string]any{"path": "a.go", "old_string": "b\n", "new_string": "B\nC\n"},
		map[string]any{"path": "b.go", "start_line": 1, "end_line": 0, "new_content": "first"},
		map[string]any{"path": "c.go", "old_string": "2", "new_string": "two"},
	}
	if text, _, isErr := s.call(t, "multi_edit", map[string]any{"edits": edits}); isErr {
		t.Fatalf("multi_edit: %s", text)
	}
	for name, want := range map[string]string{"a.go": "a\r\nB\r\nC\r\n", "b.go": "\ufefffirst\nx\n", "c.go": "1\ntwo"} {
		if got := s.read(t, name); got != want {
			t.Fatalf("%s is %q after multi_edit, want %q", name, got, want)
		}
	}
	s.session.Close()
	out, err := exec.Command(toolhost, "--state-dir", s.state, "journal", "list", "--format", "json").Output()
	if err != nil {
		t.Fatalf("journal list: %v", err)
	}
	var list struct {
		Batches []struct {
			BatchID string `json:"batch_id"`
			Tool    string `json:"tool"`
		} `json:"batches"`
	}
	if err := json.Unmarshal(out, &list); err != nil {
		t.Fatalf("journal list: %v\n%s", err, out)
	}
	id := ""
	for _, b := range list.Batches {
		if b.Tool == "multi_edit" {
			id = b.BatchID
		}
	}
	if id == "" {
		t.Fatalf("no multi_edit batch in the journal:\n%s", out)
	}
	undo := exec.Command(toolhost, "--state-dir", s.state, "undo", id, "--root", s.root)
	undo.Dir = s.root
	if b, err := undo.CombinedOutput(); err != nil {
		t.Fatalf("toolhost undo %s: %v\n%s", id, err, b)
	}
	for name, want := range files {
		if got := s.read(t, name); got != want {
			t.Errorf("%s is %q after undo, want %q", name, got, want)
		}
	}
}

// TestEditFileKeepsMode: an edited file keeps its mode.
func TestEditFileKeepsMode(t *testing.T) {
	s := serve(t)
	s.write(t, "run.sh", "#!/bin/sh\necho hi\n")
	p := filepath.Join(s.root, "run.sh")
	if err := os.Chmod(p, 0o751); err != nil {
		t.Fatal(err)
	}
	s.readFirst(t, "run.sh", false)
	if text, _, isErr := s.call(t, "edit_file", map[string]any{"path": "run.sh", "old_string": "hi", "new_string": "ho"}); isErr {
		t.Fatalf("edit_file: %s", text)
	}
	st, err := os.Stat(p)
	if err != nil {
		t.Fatal(err)
	}
	if got := s.read(t, "run.sh"); got != "#!/bin/sh\necho ho\n" || st.Mode().Perm() != 0o751 {
		t.Errorf("file %q mode %v, want the edit with mode 0751", got, st.Mode().Perm())
	}
}
