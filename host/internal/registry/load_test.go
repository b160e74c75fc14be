package registry

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	goruntime "runtime"
	"strings"
	"testing"
	"time"

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

// foreignFunc is a ForeignLoader running a function: a test's way to
// see, or hold back, each module's load.
type foreignFunc func(path string) ([]ForeignTool, bool, error)

func (f foreignFunc) Load(_ context.Context, path, _ string) ([]ForeignTool, bool, error) {
	return f(path)
}

// brokenModules writes names as modules that are not WebAssembly.
func brokenModules(t *testing.T, names ...string) string {
	t.Helper()
	dir := t.TempDir()
	for _, name := range names {
		if err := os.WriteFile(filepath.Join(dir, name+".wasm"), []byte("not a module: "+name), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// The first module by path is reported even when its failure comes last:
// its load is held back until the second's has failed.
func TestLoadReportsTheFirstBrokenModuleWhateverFailsFirst(t *testing.T) {
	if goruntime.GOMAXPROCS(0) < 2 {
		t.Skip("needs two workers, to load both modules at once")
	}
	ctx := context.Background()
	dir := brokenModules(t, "a_first", "b_second")
	rt, err := runtime.New(ctx, runtime.Config[hostfn.Env]{HostFunctions: hostfn.Functions()})
	if err != nil {
		t.Fatal(err)
	}
	defer rt.Close(ctx)
	secondFailed := make(chan struct{})
	slowFirst := foreignFunc(func(path string) ([]ForeignTool, bool, error) {
		if strings.HasSuffix(path, "a_first.wasm") {
			<-secondFailed
			// Time for the second's failure to be recorded too, so that
			// reporting the failure that came first fails this test
			// every time, not only often; a right answer never waits on it.
			time.Sleep(20 * time.Millisecond)
			return nil, true, errors.New("a_first fails last")
		}
		defer close(secondFailed)
		return nil, true, errors.New("b_second fails first")
	})
	_, err = LoadWith(ctx, rt, dir, Options{Foreign: slowFirst})
	if err == nil || !strings.Contains(err.Error(), "a_first fails last") {
		t.Fatalf("LoadWith: %v, want the error of a_first.wasm", err)
	}
}
