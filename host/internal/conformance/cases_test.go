package conformance

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/toolhost/toolhost/host/internal/engine"
	"github.com/toolhost/toolhost/internal/testplugin"
)

// A malformed case file is refused with what is wrong and where, so an
// author can fix it (the plugin's own cases).
func TestParseCaseRefusesBadFiles(t *testing.T) {
	for _, tc := range []struct{ name, file, want string }{
		{"syntax error", "{\n  \"tool\": \"read_file\",\n  \"args\": {\"path\": }\n}", "line 3"},
		{"unknown field", `{"tool": "read_file", "expect": {"okay": true}}`, `unknown field "okay"`},
		{"wrong type", `{"tool": "read_file", "files": ["a.txt"]}`, "cannot unmarshal array"},
		{"no steps", `{"description": "nothing"}`, "no steps"},
		{"steps and a top-level tool", `{"tool": "a", "steps": [{"tool": "b"}]}`, "both steps and a top-level tool"},
		{"step without a tool", `{"steps": [{"args": {}}]}`, "step 1 names no tool"},
		{"args not an object", `{"tool": "read_file", "args": ["a.txt"]}`, "args must be a JSON object"},
		{"fixture escaping the root", `{"tool": "t", "files": {"../x": "y"}}`, `fixture path "../x" escapes`},
		{"absolute fixture", `{"tool": "t", "symlinks": {"/tmp/l": "x"}}`, `fixture path "/tmp/l" escapes`},
		{"expected file escaping the root", `{"tool": "t", "expect_files": {"a/../../x": null}}`, `escapes`},
		{"two values", `{"tool": "t"} {"tool": "u"}`, "more than one JSON value"},
		{"read of a file that is no fixture", `{"tool": "t", "files": {"a.txt": "x"}, "read": ["b.txt"]}`, `read names "b.txt"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := ParseCase([]byte(tc.file))
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err = %v, want one containing %q", err, tc.want)
			}
		})
	}
}

// A one-call case is the same as a case of one step.
func TestParseCaseOneCall(t *testing.T) {
	c, err := ParseCase([]byte(`{"tool": "read_file", "args": {"path": "a"}, "expect": {"ok": true}}`))
	if err != nil {
		t.Fatal(err)
	}
	if len(c.Steps) != 1 || c.Steps[0].Tool != "read_file" || string(c.Steps[0].Args) != `{"path": "a"}` || c.Tools()[0] != "read_file" {
		t.Fatalf("%+v", c)
	}
}

// Cases run against a real plugin in a fresh workspace: a passing case
// passes, each unmet expectation is listed with expected and got, a
// malformed file fails naming it, and cases for other tools are ignored.
func TestRunCases(t *testing.T) {
	cases := t.TempDir()
	files := map[string]string{
		"ok.json": `{"description": "reads", "files": {"a.txt": "one\n", "d/b.txt": "two\n"}, "dirs": ["e"], "symlinks": {"l": "a.txt"},
			"steps": [
				{"tool": "read_file", "args": {"path": "a.txt"}, "expect": {"content": "one\n"}},
				{"tool": "read_file", "args": {"path": "d/b.txt"}, "expect": {"ok": true, "contains": ["tw"]}},
				{"tool": "read_file", "args": {"path": "nope"}, "expect": {"error_kind": "ExecutionFailed", "message_contains": ["nope"]}}
			],
			"expect_files": {"a.txt": "one\n", "e/none": null}}`,
		"wrong.json": `{"files": {"a.txt": "one\n"},
			"steps": [
				{"tool": "read_file", "args": {"path": "a.txt"}, "expect": {"content": "uno\n", "contains": ["dos"]}},
				{"tool": "read_file", "args": {"path": "a.txt"}, "expect": {"ok": false}},
				{"tool": "read_file", "args": {"path": "nope"}},
				{"tool": "read_file", "args": {"path": "nope"}, "expect": {"error_kind": "StaleFile"}}
			],
			"expect_files": {"a.txt": "changed\n", "b.txt": "x", "a.txt.bak": null}}`,
		"broken.json":  `{"tool": "read_file", "expect": {"ok": tru}}`,
		"unknown.json": `{"tool": "read_file", "expect": {"okay": true}}`,
		"other.json":   `{"tool": "write_file", "args": {"path": "x", "content": "y"}}`,
		"mixed.json":   `{"steps": [{"tool": "read_file"}, {"tool": "write_file"}]}`,
		"notes.txt":    `not a case`,
	}
	for name, body := range files {
		if err := os.WriteFile(filepath.Join(cases, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	ctx := context.Background()
	mod := filepath.Join(testplugin.BuiltIns(t), "read_file.wasm")
	s, err := load(ctx, Plugin{Module: mod}, Options{CacheDir: testplugin.CacheDir(t), Cases: cases})
	t.Cleanup(s.cleanup)
	if err != nil || s.loadErr != nil {
		t.Fatalf("load: %v / %v", err, s.loadErr)
	}
	got := map[string]Result{}
	runCases(ctx, s, func(r Result) { got[r.Check] = r })
	if len(got) != 4 {
		t.Errorf("results for %d cases, want 4 (other and mixed are for other tools): %v", len(got), got)
	}
	expectResult(t, got["case:ok"], StatusPass, `^reads`)
	expectResult(t, got["case:wrong"], StatusFail,
		`step 1 \(read_file\): content: expected "uno\\n", got "one\\n"`,
		`step 1 \(read_file\): content: expected it to contain "dos", got "one\\n"`,
		`step 2 \(read_file\): expected an error, got success: "one\\n"`,
		`step 3 \(read_file\): expected success, got error ExecutionFailed: ".*nope.*"`,
		`step 4 \(read_file\): error kind: expected StaleFile, got error ExecutionFailed`,
		`file a\.txt: expected "changed\\n", got "one\\n"`,
		`file b\.txt: expected "x", .*no such file`,
	)
	if n := len(got["case:wrong"].Findings); n != 7 {
		t.Errorf("%d findings, want 7: %v", n, got["case:wrong"].Findings)
	}
	expectResult(t, got["case:broken"], StatusFail, `case file .*broken\.json is malformed: line 1: invalid character`)
	expectResult(t, got["case:unknown"], StatusFail, `unknown\.json is malformed: .*unknown field "okay"`)
}

// A fixture is laid inside the workspace even when a link laid by the
// same case points out of it: files go in before links, through an
// os.Root.
func TestCaseFixturesStayInRoot(t *testing.T) {
	outside := t.TempDir()
	root := t.TempDir()
	c, err := ParseCase([]byte(`{"tool": "t", "files": {"sub/a.txt": "x"}, "dirs": ["d/e"], "symlinks": {"sub/l": "../../", "out": "` + outside + `"}}`))
	if err != nil {
		t.Fatal(err)
	}
	if err := c.lay(root); err != nil {
		t.Fatal(err)
	}
	if b, err := os.ReadFile(filepath.Join(root, "sub", "a.txt")); err != nil || string(b) != "x" {
		t.Errorf("sub/a.txt: %q %v", b, err)
	}
	if target, err := os.Readlink(filepath.Join(root, "out")); err != nil || target != outside {
		t.Errorf("out → %q %v", target, err)
	}
	if info, err := os.Stat(filepath.Join(root, "d", "e")); err != nil || !info.IsDir() {
		t.Errorf("d/e: %v", err)
	}
	// A case that writes a file through a link it laid itself must fail
	// rather than write outside.
	c, err = ParseCase([]byte(`{"tool": "t", "files": {"out/escaped.txt": "x"}}`))
	if err != nil {
		t.Fatal(err)
	}
	if err := c.lay(root); err == nil {
		t.Error("a fixture written through a link out of the root was laid")
	}
	if _, err := os.Stat(filepath.Join(outside, "escaped.txt")); err == nil {
		t.Error("a fixture landed outside the root")
	}
}

// A long content is cut in the middle in findings, keeping both ends.
func TestQuoteCuts(t *testing.T) {
	long := "start" + strings.Repeat("é", 500) + "end"
	q := quote(long)
	if len(q) > maxShown+40 || !strings.HasPrefix(q, `"start`) || !strings.HasSuffix(q, `end"`) || !strings.Contains(q, "bytes)") {
		t.Fatalf("quote = %s", q)
	}
}

// expect.structured names members the result's structured object must
// hold with equal values; others are not checked, and a result without
// an object, or with another value, is a mismatch naming the member.
func TestExpectStructured(t *testing.T) {
	got := engine.Result{OK: true, Content: "2 files", Structured: json.RawMessage(`{"files":2,"paths":["a","b"],"mtime":"2026-01-01T00:00:00Z"}`)}
	for _, tc := range []struct {
		expect string
		want   []string // substrings of the mismatches, one each; none: it holds
	}{
		{`{"files": 2}`, nil},
		{`{"files": 2, "paths": ["a", "b"]}`, nil},
		{`{}`, nil},
		{`{"files": 3}`, []string{`"files" to be "3", got "2"`}},
		{`{"paths": ["a"], "owner": "root"}`, []string{`"owner" to be "\"root\"", got "nothing"`, `"paths" to be`}},
		{`[1]`, []string{"not a JSON object"}},
	} {
		var e Expect
		if err := json.Unmarshal([]byte(`{"structured":`+tc.expect+`}`), &e); err != nil {
			t.Fatal(err)
		}
		ms := e.mismatches(got)
		if len(ms) != len(tc.want) {
			t.Errorf("%s: mismatches %q, want %d", tc.expect, ms, len(tc.want))
			continue
		}
		for i, w := range tc.want {
			if !strings.Contains(ms[i], w) {
				t.Errorf("%s: mismatch %q, want it to say %q", tc.expect, ms[i], w)
			}
		}
	}
	e := Expect{Structured: json.RawMessage(`{"files": 2}`)}
	if ms := e.mismatches(engine.Result{OK: true, Content: "2 files"}); len(ms) != 1 || !strings.Contains(ms[0], "got none") {
		t.Errorf("a result without an object: %q", ms)
	}
}
