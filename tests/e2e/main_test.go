// Package e2e drives the toolhost binary with its built plugins, as a user
// would: real processes, real files, real exit codes.
package e2e

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/toolhost/toolhost/host"
)

// binary and plugins are set by TestMain: the ones `make build` produced
// (TOOLHOST_BIN), or freshly built ones when the tests run on their own.
var toolhost string

func TestMain(m *testing.M) {
	code, err := setup(m)
	if err != nil {
		fmt.Fprintln(os.Stderr, "e2e setup:", err)
		os.Exit(2)
	}
	os.Exit(code)
}

func setup(m *testing.M) (int, error) {
	home, err := isolate()
	if err != nil {
		return 0, err
	}
	defer os.RemoveAll(home)
	if bin := os.Getenv("TOOLHOST_BIN"); bin != "" {
		toolhost = bin
		return m.Run(), nil
	}
	dir, err := os.MkdirTemp("", "toolhost-e2e")
	if err != nil {
		return 0, err
	}
	defer os.RemoveAll(dir)
	_, file, _, _ := runtime.Caller(0)
	root := filepath.Join(filepath.Dir(file), "..", "..")
	toolhost = filepath.Join(dir, "toolhost")
	if err := run(root, nil, "go", "build", "-o", toolhost, "./cmd/toolhost"); err != nil {
		return 0, err
	}
	plugins, _ := filepath.Glob(filepath.Join(root, "plugins", "*"))
	for _, p := range plugins {
		out := filepath.Join(dir, "plugins", filepath.Base(p)+".wasm")
		wasm := []string{"GOOS=wasip1", "GOARCH=wasm"}
		if err := run(root, wasm, "go", "build", "-buildmode=c-shared", "-o", out, "./plugins/"+filepath.Base(p)); err != nil {
			return 0, err
		}
		if err := run(root, nil, toolhost, "plugin", "pack", out); err != nil {
			return 0, err
		}
	}
	return m.Run(), nil
}

func run(dir string, env []string, name string, args ...string) error {
	cmd := exec.Command(name, args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), env...)
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("%s %v: %v\n%s", name, args, err, out)
	}
	return nil
}

// isolate gives every toolhost the tests start a home of its own, so that
// no developer's configuration (~/.config/toolhost, $TOOLHOST_CONFIG,
// TOOLHOST_TOOLS_* variables) or trust list changes what a test sees. The
// compile cache stays where it was, so plugins are not compiled anew.
func isolate() (string, error) {
	if os.Getenv("TOOLHOST_CACHE_DIR") == "" {
		os.Setenv("TOOLHOST_CACHE_DIR", host.DefaultCacheDir())
	}
	// go builds (of the binary here, of test plugins) keep the caches of
	// the real home: a new home would download and compile everything.
	for _, name := range []string{"GOPATH", "GOMODCACHE", "GOCACHE"} {
		if os.Getenv(name) == "" {
			out, err := exec.Command("go", "env", name).Output()
			if err != nil {
				return "", fmt.Errorf("go env %s: %w", name, err)
			}
			os.Setenv(name, strings.TrimSpace(string(out)))
		}
	}
	home, err := os.MkdirTemp("", "toolhost-e2e-home")
	if err != nil {
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
