package registry

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/toolhost/toolhost/host/internal/hostfn"
	"github.com/toolhost/toolhost/host/internal/runtime"
)

// Modules load at once, but a directory with several broken ones always
// reports the same one, the first by path, as when they loaded in turn.
func TestLoadReportsTheFirstBrokenModule(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	for _, name := range []string{"a_first", "b_second", "c_third", "d_fourth"} {
		if err := os.WriteFile(filepath.Join(dir, name+".wasm"), []byte("not a module: "+name), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	rt, err := runtime.New(ctx, runtime.Config[hostfn.Env]{HostFunctions: hostfn.Functions()})
	if err != nil {
		t.Fatal(err)
	}
	defer rt.Close(ctx)
	for range 20 {
		_, err := Load(ctx, rt, dir)
		if err == nil || !strings.Contains(err.Error(), "a_first.wasm") {
			t.Fatalf("Load: %v, want the error of a_first.wasm", err)
		}
	}
}
