package runtime

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	goruntime "runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/tetratelabs/wazero/api"

	"github.com/toolhost/toolhost/abi"
	"github.com/toolhost/toolhost/host/internal/wasmbin"
	"github.com/toolhost/toolhost/internal/testplugin"
)

// The test plugins are built once per test binary: a Go wasm build and a
// cold compile each take seconds.
var (
	buildOnce sync.Once
	builtDir  string
	buildErr  error
)

func testPlugins(t *testing.T) string {
	t.Helper()
	buildOnce.Do(func() {
		pkgs := []string{"host/internal/runtime/testdata/spin", "host/internal/runtime/testdata/spininit", "host/internal/runtime/testdata/panic",
			"host/internal/runtime/testdata/ungranted", "host/internal/runtime/testdata/impure", "plugins/read_file"}
		dir, err := testplugin.SharedDir("runtime", pkgs...)
		if err != nil {
			buildErr = err
			return
		}
		for _, p := range pkgs {
			testplugin.Build(t, dir, p)
		}
		builtDir = dir
	})
	if buildErr != nil {
		t.Fatal(buildErr)
	}
	return builtDir
}

func newRuntime(t *testing.T) *Runtime[testState] {
	t.Helper()
	ctx := context.Background()
	rt, err := New(ctx, Config[testState]{CacheDir: testplugin.CacheDir(t), HostFunctions: testHostFunctions()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { rt.Close(ctx) })
	return rt
}

// testState is the state the test host functions act on.
type testState struct {
	files map[string]string
}

// testHostFunctions stand in for package hostfn, so the runtime is tested
// alone: fs_read serves the state's files, whole; the others fail.
func testHostFunctions() []HostFunction[testState] {
	fns := []HostFunction[testState]{{
		Name:   abi.FnFSRead,
		Params: []api.ValueType{i32, i32, i64, i64, i32},
		Func: func(_ context.Context, state *testState, mem api.Memory, params []uint64) (abi.Status, []byte) {
			name, _ := mem.Read(uint32(params[0]), uint32(params[1]))
			data, ok := state.files[string(name)]
			if !ok {
				return abi.StatusNotFound, []byte(`{"kind":"ExecutionFailed","message":"no such file"}`)
			}
			return abi.StatusOK, append(abi.AppendReadInfo(nil, abi.ReadInfo{FileSize: int64(len(data))}), data...)
		},
	}}
	unavailable := func(context.Context, *testState, api.Memory, []uint64) (abi.Status, []byte) {
		return abi.StatusIO, []byte(`{"kind":"ExecutionFailed","message":"not in this test"}`)
	}
	for name, params := range map[string][]api.ValueType{
		abi.FnEventEmit:   {i32, i32, i32},
		abi.FnFSStat:      {i32, i32},
		abi.FnFSLstat:     {i32, i32},
		abi.FnFSReadLines: {i32, i32, i32, i32, i32},
		abi.FnFSList:      {i32, i32, i32, i32, i32},
		abi.FnFSWrite:     {i32, i32, i32, i32, i32},
		abi.FnFSDiff:      {i32, i32, i32, i32},
		abi.FnFSCommit:    {i32, i32, i32},
		abi.FnProcRun:     {i32, i32, i32, i32, i32},
		abi.FnFSSearch:    {i32, i32, i32},
		abi.FnProcExec:    {i32, i32, i32},
		abi.FnProcJob:     {i32, i32, i32},
	} {
		fns = append(fns, HostFunction[testState]{Name: name, Params: params, Func: unavailable})
	}
	return fns
}

func load(t *testing.T, rt *Runtime[testState], name string) *Plugin[testState] {
	t.Helper()
	p, err := rt.Load(context.Background(), filepath.Join(testPlugins(t), name+".wasm"))
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func request(args string) abi.Request {
	return abi.Request{ID: "c1", Args: json.RawMessage(args), Limits: abi.Limits{MaxOutputBytes: 1 << 20}}
}

// T-TMO-01 at the runtime level: a guest spinning forever is stopped within
// 100 ms after its deadline, its instance is discarded, and the plugin
// keeps serving calls.
func TestRunawayGuestStoppedAtDeadline_T_TMO_01(t *testing.T) {
	rt := newRuntime(t)
	p := load(t, rt, "spin")
	ctx := context.Background()
	if err := p.Warm(ctx, 1); err != nil {
		t.Fatal(err)
	}
	for range 2 { // twice: the second run proves the first left nothing stuck
		deadline := time.Now().Add(150 * time.Millisecond)
		cctx, cancel := context.WithDeadline(ctx, deadline)
		// Collections while the guest spins must not stop the process: a
		// goroutine in compiled wasm cannot be preempted, so the guard
		// yields to Go every 65,536 loop iterations.
		gcDone := make(chan struct{})
		go func() {
			defer close(gcDone)
			for range 3 {
				time.Sleep(20 * time.Millisecond)
				goruntime.GC()
			}
		}()
		_, err := p.Call(cctx, nil, request(`{"spin":true}`))
		<-gcDone
		late := time.Since(deadline)
		cancel()
		var ie *InterruptedError
		if !errors.As(err, &ie) || !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("spinning call: err = %v, want InterruptedError(DeadlineExceeded)", err)
		}
		// A generous bound: it proves the guest stops, on a loaded machine
		// under -race too; how soon is measured by the benchmarks.
		if late > 2*time.Second {
			t.Errorf("guest stopped %v after its deadline, want within 2s", late)
		}
		t.Logf("guest stopped %v after its deadline", late)
		res, err := p.Call(ctx, nil, request(`{"spin":false}`))
		if err != nil || string(res.Content) != "done" {
			t.Fatalf("call after interruption: %q, %v", res.Content, err)
		}
	}
}

// FR-EXE-04b: a panic or a crash becomes an error naming the guest's
// message, the instance is dropped, and the plugin still works.
func TestGuestPanicAndExit(t *testing.T) {
	rt := newRuntime(t)
	p := load(t, rt, "panic")
	ctx := context.Background()

	res, err := p.Call(ctx, nil, request(`{"message":"kaboom"}`))
	if err != nil || res.Kind != abi.KindPanicked || !strings.Contains(string(res.Content), "kaboom") {
		t.Fatalf("recovered panic: %+v, %v", res, err)
	}
	_, err = p.Call(ctx, nil, request(`{"message":"bye","exit":true}`))
	var te *TrapError
	if !errors.As(err, &te) || !strings.Contains(te.Message, "fatal: bye") {
		t.Fatalf("exiting guest: err = %v, want TrapError quoting its stderr", err)
	}
	res, err = p.Call(ctx, nil, request(`{}`))
	if err != nil || string(res.Content) != "calm" {
		t.Fatalf("call after crash: %q, %v", res.Content, err)
	}
}

// A module importing a host function its manifest does not grant is
// refused when it is loaded — before it is compiled or run — with an error
// naming plugin and function.
func TestUngrantedImportRefusedAtLoad(t *testing.T) {
	rt := newRuntime(t)
	_, err := rt.Load(context.Background(), filepath.Join(testPlugins(t), "ungranted.wasm"))
	var ie *ImportError
	if !errors.As(err, &ie) {
		t.Fatalf("Compile: err = %v, want ImportError", err)
	}
	for _, want := range []string{"ungranted", "fs_write"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not name %q", err, want)
		}
	}
}

