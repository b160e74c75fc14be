package e2e

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/toolhost/toolhost/internal/testenv"
	"github.com/toolhost/toolhost/internal/testplugin"
)

// A plugin written in C from abi/README.md alone
// (host/internal/tests/cplugin) builds with clang, wasm-ld and wasi-libc, packs, is
// served like a Go plugin, and passes `toolhost test` with its own cases.
func TestCPlugin(t *testing.T) {
	dir := buildCPlugin(t)
	w := newWorkspace(t)
	w.file(t, "notes.txt", "one two\nthree\n")
	if err := os.Mkdir(filepath.Join(w.dir, "sub"), 0o755); err != nil {
		t.Fatal(err)
	}

	tests := []struct {
		name, args string
		code       int
		content    string // on success
		kind       string // on failure
		message    string
	}{
		{name: "file", args: `{"path":"notes.txt"}`, content: "notes.txt: file, 14 bytes, mode 0644"},
		{name: "directory", args: `{"path":"sub"}`, content: "sub: directory"},
		{name: "escaped path", args: `{"path":"not\u0065s.txt"}`, content: "notes.txt: file, 14 bytes"},
		{name: "missing", args: `{"path":"missing.txt"}`, code: 1, kind: "ExecutionFailed", message: "missing.txt: no such file"},
		{name: "traversal", args: `{"path":"../notes.txt"}`, code: 1, kind: "SandboxViolation", message: "../notes.txt"},
		{name: "no path", args: `{}`, code: 1, kind: "BadArgs", message: "path"},
		// A repeated key never reaches a plugin, whichever value its parser
		// would take.
		{name: "repeated key", args: `{"path":"missing.txt","path":"notes.txt"}`, code: 1, kind: "BadArgs", message: "twice"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r, stderr, code := w.call(t, "c_stat", tt.args, "--plugins", dir)
			if code != tt.code {
				t.Fatalf("exit %d, want %d: %+v\n%s", code, tt.code, r, stderr)
			}
			switch {
			case tt.kind == "" && !strings.HasPrefix(r.Content, tt.content):
				t.Errorf("content %q, want it to start with %q", r.Content, tt.content)
			case tt.kind != "" && (r.Error == nil || r.Error.Kind != tt.kind || !strings.Contains(r.Error.Message, tt.message)):
				t.Errorf("result %+v, want a %s error saying %q", r, tt.kind, tt.message)
			}
		})
	}

	// Its structured object (the envelope's optional last field) reaches
	// the result as the host's encoding of it.
	out, stderr, code := w.run(t, "call", "c_stat", "--args", `{"path":"notes.txt"}`, "--plugins", dir, "--format", "json")
	var mcpResult struct {
		Content           string          `json:"content"`
		StructuredContent json.RawMessage `json:"structuredContent"`
	}
	if err := json.Unmarshal([]byte(out), &mcpResult); code != 0 || err != nil {
		t.Fatalf("toolhost call c_stat --format json: exit %d, %v\n%s\n%s", code, err, out, stderr)
	}
	var compact bytes.Buffer
	json.Compact(&compact, mcpResult.StructuredContent)
	if want := `{"mode":420,"size":14,"type":"file"}`; compact.String() != want || !strings.HasPrefix(mcpResult.Content, "notes.txt: file") {
		t.Errorf("c_stat --format json: content %q, structuredContent %s; want %s", mcpResult.Content, compact.String(), want)
	}

	out, stderr, code = w.run(t, "test", dir)
	if code != 0 {
		t.Fatalf("toolhost test on the C plugin: exit %d\n%s\n%s", code, out, stderr)
	}
	if !strings.Contains(out, "case:c_stat") {
		t.Errorf("toolhost test did not run the C plugin's conformance case:\n%s", out)
	}
}

// buildCPlugin builds host/internal/tests/cplugin into a folder of its own
// with its conformance cases, packs it, and returns the folder. Without the
// C toolchain for wasm32 (build.sh exits 3) the test is skipped, or fails
// where the suite is required (testenv.Required("C"): CI, as .ci/run
// installs the toolchain).
func buildCPlugin(t *testing.T) string {
	t.Helper()
	src := filepath.Join(testplugin.ModuleRoot(t), "host", "internal", "tests", "cplugin")
	dir := filepath.Join(t.TempDir(), "c_stat")
	if err := os.CopyFS(filepath.Join(dir, "conformance"), os.DirFS(filepath.Join(src, "conformance"))); err != nil {
		t.Fatal(err)
	}
	wasm := filepath.Join(dir, "c_stat.wasm")
	out, err := exec.Command("sh", filepath.Join(src, "build.sh"), wasm).CombinedOutput()
	if exit := (*exec.ExitError)(nil); errors.As(err, &exit) && exit.ExitCode() == 3 {
		testenv.Need(t, "C", fmt.Errorf("the C plugin cannot be built: %s", bytes.TrimSpace(out)), "")
	}
	if err != nil {
		t.Fatalf("host/internal/tests/cplugin/build.sh: %v\n%s", err, out)
	}
	if out, err := exec.Command(toolhost, "plugin", "pack", wasm).CombinedOutput(); err != nil {
		t.Fatalf("toolhost plugin pack c_stat.wasm: %v\n%s", err, out)
	}
	return dir
}
