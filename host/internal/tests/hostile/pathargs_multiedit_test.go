package hostile_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/toolhost/toolhost/host/internal/engine"
)

// The real multi_edit names its paths inside an array of edits
// ("edits/*/path"): through host.Open, a person approving it is shown
// every edit's path with where it resolves, the approved call may write
// each of them (they are its write grants), and an edit whose path the
// sandbox refuses fails the whole call naming that edit by its JSON
// pointer before anyone is asked and before any file changes.
func TestMultiEditPathsInArrayThroughHost(t *testing.T) {
	h, root := openHost(t, nil)
	mustWrite(t, filepath.Join(root, "a.txt"), "alpha\n")
	mustWrite(t, filepath.Join(root, "sub", "b.txt"), "beta\n")
	mustWrite(t, filepath.Join(root, "keys", "id_rsa"), "the private key\n")
	mustWrite(t, filepath.Join(root, ".git", "config"), "[core]\n")
	if rs := runBatch(t, h, nil, call("read", "read_multiple_files", `{"paths":["a.txt","sub/b.txt"]}`)); !rs[0].OK {
		t.Fatalf("read: %+v", rs[0].Error)
	}

	var asked []engine.Confirmation
	approver := engine.ApproverFunc(func(_ context.Context, cs []engine.Confirmation) (engine.Decision, error) {
		asked = append(asked, cs...)
		return engine.ApproveAll("the test"), nil
	})
	rs := runBatch(t, h, approver, call("edit", "multi_edit", jsonArgs(t, map[string]any{"edits": []map[string]any{
		{"path": "a.txt", "old_string": "alpha", "new_string": "ALPHA"},
		{"path": "sub/b.txt", "old_string": "beta", "new_string": "BETA"},
	}})))
	if !rs[0].OK {
		t.Fatalf("multi_edit of two named files: %+v", rs[0].Error)
	}
	for name, want := range map[string]string{"a.txt": "ALPHA\n", "sub/b.txt": "BETA\n"} {
		if b, _ := os.ReadFile(filepath.Join(root, name)); string(b) != want {
			t.Errorf("%s holds %q, want %q", name, b, want)
		}
	}
	if len(asked) != 1 {
		t.Fatalf("asked %d times, want once", len(asked))
	}
	shown := map[string]string{}
	for _, a := range asked[0].Arguments {
		if len(a.Paths) == 1 {
			shown[a.Name] = a.Paths[0].String()
		}
	}
	if shown["edits[0].path"] != "a.txt" || shown["edits[1].path"] != filepath.Join("sub", "b.txt") {
		t.Errorf("the approval showed paths %v; want edits[0].path and edits[1].path with where they resolve", shown)
	}

	// Into git's internals: multi_edit declares no create_args, so the
	// planner does not judge its writes, but the write is refused all the
	// same and no file changes.
	rs = runBatch(t, h, approver, call("git", "multi_edit", jsonArgs(t, map[string]any{"edits": []map[string]any{
		{"path": "a.txt", "old_string": "ALPHA", "new_string": "changed"},
		{"path": ".git/config", "old_string": "[core]", "new_string": "[core]\n\tfsmonitor = evil"},
	}})))
	if rs[0].OK {
		t.Errorf("an edit of .git/config succeeded: %s", rs[0].Content)
	}
	for name, want := range map[string]string{"a.txt": "ALPHA\n", ".git/config": "[core]\n"} {
		if b, _ := os.ReadFile(filepath.Join(root, name)); string(b) != want {
			t.Errorf("after an edit of .git/config, %s holds %q", name, b)
		}
	}

	for _, tc := range []struct{ path, says string }{
		{"keys/id_rsa", "DeniedPatternMatched"},
		{"../outside.txt", "Traversal"},
	} {
		asked = nil
		rs := runBatch(t, h, approver, call("bad", "multi_edit", jsonArgs(t, map[string]any{"edits": []map[string]any{
			{"path": "a.txt", "old_string": "ALPHA", "new_string": "changed"},
			{"path": tc.path, "old_string": "x", "new_string": "y"},
		}})))
		if rs[0].OK || rs[0].Error.Kind != "SandboxViolation" || !strings.Contains(rs[0].Error.Message+string(rs[0].Error.Details), tc.says) {
			t.Errorf("an edit of %s: %+v, want a SandboxViolation saying %s", tc.path, rs[0].Error, tc.says)
			continue
		}
		if !strings.Contains(rs[0].Error.Message, `argument "/edits/1/path"`) {
			t.Errorf("an edit of %s: %q does not name the edit", tc.path, rs[0].Error.Message)
		}
		if asked != nil {
			t.Errorf("an edit of %s: a person was asked about a call refused before it could run", tc.path)
		}
		if b, _ := os.ReadFile(filepath.Join(root, "a.txt")); string(b) != "ALPHA\n" {
			t.Errorf("an edit of %s: a.txt holds %q", tc.path, b)
		}
	}
}
