package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"

	"github.com/toolhost/toolhost/host/engine"
	"github.com/toolhost/toolhost/host/readcache"
	"github.com/toolhost/toolhost/host/registry"
	"github.com/toolhost/toolhost/host/runtime"
	"github.com/toolhost/toolhost/host/sandbox"
)

// Embedding toolhost in a Go agent: load the plugins, open a sandbox on the
// workspace, and run each model response as one batch. The approve
// function is where a person (or a policy service) says yes or no.
func Example_embedding() {
	ctx := context.Background()
	workspace, _ := os.MkdirTemp("", "workspace")
	defer os.RemoveAll(workspace)
	os.WriteFile(filepath.Join(workspace, "notes.txt"), []byte("alpha\n"), 0o644)

	rt, err := runtime.New(ctx, runtime.Config{CacheDir: os.Getenv("TOOLHOST_CACHE_DIR")})
	if err != nil {
		panic(err)
	}
	defer rt.Close(ctx)
	reg, err := registry.Load(ctx, rt, filepath.Join(filepath.Dir(toolhost), "plugins"))
	if err != nil {
		panic(err)
	}
	sb, err := sandbox.New(sandbox.Config{Roots: []string{workspace}, IncludeDefaultDenies: true})
	if err != nil {
		panic(err)
	}
	defer sb.Close()
	reads := readcache.New() // one per conversation; persist it with readcache.Store
	eng := engine.New(engine.Config{
		Registry: reg, Sandbox: sb, Policy: engine.DefaultPolicy(),
		ReadCache: func(string) *readcache.Cache { return reads },
	})

	batch := engine.Batch{Conversation: "demo", Calls: []engine.Call{
		{ID: "c1", Name: "read_file", Arguments: json.RawMessage(`{"path":"notes.txt"}`)},
		{ID: "c2", Name: "write_file", Arguments: json.RawMessage(`{"path":"notes.txt","content":"beta\n"}`)},
		{ID: "c3", Name: "run_command", Arguments: json.RawMessage(`{"command":"rm -rf /"}`)},
	}}
	approve := func(_ context.Context, asks []engine.Confirmation) engine.Decision {
		for _, a := range asks {
			fmt.Printf("asked: %s (%s risk)\n", a.Summary, a.Risk)
		}
		return engine.ApproveAll("the example")
	}
	_, results := eng.Process(ctx, batch, approve, engine.RunOptions{})
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
