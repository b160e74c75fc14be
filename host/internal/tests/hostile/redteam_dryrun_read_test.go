package hostile_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/toolhost/toolhost/host"
	"github.com/toolhost/toolhost/host/internal/engine"
)

// A dry run reads the file it would change to draw its diff: the read
// must not count as the conversation's read of it. Else a model replaces
// a file it never read by asking for a dry run first (or by having an
// approval prompt draw one, a dry run nobody journals), and the stale-file
// rule no longer says the change was based on what is there.
func TestRedteamDryRunIsNotARead(t *testing.T) {
	for _, narrowed := range []bool{false, true} {
		name := "model-dry-run"
		if narrowed {
			name = "approval-preview"
		}
		t.Run(name, func(t *testing.T) {
			h, root := openHost(t, nil)
			path := filepath.Join(root, "notes.txt")
			if err := os.WriteFile(path, []byte("never read\n"), 0o644); err != nil {
				t.Fatal(err)
			}
			dry := engine.Batch{Conversation: "c", Calls: []engine.Call{
				call("d", "write_file", jsonArgs(t, map[string]any{"path": "notes.txt", "content": "x\n", "dry_run": true})),
			}}
			rs := process(t, h, context.Background(), dry, host.BatchOptions{Approver: approveAll(), Narrowing: engine.Narrowing{DryRun: narrowed}}, time.Minute)
			t.Logf("dry run: %s %q", kindOf(rs[0]), rs[0].Content)
			write := engine.Batch{Conversation: "c", Calls: []engine.Call{
				call("w", "write_file", jsonArgs(t, map[string]any{"path": "notes.txt", "content": "replaced\n"})),
			}}
			rs = process(t, h, context.Background(), write, host.BatchOptions{Approver: approveAll()}, time.Minute)
			if rs[0].OK {
				t.Fatalf("write_file replaced a file the conversation never read, after a dry run of it")
			}
			if got, _ := os.ReadFile(path); string(got) != "never read\n" {
				t.Fatalf("notes.txt holds %q", got)
			}
		})
	}
}
