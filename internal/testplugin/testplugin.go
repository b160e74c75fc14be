// Package testplugin builds plugin modules for tests: real modules from real
// sources, compiled with the same command as `make plugins`.
package testplugin

import (
	"crypto/sha256"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"
)

// ModuleRoot returns the repository root (the directory holding go.mod).
func ModuleRoot(t testing.TB) string {
	t.Helper()
	_, file, _, ok := runtime.Caller(0)
	if !ok {
		t.Fatal("cannot locate testplugin source")
	}
	return filepath.Join(filepath.Dir(file), "..", "..")
}

// Build compiles the plugin package at pkg (relative to the repository
// root, e.g. "plugins/read_file") into dir and returns the module's path.
// The Go build cache keeps repeated builds fast. The module is written
// whole and renamed into place, so test binaries may share dir.
func Build(t testing.TB, dir, pkg string) string {
	t.Helper()
	gobin, err := exec.LookPath("go")
	if err != nil {
		t.Fatalf("building test plugins needs the go tool: %v", err)
	}
	out := filepath.Join(dir, filepath.Base(pkg)+".wasm")
	tmp, err := os.CreateTemp(dir, filepath.Base(pkg)+"-*.tmp")
	if err != nil {
		t.Fatal(err)
	}
	tmp.Close()
	defer os.Remove(tmp.Name()) // left only if the rename failed
	cmd := exec.Command(gobin, "build", "-buildmode=c-shared", "-o", tmp.Name(), "./"+pkg)
	cmd.Dir = ModuleRoot(t)
	cmd.Env = append(os.Environ(), "GOOS=wasip1", "GOARCH=wasm")
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("build %s: %v\n%s", pkg, err, b)
	}
	if err := os.Rename(tmp.Name(), out); err != nil {
		t.Fatal(err)
	}
	return out
}

// SharedDir is the directory for the modules of pkgs that a test binary
// builds once and keeps for all its tests: under the system's temporary
// directory, named after purpose and the list of packages, and shared by
// later runs (Build replaces modules whole), so runs leave nothing new
// behind, and a directory never holds a module its list no longer names.
func SharedDir(purpose string, pkgs ...string) (string, error) {
	sum := sha256.Sum256([]byte(strings.Join(pkgs, "\n")))
	dir := filepath.Join(os.TempDir(), "toolhost-test-plugins", fmt.Sprintf("%s-%x", purpose, sum[:4]))
	return dir, os.MkdirAll(dir, 0o755)
}

// BuildAll builds each package into one fresh directory and returns it.
func BuildAll(t testing.TB, pkgs ...string) string {
	t.Helper()
	dir := t.TempDir()
	for _, pkg := range pkgs {
		Build(t, dir, pkg)
	}
	return dir
}

// CacheDir is the compilation cache tests share: $TOOLHOST_CACHE_DIR when
// set (make test sets it), else one directory under the system's temporary
// directory. It must outlive any single test, because tests share compiled
// runtimes.
func CacheDir(testing.TB) string {
	if dir := os.Getenv("TOOLHOST_CACHE_DIR"); dir != "" {
		return dir
	}
	return filepath.Join(os.TempDir(), "toolhost-test-cache")
}

// builtIns caches BuiltIns' directory for the test binary.
type builtIns struct {
	once sync.Once
	dir  string
	err  error
}

var shared builtIns

// BuiltIns returns the directory of the built-in plugins: the ones `make
// build` produced beside $TOOLHOST_BIN, or, when the tests run on their
// own, built once per test binary into a temporary directory.
func BuiltIns(t testing.TB) string {
	t.Helper()
	if bin := os.Getenv("TOOLHOST_BIN"); bin != "" {
		return filepath.Join(filepath.Dir(bin), "plugins")
	}
	shared.once.Do(func() {
		var pkgs []string
		if pkgs, shared.err = builtInPackages(ModuleRoot(t)); shared.err != nil {
			return
		}
		shared.dir, shared.err = SharedDir("built-ins", pkgs...)
		if shared.err != nil {
			return
		}
		for _, p := range pkgs {
			Build(t, shared.dir, p)
		}
	})
	if shared.err != nil {
		t.Fatal(shared.err)
	}
	return shared.dir
}

// builtInPackages lists the built-in plugins as `make plugins` finds them:
// every directory of plugins/ with a main.go (plugins/internal holds code
// they share).
func builtInPackages(root string) ([]string, error) {
	mains, err := filepath.Glob(filepath.Join(root, "plugins", "*", "main.go"))
	if err != nil || len(mains) == 0 {
		return nil, fmt.Errorf("no built-in plugins under %s (plugins/*/main.go): %v", filepath.Join(root, "plugins"), err)
	}
	pkgs := make([]string, len(mains))
	for i, m := range mains {
		pkgs[i] = "plugins/" + filepath.Base(filepath.Dir(m))
	}
	return pkgs, nil
}
