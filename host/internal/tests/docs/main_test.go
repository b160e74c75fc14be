// Package docs holds the documentation to the repository: the README's and
// docs/*.md's runnable examples run as written against the built toolhost
// binary (readme_test.go), every relative link and every repository path
// they name exists, every JSON, TOML and YAML block parses, and the
// README's layout table lists every package (layout_test.go).
package docs

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"sort"
	"testing"

	"github.com/toolhost/toolhost/internal/testplugin"
)

// toolhost is the binary under test, set by TestMain: the one `make
// build` produced (TOOLHOST_BIN), with its plugins beside it, or one built
// for these tests with freshly built plugins beside it.
var toolhost string

func TestMain(m *testing.M) { testplugin.Main(m, &toolhost, buildPlugins) }

// repoRoot is the repository root, from this file's place in it.
func repoRoot() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Join(filepath.Dir(file), "..", "..", "..", "..")
}

// buildPlugins builds the built-in plugins into plugins/ beside a binary
// built for the tests, where toolhost looks by default, so the examples
// need no --plugins; one from `make build` has its own.
func buildPlugins(dir string) error {
	if os.Getenv("TOOLHOST_BIN") != "" {
		return nil
	}
	root := repoRoot()
	plugins, _ := filepath.Glob(filepath.Join(root, "plugins", "*"))
	for _, p := range plugins {
		out := filepath.Join(dir, "plugins", filepath.Base(p)+".wasm")
		build := exec.Command("go", "build", "-buildmode=c-shared", "-o", out, "./plugins/"+filepath.Base(p))
		build.Dir = root
		build.Env = append(os.Environ(), "GOOS=wasip1", "GOARCH=wasm")
		if b, err := build.CombinedOutput(); err != nil {
			return fmt.Errorf("build %s: %v\n%s", p, err, b)
		}
		if b, err := exec.Command(toolhost, "plugin", "pack", out).CombinedOutput(); err != nil {
			return fmt.Errorf("toolhost plugin pack %s: %v\n%s", out, err, b)
		}
	}
	return nil
}

// markdownFiles are the documents these tests hold to the repository:
// the README and every file in docs/, plus the ABI's and the SDK's
// READMEs for links and paths.
func markdownFiles(t *testing.T, withPackageReadmes bool) []string {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(repoRoot(), "docs", "*.md"))
	if err != nil {
		t.Fatal(err)
	}
	out := []string{"README.md"}
	for _, f := range files {
		out = append(out, "docs/"+filepath.Base(f))
	}
	if withPackageReadmes {
		out = append(out, "abi/README.md", "sdk/README.md")
	}
	sort.Strings(out[1:])
	return out
}
