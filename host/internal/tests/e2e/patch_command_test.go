package e2e

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// The README's apply_patch flow: read with one process, patch with the
// next in the same conversation, patch again without re-reading; a
// failing multi-file patch changes nothing (FR-TOOL-PATCH-01a/02).
func TestApplyPatchAcrossInvocations(t *testing.T) {
	w := newWorkspace(t)
	w.file(t, "main.go", "package main\n\nfunc main() {\n\tprintln(\"hi\")\n}\n")
	conv := []string{"--conversation", "p", "--allow", "apply_patch"}
	patch := "LP1\nF main.go\nR\n\tprintln(\"hi\")\n.\n\tprintln(\"hello\")\n.\nF docs/NEW.md\nT\n# New\n.\nEND\n"

	r, _, code := w.call(t, "apply_patch", jsonArgs(t, map[string]any{"patch": patch}), conv...)
	if code != 1 || r.Error.Kind != "StaleFile" || !strings.Contains(r.Error.Message, "not read before patching") {
		t.Fatalf("patch before reading: exit %d %+v", code, r.Error)
	}
	if _, _, code := w.call(t, "read_file", `{"path":"main.go"}`, conv...); code != 0 {
		t.Fatal("read failed")
	}
	r, _, code = w.call(t, "apply_patch", jsonArgs(t, map[string]any{"patch": patch, "dry_run": true}), conv...)
	if code != 0 || !strings.Contains(r.Content, "+\tprintln(\"hello\")") || !strings.Contains(r.Content, "+++ b/docs/NEW.md") {
		t.Fatalf("dry run: exit %d %+v", code, r)
	}
	r, _, code = w.call(t, "apply_patch", jsonArgs(t, map[string]any{"patch": patch}), conv...)
	if code != 0 || r.Content != "modified: main.go\ncreated: docs/NEW.md" {
		t.Fatalf("patch: exit %d %+v", code, r)
	}
	// A second patch in a new process, without re-reading; its last file
	// fails, so main.go must keep the first patch's content.
	second := "LP1\nF main.go\nR\n\tprintln(\"hello\")\n.\n\tprintln(\"bye\")\n.\nF docs/NEW.md\nR\nno such line\n.\nx\n.\nEND\n"
	r, _, code = w.call(t, "apply_patch", jsonArgs(t, map[string]any{"patch": second}), conv...)
	if code != 1 || r.Error.Kind != "PatchFailed" || !strings.Contains(r.Error.Message, "no file was changed") {
		t.Fatalf("failing patch: exit %d %+v", code, r.Error)
	}
	if b, _ := os.ReadFile(filepath.Join(w.dir, "main.go")); !strings.Contains(string(b), `println("hello")`) {
		t.Fatalf("main.go = %q after a failed patch", b)
	}
	fixed := strings.Replace(second, "F docs/NEW.md\nR\nno such line\n.\nx\n.\n", "F docs/NEW.md\nT\nmore\n.\n", 1)
	r, _, code = w.call(t, "apply_patch", jsonArgs(t, map[string]any{"patch": fixed}), conv...)
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
	r, _, code := w.call(t, "run_command", `{"command":"echo hi; echo oops >&2"}`, "--allow", "run_command")
	if code != 0 || r.Content != "hi\n\n\n[stderr]\noops\n" {
		t.Fatalf("with --allow: exit %d %+v", code, r)
	}
	r, _, code = w.call(t, "run_command", `{"command":"exit 7"}`, "--allow", "run_command")
	if code != 1 || r.Error.Kind != "ExecutionFailed" || r.Error.Message != "run_command failed: exit code 7" {
		t.Fatalf("exit 7: exit %d %+v", code, r.Error)
	}
	out, stderr, code := w.run(t, "call", "run_command", "--args", `{"command":"echo streamed"}`, "--allow", "run_command", "--stream")
	if code != 0 || stderr != "streamed\n" || !strings.Contains(out, `"content": "streamed\n"`) {
		t.Fatalf("--stream: exit %d stdout %q stderr %q", code, out, stderr)
	}
}

// toolhost batch runs the tool loop: one result per call in order, policy
// applied, approvals from --allow; without a terminal, calls that need
// approval are denied with a message naming what would allow them.
func TestBatchCommand(t *testing.T) {
	w := newWorkspace(t)
	w.file(t, "a.txt", "alpha\n")
	// Conversation b read a.txt, so replacing it needs approval; unread,
	// it would be refused as stale before any approval.
	w.call(t, "read_file", `{"path":"a.txt"}`, "--conversation", "b")
	w.file(t, "batch.json", `{"conversation_id":"b","calls":[
		{"id":"1","name":"read_file","arguments":{"path":"a.txt"}},
		{"id":"2","name":"write_file","arguments":{"path":"a.txt","content":"beta\n"}},
		{"id":"3","name":"nope","arguments":{}},
		{"id":"1","name":"list_directory","arguments":{}}
	]}`)
	type output struct {
		BatchID string   `json:"batch_id"`
		Results []result `json:"results"`
	}
	run := func(extra ...string) (output, int) {
		out, stderr, code := w.run(t, append([]string{"batch", "--file", "batch.json"}, extra...)...)
		var o output
		if err := json.Unmarshal([]byte(out), &o); err != nil {
			t.Fatalf("stdout is not a batch result (%v)\n%s\n%s", err, out, stderr)
		}
		return o, code
	}
	o, code := run()
	if code != 1 || len(o.Results) != 4 || !strings.HasPrefix(o.BatchID, "batch_") {
		t.Fatalf("exit %d, %+v", code, o)
	}
	kinds := []string{}
	for i, r := range o.Results {
		if r.Error != nil {
			kinds = append(kinds, r.Error.Kind)
		} else {
			kinds = append(kinds, "ok")
		}
		if want := []string{"1", "2", "3", "1"}[i]; r.ID != want {
			t.Errorf("result %d has id %s, want %s", i, r.ID, want)
		}
	}
	if got := strings.Join(kinds, ","); got != "DuplicateToolCallId,SandboxViolation,UnknownTool,DuplicateToolCallId" {
		t.Errorf("kinds %s", got)
	}
	if msg := o.Results[1].Error.Message; !strings.Contains(msg, "--allow write_file") {
		t.Errorf("denial does not say what would allow it: %s", msg)
	}
	w.file(t, "batch.json", `{"conversation_id":"b","calls":[
		{"id":"1","name":"read_file","arguments":{"path":"a.txt"}},
		{"id":"2","name":"write_file","arguments":{"path":"a.txt","content":"beta\n"}}
	]}`)
	if o, code := run("--allow", "write_file"); code != 0 || !o.Results[1].OK {
		t.Fatalf("with --allow: exit %d %+v", code, o.Results)
	}
	if b, _ := os.ReadFile(filepath.Join(w.dir, "a.txt")); string(b) != "beta\n" {
		t.Errorf("a.txt = %q", b)
	}
	if _, stderr, code := w.run(t, "batch", "--file", "missing.json"); code != 2 || !strings.Contains(stderr, "missing.json") {
		t.Errorf("missing file: exit %d %s", code, stderr)
	}
}
