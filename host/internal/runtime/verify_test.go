package runtime

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"sync"
	"testing"

	"github.com/toolhost/toolhost/host/internal/wasmbin"
	"github.com/toolhost/toolhost/internal/testplugin"
)

// vetter is a Config.Verify that accepts only one module's bytes and
// records every module it was shown.
type vetter struct {
	trusted []byte
	mu      sync.Mutex
	seen    [][]byte
}

var errUntrusted = errors.New("untrusted module")

func (v *vetter) verify(_ string, data []byte) error {
	v.mu.Lock()
	defer v.mu.Unlock()
	v.seen = append(v.seen, bytes.Clone(data))
	if !bytes.Equal(data, v.trusted) {
		return errUntrusted
	}
	return nil
}

func (v *vetter) shown() [][]byte {
	v.mu.Lock()
	defer v.mu.Unlock()
	return v.seen
}

func vettedRuntime(t *testing.T, v *vetter) *Runtime[testState] {
	t.Helper()
	ctx := context.Background()
	rt, err := New(ctx, Config[testState]{CacheDir: testplugin.CacheDir(t), HostFunctions: testHostFunctions(), Verify: v.verify})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { rt.Close(ctx) })
	return rt
}

// modules returns read_file packed, and the same module with a section
// added: valid, runnable, and different.
func modules(t *testing.T) (packed, changed []byte) {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join(testPlugins(t), "read_file.wasm"))
	if err != nil {
		t.Fatal(err)
	}
	if packed, err = Pack(context.Background(), raw); err != nil {
		t.Fatal(err)
	}
	if changed, err = wasmbin.WithCustomSection(packed, "changed", []byte("not the module locked")); err != nil {
		t.Fatal(err)
	}
	return packed, changed
}

// Verify sees the module at Load, and a module it
// refuses is not loaded; its error comes back as is.
func TestVerifyAtLoad(t *testing.T) {
	packed, changed := modules(t)
	dir := t.TempDir()
	path := filepath.Join(dir, "read_file.wasm")
	os.WriteFile(path, changed, 0o644)
	v := &vetter{trusted: packed}
	if _, err := vettedRuntime(t, v).Load(context.Background(), path); !errors.Is(err, errUntrusted) {
		t.Fatalf("Load of an untrusted module: %v, want the verifier's error", err)
	}
	if seen := v.shown(); len(seen) != 1 || !bytes.Equal(seen[0], changed) {
		t.Fatalf("verifier saw %d modules, want the file's bytes once", len(seen))
	}
}

// A packed module is loaded without its code, and its
// code is read when first compiled. A file replaced in between is
// refused then — the call fails with the verifier's error — and the
// replacement never runs.
func TestVerifyAtCompile_FileReplacedAfterLoad(t *testing.T) {
	ctx := context.Background()
	packed, changed := modules(t)
	path := filepath.Join(t.TempDir(), "read_file.wasm")
	os.WriteFile(path, packed, 0o644)
	v := &vetter{trusted: packed}
	p, err := vettedRuntime(t, v).Load(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	if !p.packed || p.compiled != nil {
		t.Fatalf("packed=%v compiled=%v, want a packed module loaded without compiling", p.packed, p.compiled != nil)
	}
	os.WriteFile(path, changed, 0o644)
	for range 2 { // a second call does not retry into the new code
		if _, err := p.Call(ctx, &testState{}, request(`{"path":"a"}`)); !errors.Is(err, errUntrusted) {
			t.Fatalf("call on a module replaced after Load: %v, want the verifier's error", err)
		}
	}
	if p.compiled != nil {
		t.Error("the replaced module was compiled")
	}
	seen := v.shown()
	if len(seen) != 2 || !bytes.Equal(seen[0], packed) || !bytes.Equal(seen[1], changed) {
		t.Errorf("verifier saw %d modules, want the one loaded, then the one the compile read", len(seen))
	}
}

// An unpacked module is compiled at Load to describe itself: on the bytes
// vetted, which are the ones later calls run, whatever the file becomes.
func TestVerifyUnpackedRunsTheBytesVetted(t *testing.T) {
	ctx := context.Background()
	raw, err := os.ReadFile(filepath.Join(testPlugins(t), "read_file.wasm"))
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "read_file.wasm")
	os.WriteFile(path, raw, 0o644)
	v := &vetter{trusted: raw}
	p, err := vettedRuntime(t, v).Load(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	os.WriteFile(path, []byte("\x00asm\x01\x00\x00\x00"), 0o644)
	// The guest ran (its result does not matter): it was not refused.
	if _, err := p.Call(ctx, &testState{files: map[string]string{"a": "x"}}, request(`{"path":"a"}`)); err != nil {
		t.Fatalf("call: %v", err)
	}
	if seen := v.shown(); len(seen) != 1 {
		t.Errorf("verifier saw %d modules, want one: the bytes read at Load are the ones compiled", len(seen))
	}
}
