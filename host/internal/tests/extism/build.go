// Package extism builds the Extism MCP plugins under plugins/ (their own
// Go module on github.com/extism/go-pdk, so the main module does not
// require it) for the tests of Extism plugins; its tests load them
// through host.Open.
package extism

import (
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"sync"
	"testing"
)

// Plugins are the guests under plugins/.
const (
	HyperTools = "hypertools" // upper and progress: well-behaved
	NetFetch   = "netfetch"   // fetch: GETs a URL through Extism HTTP
	Misbehave  = "misbehave"  // spin, flood, probe, crash, fail
	Servlet    = "servlet"    // servlet_echo, over describe and call
	BadImport  = "badimport"  // imports create_message and list_roots
)

// built caches each guest's module for the test binary: linking a Go
// guest takes seconds even when the build cache holds its packages.
type built struct {
	mu   sync.Mutex
	done map[string]string
}

var shared = built{done: map[string]string{}}

// Build compiles the guest name once per test binary and returns its
// module's path; copy it before changing it. Modules go to one directory
// under the system's temporary directory that every test binary shares
// (each replaces a module by renaming a finished one over it), so runs
// leave nothing new behind.
func Build(t testing.TB, name string) string {
	t.Helper()
	shared.mu.Lock()
	defer shared.mu.Unlock()
	if p, ok := shared.done[name]; ok {
		return p
	}
	dir := filepath.Join(os.TempDir(), "toolhost-extism-guests")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	gobin, err := exec.LookPath("go")
	if err != nil {
		t.Fatalf("building Extism test plugins needs the go tool: %v", err)
	}
	tmp, err := os.CreateTemp(dir, name+"-*.wasm")
	if err != nil {
		t.Fatal(err)
	}
	tmp.Close()
	defer os.Remove(tmp.Name()) // left only if the rename failed
	cmd := exec.Command(gobin, "build", "-buildmode=c-shared", "-o", tmp.Name(), "./"+name)
	cmd.Dir = filepath.Join(Dir(t), "plugins")
	cmd.Env = append(os.Environ(), "GOOS=wasip1", "GOARCH=wasm", "GOWORK=off")
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("build Extism plugin %s: %v\n%s", name, err, b)
	}
	out := filepath.Join(dir, name+".wasm")
	if err := os.Rename(tmp.Name(), out); err != nil {
		t.Fatal(err)
	}
	shared.done[name] = out
	return out
}

// Install copies the guest name into dir as file (a path relative to
// dir: "x.wasm", or "x/plugin.wasm" for a plugin in its own folder) and
// returns its path.
func Install(t testing.TB, dir, name, file string) string {
	t.Helper()
	b, err := os.ReadFile(Build(t, name))
	if err != nil {
		t.Fatal(err)
	}
	dst := filepath.Join(dir, file)
	if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(dst, b, 0o644); err != nil {
		t.Fatal(err)
	}
	return dst
}

// Dir is this package's directory.
func Dir(t testing.TB) string {
	t.Helper()
	_, file, _, ok := runtime.Caller(0)
	if !ok {
		t.Fatal("cannot locate the Extism test plugins")
	}
	return filepath.Dir(file)
}
