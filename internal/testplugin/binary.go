package testplugin

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
)

// Isolate gives every toolhost process a test binary starts a home of its
// own, so that no developer's configuration (~/.config/toolhost,
// $TOOLHOST_CONFIG, TOOLHOST_TOOLS_* variables) or trust list changes
// what a test sees. The compile cache and Go's caches stay where they
// were, so nothing is compiled or downloaded anew. Call it from TestMain
// and remove the home it returns when the tests end.
func Isolate() (home string, err error) {
	if os.Getenv("TOOLHOST_CACHE_DIR") == "" {
		os.Setenv("TOOLHOST_CACHE_DIR", CacheDir(nil))
	}
	for _, name := range []string{"GOPATH", "GOMODCACHE", "GOCACHE"} {
		if os.Getenv(name) == "" {
			out, err := exec.Command("go", "env", name).Output()
			if err != nil {
				return "", fmt.Errorf("go env %s: %w", name, err)
			}
			os.Setenv(name, strings.TrimSpace(string(out)))
		}
	}
	if home, err = os.MkdirTemp("", "toolhost-home"); err != nil {
		return "", err
	}
	for _, kv := range os.Environ() {
		if name, _, _ := strings.Cut(kv, "="); name == "TOOLHOST_CONFIG" || strings.HasPrefix(name, "TOOLHOST_TOOLS_") {
			os.Unsetenv(name)
		}
	}
	os.Setenv("HOME", home)
	os.Setenv("XDG_CONFIG_HOME", filepath.Join(home, ".config"))
	os.Setenv("XDG_STATE_HOME", filepath.Join(home, ".local", "state"))
	return home, nil
}

// Toolhost returns the toolhost binary to test: $TOOLHOST_BIN (what `make
// build` produced) when set, else one built from this repository into dir.
func Toolhost(dir string) (string, error) {
	if bin := os.Getenv("TOOLHOST_BIN"); bin != "" {
		return bin, nil
	}
	bin := filepath.Join(dir, "toolhost")
	build := exec.Command("go", "build", "-o", bin, "./host/cmd/toolhost")
	build.Dir = moduleRoot()
	if out, err := build.CombinedOutput(); err != nil {
		return "", fmt.Errorf("go build ./cmd/toolhost: %v\n%s", err, out)
	}
	return bin, nil
}

// moduleRoot is the repository root, from this file's place in it.
func moduleRoot() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Join(filepath.Dir(file), "..", "..")
}

// Main is the TestMain of a package that drives the toolhost binary: it
// isolates the home (Isolate), sets *bin to the binary under test
// (Toolhost), calls prepare, when set, with a temporary directory the
// binary may sit in, runs the tests and exits with their status. A setup
// failure exits 2, naming what failed.
func Main(m *testing.M, bin *string, prepare func(dir string) error) {
	code, err := setup(m, bin, prepare)
	if err != nil {
		fmt.Fprintln(os.Stderr, "test setup:", err)
		os.Exit(2)
	}
	os.Exit(code)
}

func setup(m *testing.M, bin *string, prepare func(dir string) error) (int, error) {
	home, err := Isolate()
	if err != nil {
		return 0, err
	}
	defer os.RemoveAll(home)
	dir, err := os.MkdirTemp("", "toolhost-bin")
	if err != nil {
		return 0, err
	}
	defer os.RemoveAll(dir)
	if *bin, err = Toolhost(dir); err != nil {
		return 0, err
	}
	if prepare != nil {
		if err := prepare(dir); err != nil {
			return 0, err
		}
	}
	return m.Run(), nil
}
