package runtime

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	goruntime "runtime"
	"runtime/debug"
	"strconv"
	"testing"
	"time"

	"github.com/toolhost/toolhost/internal/testplugin"
)

// resources is what a process holds that a leak would grow.
type resources struct {
	heap  uint64 // bytes in use on the Go heap, after collection
	rss   uint64 // resident bytes, wazero's mapped code included
	maps  int    // memory mappings (wazero maps each module's code)
	files int    // open descriptors
}

func measure(t *testing.T) resources {
	t.Helper()
	// Two collections: wazero unmaps compiled code in finalizers, which
	// run after the first.
	for range 2 {
		goruntime.GC()
		time.Sleep(10 * time.Millisecond)
	}
	// Memory the Go runtime freed but has not yet given back is resident
	// until its scavenger gets to it, later the busier the machine: give
	// it back now, so that RSS counts what is still held (compiled code
	// wazero maps outside the Go heap included).
	debug.FreeOSMemory()
	var ms goruntime.MemStats
	goruntime.ReadMemStats(&ms)
	r := resources{heap: ms.HeapInuse}
	if b, err := os.ReadFile("/proc/self/status"); err == nil {
		for line := range bytes.Lines(b) {
			if v, ok := bytes.CutPrefix(line, []byte("VmRSS:")); ok {
				kb, _ := strconv.ParseUint(string(bytes.Fields(v)[0]), 10, 64)
				r.rss = kb << 10
			}
		}
	}
	if b, err := os.ReadFile("/proc/self/maps"); err == nil {
		r.maps = bytes.Count(b, []byte("\n"))
	}
	if fds, err := os.ReadDir("/proc/self/fd"); err == nil {
		r.files = len(fds)
	}
	return r
}

// realPlugins is the directory of the plugins make builds: next to
// $TOOLHOST_BIN, else built here.
func realPlugins(t *testing.T) string {
	if bin := os.Getenv("TOOLHOST_BIN"); bin != "" {
		return filepath.Join(filepath.Dir(bin), "plugins")
	}
	return testplugin.BuildAll(t, "plugins/read_file", "plugins/write_file", "plugins/list_directory", "plugins/apply_patch", "plugins/run_command")
}

// Loading a plugin directory, calling every plugin once
// (so each compiles and pools an instance) and closing it all, over and
// over, holds memory, mapped code and descriptors steady. Half the rounds
// use a runtime each, closed with its plugins (every other one closes the
// plugins first): the runtime releases its engines and compilation cache.
// The other half share one runtime and close the plugins only: a closed
// plugin releases its instances, compiled module and host module (before
// Plugin.Close existed, such a runtime grew by some 50 MiB a round).
func TestLoadCloseDoesNotLeak(t *testing.T) {
	if _, err := os.Stat("/proc/self/status"); err != nil {
		t.Skip("needs /proc")
	}
	rounds := leakRounds
	if testing.Short() {
		rounds = 8
	}
	ctx := context.Background()
	dir := realPlugins(t)
	paths, err := filepath.Glob(filepath.Join(dir, "*.wasm"))
	if err != nil || len(paths) == 0 {
		t.Fatalf("no plugins in %s (%v)", dir, err)
	}
	cache := testplugin.CacheDir(t)
	newRuntime := func() *Runtime[testState] {
		rt, err := New(ctx, Config[testState]{CacheDir: cache, HostFunctions: testHostFunctions()})
		if err != nil {
			t.Fatal(err)
		}
		return rt
	}
	// round loads and calls every plugin and closes them, unless the
	// runtime is to do it.
	round := func(rt *Runtime[testState], closePlugins bool) {
		for _, path := range paths {
			p, err := rt.Load(ctx, path)
			if err != nil {
				t.Fatal(err)
			}
			// Refused host functions make most plugins fail the call, as
			// results: the instance is pooled all the same.
			if _, err := p.Call(ctx, &testState{}, request(`{}`)); err != nil {
				t.Fatalf("%s: %v", path, err)
			}
			if p.pooled() != 1 {
				t.Fatalf("%s: %d instances pooled, want 1", path, p.pooled())
			}
			if closePlugins {
				p.Close(ctx)
			}
		}
	}
	half := rounds / 2
	start := time.Now()
	var from resources
	for i := range half {
		rt := newRuntime()
		round(rt, i%2 == 0)
		if err := rt.Close(ctx); err != nil {
			t.Fatal(err)
		}
		if i == half/2 {
			from = measure(t)
		}
	}
	checkSteady(t, "a runtime a round", half-half/2-1, len(paths), from, measure(t))

	rt := newRuntime()
	defer rt.Close(ctx)
	for i := range half {
		round(rt, true)
		if i == 0 {
			from = measure(t)
		}
	}
	checkSteady(t, "one runtime", half-1, len(paths), from, measure(t))
	t.Logf("%d rounds in %v", rounds, time.Since(start))
}

// checkSteady fails the test if resources grew from from to to over n
// rounds. One round maps tens of MiB of code and instance memory: a leak
// of even part of a round per round shows far above these bounds.
func checkSteady(t *testing.T, what string, n, plugins int, from, to resources) {
	t.Helper()
	t.Logf("%s, the last %d rounds of %d plugins: heap %d -> %d KiB, RSS %d -> %d KiB, mappings %d -> %d, descriptors %d -> %d",
		what, n, plugins, from.heap>>10, to.heap>>10, from.rss>>10, to.rss>>10, from.maps, to.maps, from.files, to.files)
	const (
		maxHeap  = 32 << 20
		maxRSS   = 128 << 20
		maxMaps  = 64
		maxFiles = 8
	)
	if grow := int64(to.heap) - int64(from.heap); grow > maxHeap {
		t.Errorf("%s: Go heap grew %d KiB over %d rounds", what, grow>>10, n)
	}
	if grow := int64(to.rss) - int64(from.rss); grow > maxRSS {
		t.Errorf("%s: RSS grew %d KiB over %d rounds", what, grow>>10, n)
	}
	if grow := to.maps - from.maps; grow > maxMaps {
		t.Errorf("%s: %d more memory mappings after %d rounds", what, grow, n)
	}
	if grow := to.files - from.files; grow > maxFiles {
		t.Errorf("%s: %d more open descriptors after %d rounds", what, grow, n)
	}
}
