package engine

import (
	"encoding/json"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/toolhost/toolhost/abi"
	"github.com/toolhost/toolhost/lp1"
)

// patchArgs wraps LP1 text in apply_patch arguments.
func patchArgs(t *testing.T, patch string, dryRun bool) string {
	t.Helper()
	b, err := json.Marshal(map[string]any{"patch": patch, "dry_run": dryRun})
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func (f *fixture) read(t *testing.T, name string) {
	t.Helper()
	if r := f.call(t, "read_file", `{"path":"`+name+`"}`); !r.OK {
		t.Fatalf("read_file %s: %+v", name, r.Error)
	}
}

// snapshot returns every file under root (path -> content), so a test can
// check that nothing at all changed, temporary files included.
func snapshot(t *testing.T, root string) map[string]string {
	t.Helper()
	files := map[string]string{}
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := os.ReadFile(path)
		files[strings.TrimPrefix(path, root)] = string(b)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return files
}

func sameFiles(t *testing.T, got, want map[string]string) {
	t.Helper()
	for k, v := range want {
		if got[k] != v {
			t.Errorf("%s = %q, want %q", k, got[k], v)
		}
	}
	for k := range got {
		if _, ok := want[k]; !ok {
			t.Errorf("unexpected file %s", k)
		}
	}
}

// T-PATCH-01 (FR-TOOL-PATCH-01a): whatever makes the last file of a
// multi-file patch fail, no file is left changed and nothing is left
// behind. The commit-phase I/O failure is in host/internal/sandbox's Txn tests.
func TestApplyPatch_T_PATCH_01_AllOrNothing(t *testing.T) {
	const good = "F a.txt\nR\na1\n.\nA1\n.\nF b.txt\nT\nb2\n.\nF created.txt\nT\nnew\n.\n"
	tests := []struct {
		name  string
		last  string // the last section(s) of the patch
		setup func(f *fixture)
		kind  abi.ErrorKind
		msg   string
	}{
		{"no match", "F c.txt\nR\nnope\n.\nx\n.\n", nil, abi.KindPatchFailed, `section 4 (F c.txt at patch line 16), operation 1 (R at patch line 17): find block (1 line: "nope") not found`},
		{"ambiguous", "F c.txt\nE\nc\n.\n", nil, abi.KindPatchFailed, "matches 2 times (at lines 1, 2)"},
		{"occurrence out of range", "F c.txt\nE 3\nc\n.\n", nil, abi.KindPatchFailed, "occurrence 3 requested"},
		{"missing file", "F nothere.txt\nE\nc\n.\n", nil, abi.KindPatchFailed, "does not exist"},
		{"not read", "F unread.txt\nT\nx\n.\n", nil, abi.KindStaleFile, "File was not read before patching"},
		{"changed since read", "F c.txt\nT\nx\n.\n", func(f *fixture) { f.write(t, "c.txt", "c\nc\nchanged\n") }, abi.KindStaleFile, "File content changed since last read"},
		{"sandbox escape", "F ../outside.txt\nT\nx\n.\n", nil, abi.KindSandboxViolation, "outside.txt"},
		{"denied pattern", "F keys/server.pem\nT\nx\n.\n", nil, abi.KindSandboxViolation, "server.pem"},
		{"directory", "F dir\nT\nx\n.\n", nil, abi.KindPatchFailed, "is a directory"},
		{"parent is a file", "F a.txt/x\nT\nx\n.\n", nil, abi.KindExecutionFailed, "a.txt/x"},
		{"bare CR in target", "F cr.txt\nT\nx\n.\n", nil, abi.KindPatchFailed, "bare carriage return"},
		{"mixed line endings", "F mixed.txt\nT\nx\n.\n", nil, abi.KindPatchFailed, "mixed line endings"},
		{"binary target", "F bin.dat\nT\nx\n.\n", nil, abi.KindPatchFailed, "binary file"},
		{"syntax error at the end", "F c.txt\nR\nc\n.\n", nil, abi.KindPatchFailed, "not terminated"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFixture(t, abi.Limits{})
			for name, content := range map[string]string{
				"a.txt": "a1\na2\n", "b.txt": "b1\n", "c.txt": "c\nc\n", "unread.txt": "u\n",
				"cr.txt": "x\ry\n", "mixed.txt": "x\r\ny\n", "bin.dat": "\x00\x01\n", "dir/inner": "i",
			} {
				f.write(t, name, content)
			}
			for _, name := range []string{"a.txt", "b.txt", "c.txt", "cr.txt", "mixed.txt", "bin.dat"} {
				f.read(t, name)
			}
			if tt.setup != nil {
				tt.setup(f)
			}
			before := snapshot(t, f.root)
			r := f.call(t, "apply_patch", patchArgs(t, "LP1\n"+good+tt.last+"END\n", false))
			wantError(t, r, tt.kind, tt.msg)
			sameFiles(t, snapshot(t, f.root), before)
		})
	}
}

