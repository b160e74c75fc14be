package bench

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

// The work every server does (make bench): read a 200-line file,
// list a 100-entry directory.
const (
	fileLines = 200
	dirSize   = 100
	readPath  = "file.txt"
	listPath  = "list"
)

// fixture writes the files every server works on into a new root.
func fixture(t testing.TB) (root, content string) {
	t.Helper()
	root = t.TempDir()
	var b strings.Builder
	for i := 1; i <= fileLines; i++ {
		fmt.Fprintf(&b, "line %03d: the quick brown fox jumps over the lazy dog, and back\n", i)
	}
	content = b.String()
	if err := os.WriteFile(filepath.Join(root, readPath), []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(filepath.Join(root, listPath), 0o755); err != nil {
		t.Fatal(err)
	}
	for i := range dirSize {
		if err := os.WriteFile(filepath.Join(root, listPath, fmt.Sprintf("f%03d.txt", i)), []byte("x\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return root, content
}

// workload is one kind of call, as each server names it, with the check
// that its answer is right.
type workload struct {
	name  string
	tool  string
	args  map[string]any
	check func(r *toolResult) error
}

// server is one MCP server under test.
type server struct {
	name string
	argv []string
	env  []string
	read workload
	list workload
	// available says why the server cannot run here, nil when it can
	// (a nil func: always). need names the suite that requires it
	// (testenv.Required); an optional server is left out of the
	// benchmark, with the reason printed, where that suite is not
	// required, while the others' absence fails it.
	available func() error
	need      string
	optional  bool
}

func (s server) workloads() []workload { return []workload{s.read, s.list} }

// servers are the ones measured, toolhost first: root is the directory
// they serve (and their working directory) and content the file they
// read.
func servers(root, content string) []server {
	env := serverEnv()
	readArgs := map[string]any{"path": readPath}
	listArgs := map[string]any{"path": listPath}
	sameText := func(r *toolResult) error {
		if got := r.text(); got != content {
			return fmt.Errorf("read %d bytes that differ from the file's %d: %.120q", len(got), len(content), got)
		}
		return nil
	}
	node := filepath.Join(built.repo, "host", "internal", "tests", "benchnode", "node_modules", "@modelcontextprotocol", "server-filesystem", "dist", "index.js")
	return []server{
		{
			name: "toolhost",
			argv: []string{built.toolhost, "serve", "--stdio", "--root", root},
			env:  env,
			read: workload{"read", "read_file", readArgs, sameText},
			list: workload{"list", "list_directory", listArgs, compactEntries},
		},
		{
			name: "node",
			argv: []string{"node", node, root},
			env:  env,
			need: "NODE",
			read: workload{"read", "read_text_file", readArgs, sameText},
			list: workload{"list", "list_directory_with_sizes", listArgs, fileLinesCount},
			available: func() error {
				if out, err := exec.Command("node", "--version").CombinedOutput(); err != nil {
					return fmt.Errorf("node does not run (%v %s): install Node.js 20 or later and npm (apt-get install nodejs npm, as root), then npm ci --prefix host/internal/tests/benchnode (make test and make bench run it)", err, bytes.TrimSpace(out))
				}
				if _, err := os.Stat(node); err != nil {
					return fmt.Errorf("the reference Node server is not installed (%w): run npm ci --prefix host/internal/tests/benchnode, as make test and make bench do", err)
				}
				return nil
			},
		},
		{
			// Relative paths are resolved against its working directory,
			// the root.
			name:      "peer",
			argv:      []string{built.peer, root},
			env:       env,
			read:      workload{"read", "read_file", readArgs, sameText},
			list:      workload{"list", "list_directory", listArgs, fileLinesCount},
			available: func() error { return built.peerErr },
			need:      "PEER",
			optional:  true,
		},
		{
			name: "native",
			argv: []string{built.native, root},
			env:  env,
			read: workload{"read", "read_file", readArgs, sameText},
			list: workload{"list", "list_directory", listArgs, jsonEntries},
		},
		{
			name: "floor",
			argv: []string{built.floor, root},
			env:  env,
			read: workload{"read", "read_file", readArgs, sameText},
			list: workload{"list", "list_directory", listArgs, jsonEntries},
		},
	}
}

// serverEnv is what every server's environment adds: no developer's
// configuration, trust list or state changes what toolhost offers, and
// the compile cache is the tests' warm one.
func serverEnv() []string {
	return []string{"HOME=" + built.home, "XDG_CONFIG_HOME=" + filepath.Join(built.home, ".config"),
		"XDG_STATE_HOME=" + filepath.Join(built.home, ".local", "state"), "TOOLHOST_CACHE_DIR=" + built.cache,
		"TOOLHOST_CONFIG=", "TOOLHOST_PLUGINS="}
}

// compactEntries checks toolhost's listing: 100 files in the text, one
// "name  size" line each, and no structured content, which it gives
// only when asked.
func compactEntries(r *toolResult) error {
	if n := strings.Count(r.text(), ".txt  2\n"); n != dirSize {
		return fmt.Errorf("listing has %d files, want %d: %.200s", n, dirSize, r.text())
	}
	if len(r.StructuredContent) > 0 {
		return fmt.Errorf("structured content nobody asked for: %.200s", r.StructuredContent)
	}
	return nil
}

// jsonEntries checks a toolhost-shaped listing (as toolhost and the
// native server give it): 100 files in the text, and the same listing as
// structured content.
func jsonEntries(r *toolResult) error {
	if n := strings.Count(r.text(), `"type":"file"`); n != dirSize {
		return fmt.Errorf("listing has %d files, want %d: %.200s", n, dirSize, r.text())
	}
	if n := strings.Count(string(r.StructuredContent), `"type":"file"`); n != dirSize {
		return fmt.Errorf("structured listing has %d files, want %d", n, dirSize)
	}
	return nil
}

// fileLinesCount checks the Node server's and the Go peer's listing: one
// "[FILE] name ..." line per file.
func fileLinesCount(r *toolResult) error {
	if n := strings.Count(r.text(), "[FILE] f"); n != dirSize {
		return fmt.Errorf("listing has %d files, want %d: %.200s", n, dirSize, r.text())
	}
	return nil
}

// running is a server after its handshake.
type running struct {
	*client
	srv     server
	startup time.Duration // from spawn to the tools/list answer
	listed  time.Time     // when the tools/list answer came
	// sizes are the first answer's of each workload, by name: the same
	// call's answer has the same size every time.
	sizes map[string]answerSize
}

// answerSize is a tools/call answer's size in bytes: the whole JSON-RPC
// line (less its newline), what a client reads, and in it the text
// content (decoded) and the structured content (as JSON), what a model
// may be given.
type answerSize struct {
	line, text, structured int
}

// profileEnv names a directory where, when set, toolhost and the native
// server write a CPU profile of each run (toolhost-N.prof, native-N.prof),
// to see where a server's time goes: go tool pprof BINARY FILE.
const profileEnv = "MCPBENCH_CPUPROFILE_DIR"

// profiled is s writing a CPU profile into $MCPBENCH_CPUPROFILE_DIR, if
// set and s can.
func profiled(s server) server {
	dir := os.Getenv(profileEnv)
	if dir == "" {
		return s
	}
	name := filepath.Join(dir, fmt.Sprintf("%s-%d.prof", s.name, time.Now().UnixNano()))
	switch s.name {
	case "toolhost":
		s.argv = append([]string{s.argv[0], "--cpuprofile", name}, s.argv[1:]...)
	case "native":
		s.env = append(slices.Clip(s.env), "NATIVESERVER_CPUPROFILE="+name)
	}
	return s
}

// launch spawns s and handshakes, timing spawn to the tools/list answer.
func launch(s server, root string) (*running, error) {
	s = profiled(s)
	t0 := time.Now()
	c, err := start(s.name, s.argv, s.env, root)
	if err != nil {
		return nil, err
	}
	tools, err := c.handshake()
	listed := time.Now()
	startup := listed.Sub(t0)
	if err != nil {
		return nil, errors.Join(err, c.close())
	}
	for _, w := range s.workloads() {
		if !slices.Contains(tools, w.tool) {
			return nil, errors.Join(fmt.Errorf("%s: tools/list has no %s (it has %v)", s.name, w.tool, tools), c.close())
		}
	}
	return &running{client: c, srv: s, startup: startup, listed: listed, sizes: map[string]answerSize{}}, nil
}

// do runs one call of w and checks its answer.
func (r *running) do(w workload) error {
	res, err := r.callTool(w.tool, w.args)
	if err != nil {
		return err
	}
	if err := w.check(res); err != nil {
		return fmt.Errorf("%s: %s: %w", r.srv.name, w.tool, err)
	}
	if _, ok := r.sizes[w.name]; !ok {
		r.sizes[w.name] = answerSize{line: r.answerLen, text: len(res.text()), structured: len(res.StructuredContent)}
	}
	return nil
}
