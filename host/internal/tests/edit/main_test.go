// Package edit drives the editing tools (edit_file, edit_region,
// multi_edit) through the toolhost binary over MCP, as an agent would,
// with the official Go SDK's client: each trap file edited and compared
// byte for byte with what it must become.
package edit

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"testing"

	"github.com/toolhost/toolhost/internal/testplugin"
)

// toolhost is the binary under test, set by TestMain.
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
	mains, _ := filepath.Glob(filepath.Join(root, "plugins", "*", "main.go"))
	for _, m := range mains {
		name := filepath.Base(filepath.Dir(m))
		out := filepath.Join(dir, "plugins", name+".wasm")
		build := exec.Command("go", "build", "-buildmode=c-shared", "-o", out, "./plugins/"+name)
		build.Dir = root
		build.Env = append(os.Environ(), "GOOS=wasip1", "GOARCH=wasm")
		if b, err := build.CombinedOutput(); err != nil {
			return fmt.Errorf("building %s: %v\n%s", name, err, b)
		}
		if b, err := exec.Command(toolhost, "plugin", "pack", out).CombinedOutput(); err != nil {
			return fmt.Errorf("packing %s: %v\n%s", name, err, b)
		}
	}
	return nil
}
