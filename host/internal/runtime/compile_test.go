package runtime

import (
	"context"
	"log/slog"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/toolhost/toolhost/host/internal/loopguard"
	"github.com/toolhost/toolhost/host/internal/wasmbin"
	"github.com/toolhost/toolhost/internal/testplugin"
)

// compileCounter is a log handler counting the compiles a runtime logs.
type compileCounter struct{ n atomic.Int32 }

func (c *compileCounter) Enabled(context.Context, slog.Level) bool { return true }
func (c *compileCounter) Handle(_ context.Context, r slog.Record) error {
	if r.Message == "compiled plugin" {
		c.n.Add(1)
	}
	return nil
}
func (c *compileCounter) WithAttrs([]slog.Attr) slog.Handler { return c }
func (c *compileCounter) WithGroup(string) slog.Handler      { return c }

// A call that comes while its plugin compiles in the background waits for
// that compile and runs on what it made: the module is compiled once,
// whichever of the two comes first, and both succeed.
func TestCallDuringBackgroundCompileWaitsForIt(t *testing.T) {
	ctx := context.Background()
	for _, background := range []bool{true, false} {
		counter := &compileCounter{}
		rt, err := New(ctx, Config[testState]{CacheDir: testplugin.CacheDir(t), HostFunctions: testHostFunctions(), Logger: slog.New(counter)})
		if err != nil {
			t.Fatal(err)
		}
		p := load(t, rt, "read_file")
		compileCtx := ctx
		if background {
			compileCtx = Background(ctx)
		}
		var wg sync.WaitGroup
		var compileErr, callErr error
		wg.Go(func() { compileErr = p.Compile(compileCtx) })
		wg.Go(func() {
			_, callErr = p.Call(ctx, &testState{files: map[string]string{"a": "x"}}, request(`{"path":"a"}`))
		})
		wg.Wait()
		if compileErr != nil || callErr != nil {
			t.Errorf("background=%v: compile: %v; call: %v", background, compileErr, callErr)
		}
		if n := counter.n.Load(); n != 1 {
			t.Errorf("background=%v: the module was compiled %d times, want once", background, n)
		}
		rt.Close(ctx)
	}
}

// The instrumented module is cached by the file's identity, not its
// hash. A module rewritten in place to another of the same size, with
// its modification time set back, still gets its own code: the rewrite
// changed the file's change time, which no user can set back.
func TestRewrittenModuleWithSameSizeAndTimeIsNotServedStaleCode(t *testing.T) {
	ctx := context.Background()
	packed, _ := modules(t)
	first, err := wasmbin.WithCustomSection(packed, "edition", []byte("first"))
	if err != nil {
		t.Fatal(err)
	}
	second, err := wasmbin.WithCustomSection(packed, "edition", []byte("other"))
	if err != nil {
		t.Fatal(err)
	}
	cache := t.TempDir()
	path := filepath.Join(t.TempDir(), "read_file.wasm")
	if err := os.WriteFile(path, first, 0o644); err != nil {
		t.Fatal(err)
	}
	code := func() []byte {
		rt, err := New(ctx, Config[testState]{CacheDir: cache, HostFunctions: testHostFunctions()})
		if err != nil {
			t.Fatal(err)
		}
		defer rt.Close(ctx)
		p, err := rt.Load(ctx, path)
		if err != nil {
			t.Fatal(err)
		}
		_, code, _, err := p.code(ctx)
		if err != nil {
			t.Fatal(err)
		}
		return code
	}
	code() // fills the cache for the first module
	st, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	time.Sleep(10 * time.Millisecond) // a coarse clock still moves the change time
	f, err := os.OpenFile(path, os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteAt(second, 0); err != nil {
		t.Fatal(err)
	}
	f.Close()
	if err := os.Chtimes(path, st.ModTime(), st.ModTime()); err != nil {
		t.Fatal(err)
	}
	if now, err := os.Stat(path); err != nil || now.Size() != st.Size() || !now.ModTime().Equal(st.ModTime()) {
		t.Fatalf("the rewrite changed the size or the modification time (%v)", err)
	}
	want, err := loopguard.Instrument(second)
	if err != nil {
		t.Fatal(err)
	}
	if got := code(); string(got) != string(want) {
		t.Error("the rewritten module was given the code cached for the module it replaced")
	}
}
