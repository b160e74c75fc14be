package hostile_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/toolhost/toolhost/host"
	"github.com/toolhost/toolhost/host/internal/config"
	"github.com/toolhost/toolhost/host/internal/engine"
)

// The stale-file check made when planning hashes the file a call would
// replace, before anyone is asked and before the call's deadline starts.
// A model that read a file and then made it huge (a sparse file: one
// truncate in a command, or a file another program grows) must not hold
// the planner for as long as hashing takes: planning is bounded like the
// call, or leaves the file to the check made when the change commits.
func TestRedteamStalePlanHashOfHugeFileIsBounded(t *testing.T) {
	h, root := openHost(t, func(c *config.Config, _ *host.Options) {
		c.Tools.Timeouts.FileOperationsSeconds = 2
		c.Tools.Timeouts.DefaultSeconds = 2
	})
	path := filepath.Join(root, "big.txt")
	if err := os.WriteFile(path, []byte("small\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	read(t, h, "big.txt")
	// 1 TiB of holes: hashing it whole takes many minutes.
	if err := os.Truncate(path, 1<<40); err != nil {
		t.Skipf("this file system makes no sparse file: %v", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel) // stops a hash still running when the test fails
	b := engine.Batch{Conversation: "c", Calls: []engine.Call{
		call("w", "write_file", jsonArgs(t, map[string]any{"path": "big.txt", "content": "replaced\n"})),
	}}
	start := time.Now()
	rs := process(t, h, ctx, b, host.BatchOptions{Approver: approveAll()}, 20*time.Second)
	if rs[0].OK {
		t.Fatalf("write_file replaced a file that changed since it was read: %+v", rs[0])
	}
	t.Logf("refused after %v: %s", time.Since(start), kindOf(rs[0]))
}
