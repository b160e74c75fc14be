// Package bench measures toolhost serve --stdio beside two other MCP
// servers doing the same work over the same pipes (make bench):
// the reference Node filesystem server and a native Go server on the
// official SDK (nativeserver). A minimal JSON-RPC client, one call in
// flight like an agent, drives each; rounds interleave the servers so a
// loaded machine slows all three alike, and the figures are medians.
//
// TestMCPStdioAnswers runs with make test and checks every server's
// answers; BenchmarkMCPStdio runs with make bench, and so does
// BenchmarkSearchCorpus: search and glob on a copy of Go's src/ beside
// ripgrep, grep and the peers' search tools.
package bench

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// bins are the executables TestMain found or built.
type bins struct {
	repo     string // the repository root
	toolhost string // its plugins sit in plugins/ beside it
	native   string
	home     string // HOME and XDG directories of every server
	cache    string // toolhost's compile cache
}

// built is set once by TestMain, before any test or benchmark runs, and
// only read after.
var built bins

func TestMain(m *testing.M) {
	code, err := setup(m)
	if err != nil {
		fmt.Fprintln(os.Stderr, "bench setup:", err)
		os.Exit(2)
	}
	os.Exit(code)
}

func setup(m *testing.M) (int, error) {
	repo, err := filepath.Abs(filepath.Join("..", "..", "..", ".."))
	if err != nil {
		return 0, err
	}
	dir, err := os.MkdirTemp("", "toolhost-mcpbench")
	if err != nil {
		return 0, err
	}
	defer os.RemoveAll(dir)
	built = bins{repo: repo, native: filepath.Join(dir, "nativeserver"), home: filepath.Join(dir, "home"), cache: os.Getenv("TOOLHOST_CACHE_DIR")}
	if built.cache == "" {
		// The compile cache the other tests share, so a run on its own
		// measures warm caches too.
		built.cache = filepath.Join(os.TempDir(), "toolhost-test-cache")
	}
	if err := gobuild(repo, nil, built.native, "./host/internal/tests/bench/nativeserver"); err != nil {
		return 0, err
	}
	built.toolhost = os.Getenv("TOOLHOST_BIN")
	if built.toolhost == "" {
		if built.toolhost, err = buildToolhost(repo, dir); err != nil {
			return 0, err
		}
	}
	return m.Run(), nil
}

// buildToolhost builds the binary and the packed plugins beside it, as
// make build does, for a run without TOOLHOST_BIN.
func buildToolhost(repo, dir string) (string, error) {
	bin := filepath.Join(dir, "toolhost")
	if err := gobuild(repo, nil, bin, "./host/cmd/toolhost"); err != nil {
		return "", err
	}
	plugins, err := filepath.Glob(filepath.Join(repo, "plugins", "*"))
	if err != nil {
		return "", err
	}
	for _, p := range plugins {
		out := filepath.Join(dir, "plugins", filepath.Base(p)+".wasm")
		wasm := []string{"GOOS=wasip1", "GOARCH=wasm"}
		if err := gobuild(repo, wasm, out, "-buildmode=c-shared", "./plugins/"+filepath.Base(p)); err != nil {
			return "", err
		}
		if out, err := exec.Command(bin, "plugin", "pack", out).CombinedOutput(); err != nil {
			return "", fmt.Errorf("toolhost plugin pack %s: %w\n%s", p, err, out)
		}
	}
	return bin, nil
}

// gobuild runs go build -o out args... in the repository.
func gobuild(repo string, env []string, out string, args ...string) error {
	cmd := exec.Command("go", append([]string{"build", "-o", out}, args...)...)
	cmd.Dir = repo
	cmd.Env = append(os.Environ(), env...)
	if b, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("go build %s: %w\n%s", strings.Join(args, " "), err, b)
	}
	return nil
}
