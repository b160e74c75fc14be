package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"

	"github.com/toolhost/toolhost/host"
	"github.com/toolhost/toolhost/host/internal/config"
	"github.com/toolhost/toolhost/host/internal/engine"
)

// Embedding toolhost in a Go agent: open a host on the workspace with the
// trusted plugin directory, and run each model response as one batch. The
// approver is where a person (or a policy service) says yes or no.
func Example_embedding() {
	ctx := context.Background()
	workspace, _ := os.MkdirTemp("", "workspace")
	defer os.RemoveAll(workspace)
	os.WriteFile(filepath.Join(workspace, "notes.txt"), []byte("alpha\n"), 0o644)

	cfg := config.Default() // the SRD's defaults: reads run, writes ask, run_command is denied
	cfg.Tools.Sandbox.AllowedRoots = []string{workspace}
	h, err := host.Open(ctx, host.Options{
		PluginDir: filepath.Join(filepath.Dir(toolhost), "plugins"),
		Config:    cfg,
		CacheDir:  os.Getenv("TOOLHOST_CACHE_DIR"),
	})
	if err != nil {
		panic(err)
	}
	defer h.Close(ctx)

	batch := engine.Batch{Conversation: "demo", Calls: []engine.Call{
		{ID: "c1", Name: "read_file", Arguments: json.RawMessage(`{"path":"notes.txt"}`)},
		{ID: "c2", Name: "write_file", Arguments: json.RawMessage(`{"path":"notes.txt","content":"beta\n"}`)},
		{ID: "c3", Name: "run_command", Arguments: json.RawMessage(`{"command":"rm -rf /"}`)},
	}}
	approve := engine.ApproverFunc(func(_ context.Context, asks []engine.Confirmation) (engine.Decision, error) {
		for _, a := range asks {
			fmt.Printf("asked: %s (%s risk)\n", a.Summary, a.Risk)
		}
		return engine.ApproveAll("the example"), nil
	})
	_, results := h.Process(ctx, batch, host.BatchOptions{Approver: approve})
	for _, r := range results {
		if r.OK {
			fmt.Printf("%s ok: %q\n", r.ID, r.Content)
		} else {
			fmt.Printf("%s %s\n", r.ID, r.Error.Kind)
		}
	}
	// Output:
	// asked: Write 5 bytes to notes.txt (medium risk)
	// c1 ok: "alpha\n"
	// c2 ok: "modified: notes.txt (5 bytes)"
	// c3 SandboxViolation
}
