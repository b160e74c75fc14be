package e2e

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

func TestToolsListsBuiltinsSorted(t *testing.T) {
	w := newWorkspace(t)
	out, stderr, code := w.run(t, "tools")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	var defs []struct{ Name string }
	if err := json.Unmarshal([]byte(out), &defs); err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, d := range defs {
		names = append(names, d.Name)
	}
	if !slices.IsSorted(names) || slices.Contains(names, "run_command") {
		t.Fatalf("tools = %s, want them sorted, without run_command (denied by default, so not offered)", names)
	}
	for _, want := range []string{"apply_patch", "file_info", "glob", "list_directory", "read_file", "read_multiple_files", "search", "write_file"} {
		if !slices.Contains(names, want) {
			t.Errorf("tools = %s, without %s", names, want)
		}
	}
	out, _, _ = w.run(t, "tools", "--all")
	if !strings.Contains(out, `"run_command"`) {
		t.Errorf("tools --all lacks run_command:\n%s", out)
	}
	for _, f := range []string{"openai", "anthropic", "gemini", "mcp"} {
		if out, _, code := w.run(t, "tools", "--format", f); code != 0 || !strings.Contains(out, "read_file") {
			t.Errorf("--format %s: exit %d\n%s", f, code, out)
		}
	}
	if _, stderr, code := w.run(t, "tools", "--format", "xml"); code != 2 || !strings.Contains(stderr, "xml") {
		t.Errorf("unknown format: exit %d, %s", code, stderr)
	}
}

// The README's flow: read with one call, write with the next, in the
// same conversation; exit codes 0/1/2.
func TestReadThenWriteAcrossInvocations(t *testing.T) {
	w := newWorkspace(t)
	w.file(t, "notes.txt", "alpha\nbeta\ngamma\n")

	r, _, code := w.call(t, "write_file", `{"path":"notes.txt","content":"x"}`, "--conversation", "demo", "--allow", "write_file")
	if code != 1 || r.Error == nil || r.Error.Kind != "StaleFile" {
		t.Fatalf("overwrite before reading: exit %d %+v", code, r.Error)
	}
	r, _, code = w.call(t, "read_file", `{"path":"notes.txt","start_line":2,"end_line":3}`, "--conversation", "demo")
	if code != 0 || r.Content != "beta\ngamma\n" {
		t.Fatalf("read: exit %d %+v", code, r)
	}
	r, _, code = w.call(t, "write_file", `{"path":"notes.txt","content":"x"}`, "--conversation", "other", "--allow", "write_file")
	if code != 1 || r.Error.Kind != "StaleFile" {
		t.Fatalf("another conversation must not inherit the read: exit %d %+v", code, r.Error)
	}
	r, _, code = w.call(t, "write_file", `{"path":"notes.txt","content":"alpha\nBETA\n"}`, "--conversation", "demo", "--allow", "write_file")
	if code != 0 || !strings.HasPrefix(r.Content, "modified: notes.txt") {
		t.Fatalf("write after read: exit %d %+v", code, r)
	}
	if b, _ := os.ReadFile(filepath.Join(w.dir, "notes.txt")); string(b) != "alpha\nBETA\n" {
		t.Fatalf("file holds %q", b)
	}
	// The state directory is not reachable by tools, even when inside the root.
	inside := filepath.Join(w.dir, ".toolhost-state")
	out, _, _ := w.run(t, "--state-dir", inside, "call", "read_file", "--args", `{"path":"notes.txt"}`)
	if !strings.Contains(out, `"ok": true`) {
		t.Fatalf("read with inner state dir: %s", out)
	}
	r, _, code = w.call(t, "list_directory", `{"path":".toolhost-state"}`, "--state-dir", inside)
	if code != 1 || r.Error.Kind != "SandboxViolation" {
		t.Fatalf("state dir listed: exit %d %+v", code, r)
	}
}

func TestSandboxDenialsThroughCLI(t *testing.T) {
	w := newWorkspace(t)
	w.file(t, ".ssh/id_rsa", "PRIVATE")
	outside := t.TempDir()
	if err := os.WriteFile(filepath.Join(outside, "secret.txt"), []byte("SECRET"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(outside, filepath.Join(w.dir, "escape")); err != nil {
		t.Fatal(err)
	}
	tests := []struct{ name, path, reason string }{
		{"T-SBX-01 traversal", "../../etc/passwd", "Traversal"},
		{"T-SBX-02 absolute", "/etc/passwd", "AbsolutePath"},
		{"T-SBX-03 denied pattern", ".ssh/id_rsa", "DeniedPatternMatched"},
		{"symlink escape", "escape/secret.txt", "PathOutsideSandbox"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r, _, code := w.call(t, "read_file", `{"path":"`+tt.path+`"}`)
			if code != 1 || r.Error == nil || r.Error.Kind != "SandboxViolation" {
				t.Fatalf("exit %d %+v", code, r)
			}
			if !strings.Contains(string(r.Error.Details), tt.reason) {
				t.Errorf("details %s do not give reason %s", r.Error.Details, tt.reason)
			}
			if strings.Contains(r.Error.Message, "SECRET") || strings.Contains(r.Error.Message, "PRIVATE") {
				t.Fatal("content leaked")
			}
		})
	}
}

func TestUsageErrorsExit2(t *testing.T) {
	w := newWorkspace(t)
	tests := [][]string{
		{"call"},
		{"call", "read_file", "--args", "{not json"},
		{"call", "read_file", "--args", "[]"},
		{"call", "read_file", "--args", "{}", "--args-file", "x"},
		{"call", "read_file", "--args-file", "missing.json"},
		{"call", "read_file", "--bogus"},
		{"--plugins", "/nonexistent", "tools"},
	}
	for _, args := range tests {
		out, stderr, code := w.run(t, args...)
		if code != 2 || stderr == "" || out != "" {
			t.Errorf("%v: exit %d, stdout %q, stderr %q; want exit 2 with a message", args, code, out, stderr)
		}
	}
	r, _, code := w.call(t, "no_such_tool", `{}`)
	if code != 1 || r.Error.Kind != "UnknownTool" {
		t.Errorf("unknown tool: exit %d %+v", code, r.Error)
	}
	r, _, code = w.call(t, "read_file", `{"path":"x","start_line":0}`)
	if code != 1 || r.Error.Kind != "BadArgs" || !strings.Contains(r.Error.Message, "/start_line") {
		t.Errorf("T-VAL-02 via CLI: exit %d %+v", code, r.Error)
	}
}

func TestArgsFileAndStdin(t *testing.T) {
	w := newWorkspace(t)
	w.file(t, "a.txt", "from file\n")
	w.file(t, "args.json", `{"path":"a.txt"}`)
	if out, _, code := w.run(t, "call", "read_file", "--args-file", "args.json"); code != 0 || !strings.Contains(out, "from file") {
		t.Fatalf("--args-file: exit %d %s", code, out)
	}
	out, stderr, code := w.withStdin(`{"path":"a.txt"}`).run(t, "call", "read_file", "--args-file", "-")
	if code != 0 || !strings.Contains(out, "from file") {
		t.Fatalf("--args-file -: exit %d %s%s", code, out, stderr)
	}
}