// FR-TOOL-PATCH-02a..02d: stale-file protection, and a successful patch
// records the new content so the next one needs no re-read.
func TestApplyPatch_StaleFile_FR_TOOL_PATCH_02(t *testing.T) {
	f := newFixture(t, abi.Limits{})
	f.write(t, "a.txt", "one\ntwo\n")
	patch := func(from, to string) Result {
		return f.call(t, "apply_patch", patchArgs(t, "LP1\nF a.txt\nR\n"+from+"\n.\n"+to+"\n.\nEND\n", false))
	}
	r := patch("one", "1")
	wantError(t, r, abi.KindStaleFile, "a.txt: File was not read before patching")
	if got := string(r.Error.Details); got != `{"file":"a.txt","reason":"File was not read before patching"}` {
		t.Errorf("details = %s", got)
	}
	f.read(t, "a.txt")
	f.write(t, "a.txt", "one\ntwo\nthree\n")
	wantError(t, patch("one", "1"), abi.KindStaleFile, "File content changed since last read")
	f.read(t, "a.txt")
	for _, step := range []struct{ from, to string }{{"one", "1"}, {"two", "2"}} {
		if r := patch(step.from, step.to); !r.OK || r.Content != "modified: a.txt" {
			t.Fatalf("patch %s -> %s: %+v %+v", step.from, step.to, r, r.Error)
		}
	}
	if b, _ := os.ReadFile(filepath.Join(f.root, "a.txt")); string(b) != "1\n2\nthree\n" {
		t.Errorf("a.txt = %q", b)
	}
}

func TestApplyPatch(t *testing.T) {
	tests := []struct {
		name    string
		files   map[string]string // written and read before the patch
		patch   string            // between LP1 and END
		dryRun  bool
		limits  abi.Limits
		content string            // wanted result text
		after   map[string]string // wanted files afterwards (subset)
	}{
		{
			name: "modify and create", files: map[string]string{"a.txt": "x\n"},
			patch:   "F a.txt\nR\nx\n.\ny\n.\nF new/dir/b.txt\nB\nb\n.\n",
			content: "modified: a.txt\ncreated: new/dir/b.txt",
			after:   map[string]string{"a.txt": "y\n", "new/dir/b.txt": "b\n"},
		},
		{
			name: "no change", files: map[string]string{"a.txt": "x\n"},
			patch: "F a.txt\nR\nx\n.\nx\n.\n", content: "No changes applied.",
			after: map[string]string{"a.txt": "x\n"},
		},
		{
			name: "unchanged file left out of the result", files: map[string]string{"a.txt": "x\n", "b.txt": "y\n"},
			patch: "F a.txt\nN +\nF b.txt\nR\ny\n.\nz\n.\n", content: "modified: b.txt",
		},
		{
			name: "two spellings of one file", files: map[string]string{"a.txt": "1\n"},
			patch: "F a.txt\nR\n1\n.\n2\n.\nF ./a.txt\nR\n2\n.\n3\n.\n", content: "modified: a.txt",
			after: map[string]string{"a.txt": "3\n"},
		},
		{
			name: "CRLF round trip", files: map[string]string{"w.txt": "a\r\nb\r\n"},
			patch: "F w.txt\nI\na\n.\nmid\n.\n", content: "modified: w.txt",
			after: map[string]string{"w.txt": "a\r\nmid\r\nb\r\n"},
		},
		{
			name: "quoted path with spaces", files: map[string]string{"my dir/a b.txt": "q\n"},
			patch: "F \"my dir/a b.txt\"\nT\n..dot\n.\n", content: "modified: my dir/a b.txt",
			after: map[string]string{"my dir/a b.txt": "q\n.dot\n"},
		},
		{
			name: "dry run", files: map[string]string{"a.txt": "x\n"},
			patch: "F a.txt\nR\nx\n.\ny\n.\nF n.txt\nT\nn\n.\n", dryRun: true,
			content: "dry run: nothing was written\n--- a/a.txt\n+++ b/a.txt\n@@ -1 +1 @@\n-x\n+y\n--- /dev/null\n+++ b/n.txt\n@@ -0,0 +1 @@\n+n\n",
			after:   map[string]string{"a.txt": "x\n"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFixture(t, tt.limits)
			for name, content := range tt.files {
				f.write(t, name, content)
				f.read(t, name)
			}
			r := f.call(t, "apply_patch", patchArgs(t, "LP1\n"+tt.patch+"END\n", tt.dryRun))
			if !r.OK || r.Content != tt.content {
				t.Fatalf("result %+v (error %+v)\nwant %q", r, r.Error, tt.content)
			}
			for name, want := range tt.after {
				if b, err := os.ReadFile(filepath.Join(f.root, name)); err != nil || string(b) != want {
					t.Errorf("%s = %q (%v), want %q", name, b, err, want)
				}
			}
			if tt.dryRun {
				if _, err := os.Stat(filepath.Join(f.root, "n.txt")); err == nil {
					t.Error("dry run created a file")
				}
			}
		})
	}
}

