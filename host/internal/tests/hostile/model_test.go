package hostile_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/toolhost/toolhost/host"
	"github.com/toolhost/toolhost/host/internal/engine"
)

// Attack (model): write into the internals of a .git directory below the
// workspace root — a vendored or nested repository's config (core.fsmonitor
// or core.hooksPath run a command on the user's next `git status`), or a
// brand-new "x/.git/" that makes x a repository git will act on.
// Creating new files needs no approval by default, so the second write
// happens with no prompt at all.
// Expected: every path with a .git component is protected, at any depth,
// like the top-level .git/ (SandboxViolation, reason Protected), and
// nothing is written.
// Was at fault: config.Default (host/config/config.go) sets read_only_patterns
// to ".git/**", which sandbox.matchAny only matches against the
// root-relative path, so "vendor/dep/.git/config" does not match. Fix:
// default to "**/.git/**" and "**/.git" (the .git file of a worktree or
// submodule names its gitdir).
func TestModel_NestedGitInternalsProtected(t *testing.T) {
	h, root := openHost(t, nil)
	os.MkdirAll(filepath.Join(root, "vendor", "dep", ".git"), 0o755)
	os.WriteFile(filepath.Join(root, "vendor", "dep", ".git", "config"), []byte("[core]\n"), 0o644)
	evil := "[core]\n\tfsmonitor = touch /tmp/pwned\n"
	calls := []engine.Call{
		call("r", "read_file", `{"path":"vendor/dep/.git/config"}`),
		call("w1", "write_file", jsonArgs(t, map[string]any{"path": "vendor/dep/.git/config", "content": evil})),
		call("w2", "write_file", jsonArgs(t, map[string]any{"path": "newrepo/.git/config", "content": evil})),
	}
	// w1 overwrites (a person approves it); w2 only creates, so it is not
	// even asked about.
	rs := process(t, h, context.Background(), engine.Batch{Conversation: "c", Calls: calls}, host.BatchOptions{Approver: approveAll()}, 30*time.Second)
	for _, r := range rs[1:] {
		if r.OK || r.Error.Kind != "SandboxViolation" || !strings.Contains(string(r.Error.Details), "Protected") {
			t.Errorf("call %s: got %s %+v, want SandboxViolation (Protected)", r.ID, kindOf(r), r)
		}
	}
	if b, _ := os.ReadFile(filepath.Join(root, "vendor", "dep", ".git", "config")); string(b) != "[core]\n" {
		t.Errorf("a nested repository's .git/config was rewritten to %q", b)
	}
	if _, err := os.Stat(filepath.Join(root, "newrepo", ".git", "config")); err == nil {
		t.Error("a tool created newrepo/.git/config without anyone being asked")
	}
}
