package extism_test

import (
	"bytes"
	"context"
	"errors"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/toolhost/toolhost/host/internal/extism"
	guests "github.com/toolhost/toolhost/host/internal/tests/extism"
	"github.com/toolhost/toolhost/internal/testplugin"
)

func load(t *testing.T, opts extism.Options, name, path string) ([]*extism.Tool, error) {
	t.Helper()
	opts.CacheDir = testplugin.CacheDir(t)
	l, err := extism.NewLoader(opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close(context.Background()) })
	kind, err := extism.Detect(path)
	if err != nil {
		t.Fatal(err)
	}
	return l.Load(context.Background(), path, name, kind)
}

// A module whose list_tools spins is stopped at the load
// deadline and refused, naming it; toolhost does not hang.
func TestLoadDeadline(t *testing.T) {
	path := guests.Build(t, guests.Misbehave)
	if _, err := load(t, extism.Options{}, "misbehave", path); err != nil { // compiled, so only the spin is timed
		t.Fatal(err)
	}
	start := time.Now()
	_, err := load(t, extism.Options{LoadTimeout: time.Second, Grants: map[string]extism.Grant{
		"misbehave": {Config: map[string]string{"spin_at_load": "1"}},
	}}, "misbehave", path)
	if err == nil || !strings.Contains(err.Error(), path) || !strings.Contains(err.Error(), "did not return within 1s") {
		t.Fatalf("error %v", err)
	}
	if took := time.Since(start); took > 5*time.Second {
		t.Errorf("load stopped after %v, want about 1s", took)
	}
}

// Verify sees the exact bytes that are
// compiled, before anything runs, and its error refuses the module.
func TestVerifyHook(t *testing.T) {
	path := guests.Build(t, guests.HyperTools)
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	refused := errors.New("not in the lock file")
	var seen []byte
	_, err = load(t, extism.Options{Verify: func(p string, data []byte) error {
		if p == path {
			seen = data
		}
		return refused
	}}, "hypertools", path)
	if !errors.Is(err, refused) || !bytes.Equal(seen, want) {
		t.Fatalf("error %v, verified %d bytes of %d", err, len(seen), len(want))
	}
	tools, err := load(t, extism.Options{Verify: func(string, []byte) error { return nil }}, "hypertools", path)
	if err != nil || len(tools) != 2 {
		t.Fatalf("tools %d, error %v", len(tools), err)
	}
}

// The memory cap holds from the start: a Go guest given
// less than it needs to start is refused at load, naming it.
func TestMemoryCapAtLoad(t *testing.T) {
	path := guests.Build(t, guests.HyperTools)
	_, err := load(t, extism.Options{Grants: map[string]extism.Grant{"hypertools": {MaxMemoryMiB: 1}}}, "hypertools", path)
	if err == nil || !strings.Contains(err.Error(), path) {
		t.Fatalf("error %v, want the load refused naming the plugin", err)
	}
}

// Under a lock, a changed module is refused by the
// lock before anything reads it, naming the change, even when it now
// imports what toolhost does not provide (the import check used to run
// first, on the file as it was then, and said nothing of the lock).
func TestVerifyBeforeImports(t *testing.T) {
	path := guests.Build(t, guests.BadImport)
	changed := errors.New("SHA-256 differs from the lock's")
	_, err := load(t, extism.Options{Verify: func(string, []byte) error { return changed }}, "badimport", path)
	if !errors.Is(err, changed) {
		t.Fatalf("error %v, want the lock's refusal", err)
	}
	var ie *extism.ImportError
	if _, err := load(t, extism.Options{}, "badimport", path); !errors.As(err, &ie) {
		t.Fatalf("without a lock: error %v, want an *ImportError", err)
	}
}
