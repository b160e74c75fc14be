// Package bench measures toolhost serve --stdio beside other MCP servers
// doing the same work over the same pipes (make bench): the reference
// Node filesystem server, the Go peer (mark3labs' mcp-filesystem-server,
// on mcp-go, built from the module pinned in peer/), a native Go server on
// the official SDK (nativeserver) and a floor, JSON-RPC written by hand
// with no SDK (floorserver). A minimal JSON-RPC client, one call in flight
// like an agent, drives each; rounds interleave the servers so a loaded
// machine slows all of them alike, and the figures are medians.
//
// TestMCPStdioAnswers runs with make test and checks every server's
// answers; BenchmarkMCPStdio and BenchmarkMCPHTTP (toolhost and the
// native server over streamable HTTP, eight clients at once) run with
// make bench, and so does BenchmarkSearchCorpus: search and glob on a
// copy of Go's src/ beside ripgrep, grep and the peers' search tools.
package bench

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// bins are the executables TestMain found or built.
type bins struct {
	repo     string // the repository root
	toolhost string // its plugins sit in plugins/ beside it
	native   string
	floor    string
	peer     string // "" when it could not be built: peerErr says why
	peerErr  error
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
	built = bins{repo: repo, native: filepath.Join(dir, "nativeserver"), floor: filepath.Join(dir, "floorserver"),
		home: filepath.Join(dir, "home"), cache: os.Getenv("TOOLHOST_CACHE_DIR")}
	if built.cache == "" {
		// The compile cache the other tests share, so a run on its own
		// measures warm caches too.
		built.cache = filepath.Join(os.TempDir(), "toolhost-test-cache")
	}
	if err := gobuild(repo, nil, built.native, "./host/internal/tests/bench/nativeserver"); err != nil {
		return 0, err
	}
	if err := gobuild(repo, nil, built.floor, "./host/internal/tests/bench/floorserver"); err != nil {
		return 0, err
	}
	built.peer, built.peerErr = buildPeer(repo, dir)
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

// peerModule is the Go peer's main package, required at a fixed version
// by the module in peer/ and built from there, so the repository's own
// go.mod never depends on mcp-go.
const peerModule = "github.com/mark3labs/mcp-filesystem-server"

// buildPeer builds the Go peer, or says why it cannot (no module proxy
// and no module cache, say).
func buildPeer(repo, dir string) (string, error) {
	bin := filepath.Join(dir, "mcp-filesystem-server")
	cmd := exec.Command("go", "build", "-C", filepath.Join(repo, "host", "internal", "tests", "bench", "peer"), "-o", bin, peerModule)
	out, err := cmd.CombinedOutput()
	if err != nil {
		return "", fmt.Errorf("the Go peer (%s, pinned in host/internal/tests/bench/peer/go.mod) does not build: %w: %s", peerModule, err, goSays(out))
	}
	return bin, nil
}

// goSays is what the go command said failed: its output less the
// modules it was downloading, with any address it names left out.
func goSays(out []byte) string {
	var says []string
	for _, l := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		if !strings.HasPrefix(l, "go: downloading ") {
			says = append(says, urlPattern.ReplaceAllString(l, "(an address)"))
		}
	}
	return strings.Join(says, "; ")
}

var urlPattern = regexp.MustCompile(`"?https?://[^\s"]*"?`)

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
