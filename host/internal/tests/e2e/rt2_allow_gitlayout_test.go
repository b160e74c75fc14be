package e2e

import (
	"os"
	"path/filepath"
	"testing"
)

// TestAllowedWriteLaysOutGitDirAfterPlanning: whether a write lays out a
// git directory is judged when its batch is planned, but a batch API
// batch runs only once it is decided. A write --allow covers (or a new
// file nobody is asked about) that was harmless when planned must not
// complete a bare repository that another batch laid out while the first
// one waited for its decision: git run there would execute its config.
func TestAllowedWriteLaysOutGitDirAfterPlanning(t *testing.T) {
	t.Run("allow", func(t *testing.T) { laysOutLater(t, "--allow", "write_file") })
	t.Run("new-file", func(t *testing.T) { laysOutLater(t) })
}

func laysOutLater(t *testing.T, flags ...string) {
	w := newWorkspace(t)
	for _, d := range []string{"guard/objects", "guard/refs"} {
		if err := os.MkdirAll(filepath.Join(w.dir, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	s := serveHTTP(t, w, flags...)
	call := func(id, path, content string) map[string]any {
		return map[string]any{"id": id, "name": "write_file", "arguments": map[string]any{"path": path, "content": content}}
	}
	post := func(conv string, calls ...map[string]any) apiBatch {
		t.Helper()
		return s.batch(t, "POST", "/v1/batches", map[string]any{"conversation_id": conv, "calls": calls}, 201)
	}

	// Batch A: vendor/HEAD is harmless while vendor/ holds nothing; the
	// second call needs a person, so A waits.
	a := post("agent-a", call("w1", "vendor/HEAD", "ref: refs/heads/main\n"),
		call("h1", "guard/HEAD", "ref: refs/heads/main\n"))
	if a.State != "awaiting_approval" {
		t.Fatalf("batch A: %+v, want awaiting_approval", a)
	}
	// Batch B, meanwhile: objects/ and refs/ under vendor/, each a
	// harmless new file on its own, run at once.
	b := post("agent-b", call("o", "vendor/objects/x", "x\n"), call("r", "vendor/refs/y", "y\n"))
	done := s.waitState(t, b.BatchID, "done")
	for _, r := range done.Results {
		if !r.OK {
			t.Fatalf("batch B: %+v", done.Results)
		}
	}
	// The person denies what they were asked about.
	s.batch(t, "POST", "/v1/batches/"+a.BatchID+"/decision", map[string]any{"decision": "deny_all"}, 200)
	s.waitState(t, a.BatchID, "done")
	if _, err := os.Lstat(filepath.Join(w.dir, "vendor", "HEAD")); err == nil {
		t.Error("vendor/HEAD was written beside vendor/objects and vendor/refs (a bare git repository) though nobody approved it: its layout was judged when the batch was planned, before another batch made vendor/ a git directory")
	}
}
