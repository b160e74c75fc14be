package e2e

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/toolhost/toolhost/internal/testenv"
	"github.com/toolhost/toolhost/internal/testplugin"
)

// versionOf runs bin --version and returns what follows "toolhost ".
func versionOf(t *testing.T, bin string) string {
	t.Helper()
	out, err := exec.Command(bin, "--version").Output()
	if err != nil {
		t.Fatalf("%s --version: %v", bin, err)
	}
	v, ok := strings.CutPrefix(strings.TrimSuffix(string(out), "\n"), "toolhost ")
	if !ok || v == "" || strings.Contains(v, "\n") {
		t.Fatalf("%s --version printed %q, want one line \"toolhost VERSION\"", bin, out)
	}
	return v
}

// TestVersion: --version prints the build's version, and MCP clients get
// the same string as serverInfo.version over stdio and over HTTP. A
// binary built without version control information (as the tests'
// binary is, by default here) says so; one built from a checkout with it
// names its commit.
func TestVersion(t *testing.T) {
	v := versionOf(t, toolhost)
	if v == "dev" || !(strings.Contains(v, ", commit ") || strings.Contains(v, "without version control information")) {
		t.Errorf("--version says %q: want the commit, or that the build recorded none", v)
	}
	w := newWorkspace(t)
	for name, connect := range map[string]mcpConnect{"stdio": serveMCP, "http": serveMCPHTTP} {
		s := connect(t, w, nil)
		if got := s.session.InitializeResult().ServerInfo.Version; got != v {
			t.Errorf("serverInfo.version over %s = %q, want %q (what --version prints)", name, got, v)
		}
	}

	// Built from a checkout with version control stamping on (the
	// environment may turn it off through GOFLAGS), the version names the
	// commit checked out.
	root := testplugin.ModuleRoot(t)
	testenv.LookPath(t, "git", "apt-get install git (as root)")
	head, err := exec.Command("git", "-C", root, "rev-parse", "HEAD").Output()
	if err != nil {
		t.Skipf("no git checkout to build from (%v): the commit cannot be checked", err)
	}
	bin := filepath.Join(t.TempDir(), "toolhost")
	build := exec.Command("go", "build", "-buildvcs=true", "-o", bin, "./host/cmd/toolhost")
	build.Dir = root
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build -buildvcs=true: %v\n%s", err, out)
	}
	if v := versionOf(t, bin); !strings.Contains(v, ", commit "+strings.TrimSpace(string(head))) {
		t.Errorf("a binary built with -buildvcs=true says %q, want the commit %s", v, head)
	}
}

// TestServeAllowCoversBatchAPI: the tools serve --allow names are
// approved on the batch API as over MCP: an overwrite of a file read
// before runs without a decision, and in a batch that still needs one
// (a write only a person may approve) the allowed call runs whatever the
// decision says about the others.
func TestServeAllowCoversBatchAPI(t *testing.T) {
	w := newWorkspace(t)
	w.file(t, "a.txt", "old a\n")
	w.file(t, "b.txt", "old b\n")
	for _, d := range []string{"vendor/objects", "vendor/refs"} {
		if err := os.MkdirAll(filepath.Join(w.dir, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	s := serveHTTP(t, w, "--allow", "write_file")
	call := func(id, tool string, args map[string]any) map[string]any {
		return map[string]any{"id": id, "name": tool, "arguments": args}
	}
	post := func(calls ...map[string]any) apiBatch {
		t.Helper()
		return s.batch(t, "POST", "/v1/batches", map[string]any{"conversation_id": "agent-1", "calls": calls}, 201)
	}
	read := post(call("r1", "read_file", map[string]any{"path": "a.txt"}), call("r2", "read_file", map[string]any{"path": "b.txt"}))
	s.waitState(t, read.BatchID, "done")

	b := post(call("w1", "write_file", map[string]any{"path": "a.txt", "content": "new a\n"}))
	if b.State == "awaiting_approval" || b.Calls[0].Disposition != "confirm" {
		t.Fatalf("an overwrite --allow covers: %+v; want it planned for confirmation and run without a decision", b)
	}
	done := s.waitState(t, b.BatchID, "done")
	if len(done.Results) != 1 || !done.Results[0].OK {
		t.Fatalf("results: %+v", done.Results)
	}
	if got, _ := os.ReadFile(filepath.Join(w.dir, "a.txt")); string(got) != "new a\n" {
		t.Errorf("a.txt holds %q after the allowed write", got)
	}
	var view struct {
		DecidedBy string `json:"decided_by"`
	}
	_, raw := s.api(t, "GET", "/v1/batches/"+b.BatchID, nil)
	if json.Unmarshal(raw, &view); view.DecidedBy != "--allow" {
		t.Errorf("decided_by = %q, want --allow: %s", view.DecidedBy, raw)
	}

	// vendor/HEAD would make vendor/ a git repository: --allow never
	// covers it, so the batch waits; denying it still runs the write
	// --allow covers.
	mixed := post(call("w2", "write_file", map[string]any{"path": "b.txt", "content": "new b\n"}),
		call("h1", "write_file", map[string]any{"path": "vendor/HEAD", "content": "ref: refs/heads/main\n"}))
	if mixed.State != "awaiting_approval" {
		t.Fatalf("a batch with a write only a person may approve: %+v, want awaiting_approval", mixed)
	}
	s.batch(t, "POST", "/v1/batches/"+mixed.BatchID+"/decision", map[string]any{"decision": "deny_all"}, 200)
	done = s.waitState(t, mixed.BatchID, "done")
	if len(done.Results) != 2 || !done.Results[0].OK || done.Results[1].OK || done.Results[1].Error.Kind != "DeniedByUser" {
		t.Errorf("results after deny_all: %+v; want w2 run (--allow) and h1 denied", done.Results)
	}
	if got, _ := os.ReadFile(filepath.Join(w.dir, "b.txt")); string(got) != "new b\n" {
		t.Errorf("b.txt holds %q", got)
	}
	if _, err := os.Lstat(filepath.Join(w.dir, "vendor", "HEAD")); err == nil {
		t.Error("vendor/HEAD was written though its call was denied")
	}
}

// TestLogLevelChecked: --log-level takes the levels its help names; any
// other value is a usage error, not a silent fall back to warn.
func TestLogLevelChecked(t *testing.T) {
	w := newWorkspace(t)
	tests := []struct {
		level    string
		wantCode int
	}{
		{"debug", 0},
		{"error", 0},
		{"loud", 2},
		{"", 2},
	}
	for _, tt := range tests {
		_, stderr, code := w.run(t, "--log-level", tt.level, "tools")
		if code != tt.wantCode {
			t.Errorf("--log-level %q: exit %d, want %d\n%s", tt.level, code, tt.wantCode, stderr)
		}
		if tt.wantCode == 2 && !strings.Contains(stderr, "want debug, info, warn or error") {
			t.Errorf("--log-level %q: stderr %q does not name the levels", tt.level, stderr)
		}
	}
}
