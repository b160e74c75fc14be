// Package e2e drives the toolhost binary with its built plugins, as a user
// would: real processes, real files, real exit codes.
package e2e

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"testing"

	"github.com/toolhost/toolhost/internal/testplugin"
)

// binary and plugins are set by TestMain: the ones `make build` produced
// (TOOLHOST_BIN), or freshly built ones when the tests run on their own.
var toolhost string

func TestMain(m *testing.M) { testplugin.Main(m, &toolhost, buildPlugins) }

// buildPlugins builds the built-in plugins beside a binary built for the
// tests; one from `make build` (TOOLHOST_BIN) has its own.
func buildPlugins(dir string) error {
	if os.Getenv("TOOLHOST_BIN") != "" {
		return nil
	}
	_, file, _, _ := runtime.Caller(0)
	root := filepath.Join(filepath.Dir(file), "..", "..", "..", "..")
	plugins, _ := filepath.Glob(filepath.Join(root, "plugins", "*"))
	for _, p := range plugins {
		out := filepath.Join(dir, "plugins", filepath.Base(p)+".wasm")
		wasm := []string{"GOOS=wasip1", "GOARCH=wasm"}
		if err := run(root, wasm, "go", "build", "-buildmode=c-shared", "-o", out, "./plugins/"+filepath.Base(p)); err != nil {
			return err
		}
		if err := run(root, nil, toolhost, "plugin", "pack", out); err != nil {
			return err
		}
	}
	return nil
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
