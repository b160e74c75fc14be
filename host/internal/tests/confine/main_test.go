//go:build linux

// Package confine is the escape suite of run_command's confinement: each case runs one
// real run_command through the real toolhost binary (engine, approval,
// configuration, launcher) as a hostile model would, and checks from
// outside the command that what it tried did not happen: a file on the
// host absent or unchanged, a secret absent from everything toolhost
// printed, a listener the test opened that saw no connection, no process
// carrying the case's marker alive once the call has ended. Positive
// controls check that ordinary work (go test, git, python3, make) still
// succeeds under the default policy.
//
// Nothing here is skipped for a missing kernel feature: confinement fails
// closed, so a machine without it fails the suite with the doctor's
// message.
package confine

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/toolhost/toolhost/internal/testplugin"
)

// toolhost is the binary under test: $TOOLHOST_BIN (what `make build`
// produced), or one TestMain builds when the tests run on their own.
var toolhost string

func TestMain(m *testing.M) { testplugin.Main(m, &toolhost, buildRunCommand) }

// buildRunCommand builds the run_command plugin, the only tool these
// tests call, beside a binary built for the tests and packs it as `make
// build` does; a binary from `make build` has its plugins beside it.
func buildRunCommand(dir string) error {
	if os.Getenv("TOOLHOST_BIN") != "" {
		return nil
	}
	root, err := filepath.Abs(filepath.Join("..", "..", "..", ".."))
	if err != nil {
		return err
	}
	out := filepath.Join(dir, "plugins", "run_command.wasm")
	build := exec.Command("go", "build", "-buildmode=c-shared", "-o", out, "./plugins/run_command")
	build.Dir = root
	build.Env = append(os.Environ(), "GOOS=wasip1", "GOARCH=wasm")
	if b, err := build.CombinedOutput(); err != nil {
		return fmt.Errorf("build run_command: %v\n%s", err, b)
	}
	if b, err := exec.Command(toolhost, "plugin", "pack", out).CombinedOutput(); err != nil {
		return fmt.Errorf("toolhost plugin pack %s: %v\n%s", out, err, b)
	}
	return nil
}
