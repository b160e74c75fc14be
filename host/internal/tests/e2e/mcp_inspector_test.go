package e2e

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

// The MCP Inspector's CLI mode drives `toolhost serve --stdio` ("Done when": the Inspector's CLI lists and calls tools over stdio).
//
// host/internal/tests/mcpclient pins @modelcontextprotocol/inspector-cli, the package
// the Inspector publishes its CLI mode as: the Inspector's own package
// runs the same build (its cli/build is byte for byte this one) but adds
// its web interface and a TypeScript toolchain, some 130 MB the test
// does not need. The test runs the CLI's entry point with node, never
// npx, so nothing is fetched while it runs.

// inspectorCLI is the Inspector CLI's entry point; it skips (testenv.Need)
// without Node.js or the package, and fails at another version than pinned.
func inspectorCLI(t *testing.T) string {
	t.Helper()
	requireTSClient(t) // node, and the SDK the CLI shares
	dir := tsClientDir()
	var pinned, installed struct {
		Version      string            `json:"version"`
		Dependencies map[string]string `json:"dependencies"`
	}
	readJSON(t, filepath.Join(dir, "package.json"), &pinned)
	pkg := filepath.Join(dir, "node_modules", "@modelcontextprotocol", "inspector-cli")
	needNode(t, dir, "@modelcontextprotocol/inspector-cli")
	b, err := os.ReadFile(filepath.Join(pkg, "package.json"))
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, &installed); err != nil {
		t.Fatalf("%s: %v", pkg, err)
	}
	if want := pinned.Dependencies["@modelcontextprotocol/inspector-cli"]; installed.Version != want {
		t.Fatalf("host/internal/tests/mcpclient has @modelcontextprotocol/inspector-cli %s installed, package.json pins %s: run `make test`, which reinstalls it (npm ci --prefix host/internal/tests/mcpclient)", installed.Version, want)
	}
	return filepath.Join(pkg, "build", "index.js")
}

// inspectorTimeout bounds one run of the CLI, server start included.
const inspectorTimeout = time.Minute

// runInspector runs the Inspector CLI with args against toolhost serve
// --stdio on w and decodes the JSON it prints into v. The CLI spawns the
// server itself, as an agent does.
//
// Where the network can be taken away (an unprivileged user and network
// namespace, `unshare -rn`), the CLI runs without one, which proves it
// reaches nothing beyond the server it spawns.
func runInspector(t *testing.T, w *workspace, v any, args ...string) {
	t.Helper()
	script := inspectorCLI(t)
	// The CLI takes the server's program before -- and its arguments
	// after, so none of them is read as the CLI's own option.
	server := w.argv("serve", "--stdio", "--root", w.dir)
	argv := append([]string{"node", script, server[0], "--method"}, args...)
	argv = append(append(argv, "--"), server[1:]...)
	if offline() {
		argv = append([]string{"unshare", "-rn"}, argv...)
	}
	cmd := w.command(argv...)
	// The CLI names itself from ../package.json, a path it checks from
	// its working directory but imports from its own: run it from its
	// build directory so both are the package's.
	cmd.Dir = filepath.Dir(script)
	var stdout strings.Builder
	stderr := &lockedBuffer{}
	cmd.Stdout, cmd.Stderr = &stdout, stderr
	if err := cmd.Start(); err != nil {
		t.Fatalf("starting the Inspector CLI: %v", err)
	}
	timer := time.AfterFunc(inspectorTimeout, func() { cmd.Process.Kill() })
	err := cmd.Wait()
	timer.Stop()
	if err != nil {
		t.Fatalf("Inspector CLI %v: %v\nstdout: %s\nstderr: %s", args, err, stdout.String(), stderr)
	}
	if err := json.Unmarshal([]byte(stdout.String()), v); err != nil {
		t.Fatalf("Inspector CLI %v: stdout is not JSON (%v)\nstdout: %s\nstderr: %s", args, err, stdout.String(), stderr)
	}
}

// offline reports whether commands can be run without a network.
func offline() bool {
	return exec.Command("unshare", "-rn", "true").Run() == nil
}

// TestMCPInspectorCLI: the Inspector's CLI mode lists toolhost's tools
// with their schemas and hints, and calls read_file, getting the file's
// text.
func TestMCPInspectorCLI(t *testing.T) {
	w := newWorkspace(t)
	w.file(t, "notes.txt", "first line\nsecond line\n")
	if !offline() {
		t.Log("unshare -rn is not available here: the Inspector CLI runs with the network")
	}

	var list struct {
		Tools []struct {
			Name        string         `json:"name"`
			InputSchema map[string]any `json:"inputSchema"`
			Annotations map[string]any `json:"annotations"`
		} `json:"tools"`
	}
	runInspector(t, w, &list, "tools/list")
	var names []string
	for _, tool := range list.Tools {
		names = append(names, tool.Name)
		if tool.InputSchema["type"] != "object" {
			t.Errorf("%s: inputSchema %v, want an object schema", tool.Name, tool.InputSchema)
		}
		if tool.Name == "read_file" && tool.Annotations["readOnlyHint"] != true {
			t.Errorf("read_file: annotations %v, want readOnlyHint", tool.Annotations)
		}
	}
	for _, want := range []string{"read_file", "list_directory", "write_file", "apply_patch"} {
		if !slices.Contains(names, want) {
			t.Errorf("tools/list lacks %s; it lists %v", want, names)
		}
	}

	var call struct {
		Content []struct {
			Type string `json:"type"`
			Text string `json:"text"`
		} `json:"content"`
		IsError           bool `json:"isError"`
		StructuredContent any  `json:"structuredContent"`
	}
	runInspector(t, w, &call, "tools/call", "--tool-name", "read_file", "--tool-arg", "path=notes.txt")
	if call.IsError || len(call.Content) != 1 || call.Content[0].Type != "text" || call.Content[0].Text != "first line\nsecond line\n" || call.StructuredContent != nil {
		t.Errorf("tools/call read_file notes.txt: %+v; want the file's text as one text content", call)
	}

	runInspector(t, w, &call, "tools/call", "--tool-name", "read_file", "--tool-arg", "path=../outside")
	if !call.IsError || len(call.Content) != 1 || !strings.HasPrefix(call.Content[0].Text, "SandboxViolation: ") {
		t.Errorf("tools/call read_file ../outside: %+v; want an isError SandboxViolation", call)
	}
}