// FR-REG-01a: a summary cannot perform I/O, even when the plugin tries.
func TestSummaryCannotDoIO(t *testing.T) {
	rt := newRuntime(t)
	p := load(t, rt, "impure")
	ctx := context.Background()

	res, err := p.Summary(ctx, []byte(`{"path":"secret.txt"}`))
	if err != nil {
		t.Fatal(err)
	}
	if res.Kind == "" || strings.Contains(string(res.Content), "TOP SECRET") {
		t.Fatalf("summary performed I/O: %+v", res)
	}
	if !strings.Contains(string(res.Content), "fs_read is not available while computing an approval summary") {
		t.Errorf("refusal %q does not say why", res.Content)
	}
	// The same read succeeds in a call, so the refusal is the summary's.
	res, err = p.Call(ctx, &testState{files: map[string]string{"secret.txt": "TOP SECRET"}}, request(`{"path":"secret.txt"}`))
	if err != nil || string(res.Content) != "TOP SECRET" {
		t.Fatalf("call: %+v, %v", res, err)
	}
}

// Pack stores the manifest so Load finds it without compiling, and the
// packed module still runs.
func TestPackedManifest(t *testing.T) {
	ctx := context.Background()
	raw, err := os.ReadFile(filepath.Join(testPlugins(t), "read_file.wasm"))
	if err != nil {
		t.Fatal(err)
	}
	if _, ok, _ := wasmbin.CustomSection(raw, abi.ManifestSection); ok {
		t.Fatal("unpacked module already has a manifest section")
	}
	packed, err := Pack(ctx, raw)
	if err != nil {
		t.Fatal(err)
	}
	section, ok, err := wasmbin.CustomSection(packed, abi.ManifestSection)
	if err != nil || !ok {
		t.Fatalf("packed module: section found=%v err=%v", ok, err)
	}
	var m abi.Manifest
	if err := json.Unmarshal(section, &m); err != nil || m.Name != "read_file" {
		t.Fatalf("section manifest: %+v %v", m, err)
	}
	// Packing twice replaces the section rather than adding a second one.
	again, err := wasmbin.WithCustomSection(packed, abi.ManifestSection, section)
	if err != nil || len(again) != len(packed) {
		t.Fatalf("re-pack changed size %d -> %d (%v)", len(packed), len(again), err)
	}

	path := filepath.Join(t.TempDir(), "read_file.wasm")
	if err := os.WriteFile(path, packed, 0o644); err != nil {
		t.Fatal(err)
	}
	rt := newRuntime(t)
	p, err := rt.Load(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	if !p.packed || p.compiled != nil {
		t.Fatalf("Load of a packed module: packed=%v compiled=%v, want packed and not compiled", p.packed, p.compiled != nil)
	}
	if err := p.Warm(ctx, 1); err != nil {
		t.Fatalf("warming packed module: %v", err)
	}
}

// An instance cannot grow past the memory limit: a guest that allocates
// more fails its call, and the plugin keeps serving.
func TestMemoryLimitPerInstance(t *testing.T) {
	ctx := context.Background()
	rt, err := New(ctx, Config[testState]{CacheDir: testplugin.CacheDir(t), MemoryLimitPages: 64 << 20 >> 16}) // 64 MiB
	if err != nil {
		t.Fatal(err)
	}
	defer rt.Close(ctx)
	p := load(t, rt, "panic")
	res, err := p.Call(ctx, nil, request(`{"alloc_mib":16}`))
	if err != nil || string(res.Content) != "calm" {
		t.Fatalf("16 MiB under a 64 MiB limit: %+v %v", res, err)
	}
	_, err = p.Call(ctx, nil, request(`{"alloc_mib":200}`))
	var te *TrapError
	if !errors.As(err, &te) || !strings.Contains(te.Message, "out of memory") {
		t.Fatalf("200 MiB under a 64 MiB limit: err = %v, want a trap reporting out of memory", err)
	}
	res, err = p.Call(ctx, nil, request(`{}`))
	if err != nil || string(res.Content) != "calm" {
		t.Fatalf("call after running out of memory: %+v %v", res, err)
	}
}
