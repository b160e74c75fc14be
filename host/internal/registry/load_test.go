package registry

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	goruntime "runtime"
	"strings"
	"sync/atomic"
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

// A directory with a broken module does not load the modules after it,
// and a load whose context has ended loads none: both return at once
// rather than after every module. One worker (GOMAXPROCS 1) makes the
// count exact: with more, each may have taken a module as the first
// failed.
func TestLoadStopsAtABrokenModuleOrAnEndedContext(t *testing.T) {
	names := make([]string, 40)
	for i := range names {
		names[i] = fmt.Sprintf("m%02d", i)
	}
	ended, end := context.WithCancel(context.Background())
	end()
	tests := []struct {
		name      string
		ctx       context.Context
		broken    string
		want      string
		wantLoads int32
	}{
		{"broken first module", context.Background(), "m00.wasm", "m00 is broken", 1},
		{"ended context", ended, "", "loading the plugins stopped: context canceled", 0},
	}
	defer goruntime.GOMAXPROCS(goruntime.GOMAXPROCS(1))
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := brokenModules(t, names...)
			rt, err := runtime.New(context.Background(), runtime.Config[hostfn.Env]{HostFunctions: hostfn.Functions()})
			if err != nil {
				t.Fatal(err)
			}
			defer rt.Close(context.Background())
			var loads atomic.Int32
			counting := foreignFunc(func(path string) ([]ForeignTool, bool, error) {
				loads.Add(1)
				if filepath.Base(path) == tt.broken {
					return nil, true, errors.New(strings.TrimSuffix(tt.broken, ".wasm") + " is broken")
				}
				return nil, true, nil // a foreign module without tools
			})
			_, err = LoadWith(tt.ctx, rt, dir, Options{Foreign: counting})
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("LoadWith: %v, want %q", err, tt.want)
			}
			if tt.ctx.Err() != nil && !errors.Is(err, context.Canceled) {
				t.Errorf("LoadWith: %v, want it to wrap context.Canceled", err)
			}
			if n := loads.Load(); n != tt.wantLoads {
				t.Errorf("%d of %d modules loaded, want %d", n, len(names), tt.wantLoads)
			}
		})
	}
}
