package host_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"

	"github.com/toolhost/toolhost/host"
	"github.com/toolhost/toolhost/internal/testplugin"
)

// Embedding toolhost in a Go agent: open a host on the workspace with the
// trusted plugin directory, and run each model response as one batch. The
// approver is where a person (or a policy service) says yes or no.
func Example_embedding() {
	ctx := context.Background()
	workspace, _ := os.MkdirTemp("", "workspace")
	defer os.RemoveAll(workspace)
	os.WriteFile(filepath.Join(workspace, "notes.txt"), []byte("alpha\n"), 0o644)

	cfg := host.DefaultConfig() // reads run, writes ask, run_command is denied
	cfg.Tools.Sandbox.AllowedRoots = []string{workspace}
	h, err := host.Open(ctx, host.Options{
		PluginDir: builtinPlugins(), // make build leaves them in bin/plugins
		Config:    cfg,
		CacheDir:  os.Getenv("TOOLHOST_CACHE_DIR"),
	})
	if err != nil {
		panic(err)
	}
	defer h.Close(ctx)

	batch := host.Batch{Conversation: "demo", Calls: []host.Call{
		{ID: "c1", Name: "read_file", Arguments: json.RawMessage(`{"path":"notes.txt"}`)},
		{ID: "c2", Name: "write_file", Arguments: json.RawMessage(`{"path":"notes.txt","content":"beta\n"}`)},
		{ID: "c3", Name: "run_command", Arguments: json.RawMessage(`{"command":"rm -rf /"}`)},
	}}
	approve := host.ApproverFunc(func(_ context.Context, asks []host.Confirmation) (host.Decision, error) {
		for _, a := range asks {
			fmt.Printf("asked: %s (%s risk)\n", a.Summary, a.Risk)
		}
		return host.ApproveAll("the example"), nil
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

// builtinPlugins is the directory of the built-in plugins: the ones make
// build left beside $TOOLHOST_BIN, or else built now from this module's
// sources. An example has no *testing.T for testplugin.BuiltIns, so a
// failed build panics, failing the example with the compiler's output.
func builtinPlugins() string {
	if bin := os.Getenv("TOOLHOST_BIN"); bin != "" {
		return filepath.Join(filepath.Dir(bin), "plugins")
	}
	pkgs := []string{"plugins/read_file", "plugins/write_file", "plugins/run_command"}
	dir, err := testplugin.SharedDir("host-example", pkgs...)
	if err != nil {
		panic(err)
	}
	root, err := exec.Command("go", "list", "-m", "-f", "{{.Dir}}").Output()
	if err != nil {
		panic(fmt.Sprintf("locating the module: %v", err))
	}
	for _, pkg := range pkgs {
		// Built under a temporary name and renamed, as testplugin.Build
		// does, so that test binaries sharing dir never load half a module.
		f, err := os.CreateTemp(dir, filepath.Base(pkg)+"-*.tmp")
		if err != nil {
			panic(err)
		}
		f.Close()
		tmp := f.Name()
		cmd := exec.Command("go", "build", "-buildmode=c-shared", "-o", tmp, "./"+pkg)
		cmd.Dir = string(root[:len(root)-1])
		cmd.Env = append(os.Environ(), "GOOS=wasip1", "GOARCH=wasm")
		if out, err := cmd.CombinedOutput(); err != nil {
			os.Remove(tmp)
			panic(fmt.Sprintf("building %s: %v\n%s", pkg, err, out))
		}
		if err := os.Rename(tmp, filepath.Join(dir, filepath.Base(pkg)+".wasm")); err != nil {
			os.Remove(tmp)
			panic(err)
		}
	}
	return dir
}