func TestApplyPatch_Limits_FR_LIM_04(t *testing.T) {
	f := newFixture(t, abi.Limits{MaxPatchBytes: 64})
	f.write(t, "a.txt", "x\n")
	f.read(t, "a.txt")
	patch := "LP1\nF a.txt\nT\n" + strings.Repeat("line\n", 20) + ".\nEND\n"
	wantError(t, f.call(t, "apply_patch", patchArgs(t, patch, false)), abi.KindBadArgs, "more than max_patch_bytes (64); split the change")
	wantError(t, f.call(t, "apply_patch", `{"patch":""}`), abi.KindBadArgs, "patch")

	// A file over the scan limit cannot be read whole for patching.
	g := newFixture(t, abi.Limits{MaxScanBytes: 1000})
	g.write(t, "big.txt", lines(500))
	r := g.call(t, "apply_patch", patchArgs(t, "LP1\nF big.txt\nT\nx\n.\nEND\n", false))
	if r.OK || !strings.Contains(r.Error.Message, "max_scan_bytes") {
		t.Fatalf("big file: %+v %+v", r, r.Error)
	}
}

// The syntax error reaches the model with the patch line.
func TestApplyPatch_SyntaxError(t *testing.T) {
	f := newFixture(t, abi.Limits{})
	r := f.call(t, "apply_patch", patchArgs(t, "LP1\nF a.txt\nX\nEND\n", false))
	wantError(t, r, abi.KindPatchFailed, `LP1 syntax error at patch line 3: unknown line "X"`)
	if got := string(r.Error.Details); got != `{"file":"","patch_line":3}` {
		t.Errorf("details = %s", got)
	}
}

// A patch produced by lp1 from an edit, applied through the whole stack,
// reproduces the edit on a 5,000-line file (the benchmark's workload).
func TestApplyPatch_LargeFile(t *testing.T) {
	f := newFixture(t, abi.Limits{})
	f.write(t, "big.txt", lines(5000))
	f.read(t, "big.txt")
	patch, want := tenOpPatch(lines(5000))
	if r := f.call(t, "apply_patch", patchArgs(t, patch, false)); !r.OK {
		t.Fatalf("%+v", r.Error)
	}
	if b, _ := os.ReadFile(filepath.Join(f.root, "big.txt")); string(b) != want {
		t.Error("large file result differs from the expected edit")
	}
}

// tenOpPatch replaces every 500th line of content and returns the patch
// and the expected result.
func tenOpPatch(content string) (string, string) {
	file, _ := lp1.ParseFile(content)
	var ops []lp1.Op
	for i := 250; i < len(file.Lines); i += 500 {
		ops = append(ops, lp1.Op{Kind: lp1.Replace, Find: []string{file.Lines[i]}, New: []string{"changed " + file.Lines[i]}})
		file.Lines[i] = "changed " + file.Lines[i]
	}
	p := &lp1.Patch{Sections: []lp1.Section{{Path: "big.txt", Ops: ops}}}
	return p.String(), file.String()
}
