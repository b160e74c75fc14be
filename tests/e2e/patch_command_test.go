package e2e

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func jsonArgs(t *testing.T, m map[string]any) string {
	t.Helper()
	b, err := json.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// The README's apply_patch flow: read with one process, patch with the
// next in the same conversation, patch again without re-reading; a
// failing multi-file patch changes nothing (FR-TOOL-PATCH-01a/02).
func TestApplyPatchAcrossInvocations(t *testing.T) {
	w := newWorkspace(t)
	w.file(t, "main.go", "package main\n\nfunc main() {\n\tprintln(\"hi\")\n}\n")
	conv := []string{"--conversation", "p"}
	patch := "LP1\nF main.go\nR\n\tprintln(\"hi\")\n.\n\tprintln(\"hello\")\n.\nF docs/NEW.md\nT\n# New\n.\nEND\n"

	r, code := w.call(t, "apply_patch", jsonArgs(t, map[string]any{"patch": patch}), conv...)
	if code != 1 || r.Error.Kind != "StaleFile" || !strings.Contains(r.Error.Message, "not read before patching") {
		t.Fatalf("patch before reading: exit %d %+v", code, r.Error)
	}
	if _, code := w.call(t, "read_file", `{"path":"main.go"}`, conv...); code != 0 {
		t.Fatal("read failed")
	}
	r, code = w.call(t, "apply_patch", jsonArgs(t, map[string]any{"patch": patch, "dry_run": true}), conv...)
	if code != 0 || !strings.Contains(r.Content, "+\tprintln(\"hello\")") || !strings.Contains(r.Content, "+++ b/docs/NEW.md") {
		t.Fatalf("dry run: exit %d %+v", code, r)
	}
	r, code = w.call(t, "apply_patch", jsonArgs(t, map[string]any{"patch": patch}), conv...)
	if code != 0 || r.Content != "modified: main.go\ncreated: docs/NEW.md" {
		t.Fatalf("patch: exit %d %+v", code, r)
	}
	// A second patch in a new process, without re-reading; its last file
	// fails, so main.go must keep the first patch's content.
	second := "LP1\nF main.go\nR\n\tprintln(\"hello\")\n.\n\tprintln(\"bye\")\n.\nF docs/NEW.md\nR\nno such line\n.\nx\n.\nEND\n"
	r, code = w.call(t, "apply_patch", jsonArgs(t, map[string]any{"patch": second}), conv...)
	if code != 1 || r.Error.Kind != "PatchFailed" || !strings.Contains(r.Error.Message, "no file was changed") {
		t.Fatalf("failing patch: exit %d %+v", code, r.Error)
	}
	if b, _ := os.ReadFile(filepath.Join(w.dir, "main.go")); !strings.Contains(string(b), `println("hello")`) {
		t.Fatalf("main.go = %q after a failed patch", b)
	}
	fixed := strings.Replace(second, "F docs/NEW.md\nR\nno such line\n.\nx\n.\n", "F docs/NEW.md\nT\nmore\n.\n", 1)
	r, code = w.call(t, "apply_patch", jsonArgs(t, map[string]any{"patch": fixed}), conv...)
	if code != 0 || r.Content != "modified: main.go\nmodified: docs/NEW.md" {
		t.Fatalf("patch without re-reading: exit %d %+v", code, r)
	}
}

// NFR-SEC-06: run_command is refused unless --allow names it.
func TestRunCommandNeedsAllow(t *testing.T) {
	w := newWorkspace(t)
	_, stderr, code := w.run(t, "call", "run_command", "--args", `{"command":"touch ran"}`)
	if code != 2 || !strings.Contains(stderr, "--allow run_command") {
		t.Fatalf("without --allow: exit %d, stderr %q", code, stderr)
	}
	if _, err := os.Stat(filepath.Join(w.dir, "ran")); err == nil {
		t.Fatal("the command ran without --allow")
	}
	r, code := w.call(t, "run_command", `{"command":"echo hi; echo oops >&2"}`, "--allow", "run_command")
	if code != 0 || r.Content != "hi\n\n\n[stderr]\noops\n" {
		t.Fatalf("with --allow: exit %d %+v", code, r)
	}
	r, code = w.call(t, "run_command", `{"command":"exit 7"}`, "--allow", "run_command")
	if code != 1 || r.Error.Kind != "ExecutionFailed" || r.Error.Message != "run_command failed: exit code 7" {
		t.Fatalf("exit 7: exit %d %+v", code, r.Error)
	}
	out, stderr, code := w.run(t, "call", "run_command", "--args", `{"command":"echo streamed"}`, "--allow", "run_command", "--stream")
	if code != 0 || stderr != "streamed\n" || !strings.Contains(out, `"content": "streamed\n"`) {
		t.Fatalf("--stream: exit %d stdout %q stderr %q", code, out, stderr)
	}
}
