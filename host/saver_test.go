package host_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/toolhost/toolhost/host"
	"github.com/toolhost/toolhost/host/internal/engine"
)

// A read is saved off the call's path but soon: another process (a CLI
// call beside a server) sees it while the first host still runs, without
// waiting for its Close (FR-TOOL-PATCH-02a).
func TestReadSavedWhileHostRuns(t *testing.T) {
	state, root := t.TempDir(), t.TempDir()
	if err := os.WriteFile(filepath.Join(root, "a.txt"), []byte("old\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	openAt := func() *host.Host { return openState(t, root, state) }
	server := openAt()
	defer server.Close(context.Background())
	_, rs := server.Process(context.Background(), engine.Batch{Conversation: "c1", Calls: []engine.Call{call("r", "read_file", `{"path":"a.txt"}`)}}, host.BatchOptions{})
	if !rs[0].OK {
		t.Fatalf("read: %+v", rs[0].Error)
	}
	write := call("w", "write_file", `{"path":"a.txt","content":"new\n","dry_run":true}`)
	deadline := time.Now().Add(5 * time.Second)
	for {
		cli := openAt()
		_, rs = cli.Process(context.Background(), engine.Batch{Conversation: "c1", Calls: []engine.Call{write}}, host.BatchOptions{Approver: approveAll()})
		cli.Close(context.Background())
		if rs[0].OK {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("another host still does not see the read after 5 s: %+v", rs[0].Error)
		}
		time.Sleep(20 * time.Millisecond)
	}
}
