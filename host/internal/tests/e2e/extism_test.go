package e2e

import (
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"

	"github.com/toolhost/toolhost/host/internal/tests/extism"
)

// extismDir is a plugin directory holding Extism plugins: hypertools
// alone, misbehave alone, and netfetch in a folder of its own.
func extismDir(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	extism.Install(t, dir, extism.HyperTools, "hypertools.wasm")
	extism.Install(t, dir, extism.Misbehave, "misbehave.wasm")
	extism.Install(t, dir, extism.NetFetch, filepath.Join("netfetch", "plugin.wasm"))
	return dir
}

// Through the real CLI, an Extism
// plugin's tool runs with the config value of its [extism.<name>] table;
// a fetch from a host that is not allow-listed is a SandboxViolation
// naming the host and the key, one from an allow-listed host works; what
// a plugin prints never reaches toolhost's stdout, which holds the result
// alone, even with EXTISM_ENABLE_WASI_OUTPUT set; config show does not
// print config values.
func TestExtismPluginsThroughCLI(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "pong") }))
	defer srv.Close()
	dir := extismDir(t)
	w := newWorkspace(t).withConfig(t, `
[extism.hypertools]
config = { greeting = "Hi", API_KEY = "sk-not-to-be-shown" }

[extism.netfetch]
allowed_hosts = ["127.0.0.1"]
`).withEnv("EXTISM_ENABLE_WASI_OUTPUT=1")

	r, stderr, _ := w.call(t, "upper", `{"text": "abc"}`, "--plugins", dir)
	if !r.OK || r.Content != "Hi ABC" {
		t.Fatalf("upper: %+v\nstderr: %s", r, stderr)
	}

	r, stderr, _ = w.call(t, "fetch", `{"url": "http://localhost:9/x"}`, "--plugins", dir, "--allow", "fetch")
	if r.OK || r.Error.Kind != "SandboxViolation" || !strings.Contains(r.Error.Message, `"localhost"`) ||
		!strings.Contains(r.Error.Message, "extism.netfetch.allowed_hosts") {
		t.Errorf("fetch from a host not allow-listed: %+v\nstderr: %s", r, stderr)
	}
	r, stderr, _ = w.call(t, "fetch", `{"url": "`+srv.URL+`"}`, "--plugins", dir, "--allow", "fetch")
	if !r.OK || r.Content != "200 pong" {
		t.Errorf("fetch from the allow-listed host: %+v\nstderr: %s", r, stderr)
	}

	// decodeResult fails unless stdout is exactly one JSON result.
	r, stderr, _ = w.call(t, "probe", `{}`, "--plugins", dir)
	if !r.OK || strings.Contains(stderr, "GUEST-") {
		t.Errorf("probe: %+v\nstderr: %s", r, stderr)
	}

	out, stderr, code := w.run(t, "config", "show")
	if code != 0 || strings.Contains(out, "sk-not-to-be-shown") || !strings.Contains(out, "extism.hypertools.config.API_KEY") ||
		!strings.Contains(out, `extism.netfetch.allowed_hosts = ["127.0.0.1"]`) {
		t.Errorf("config show (exit %d):\n%s\nstderr: %s", code, out, stderr)
	}
}

// A module importing a host function toolhost does not
// provide stops the CLI before anything runs, naming the file and each
// function.
func TestExtismRefusedImportThroughCLI(t *testing.T) {
	dir := t.TempDir()
	extism.Install(t, dir, extism.BadImport, "badimport.wasm")
	_, stderr, code := newWorkspace(t).run(t, "call", "sample", "--args", "{}", "--plugins", dir)
	if code == 0 || !strings.Contains(stderr, "badimport.wasm") || !strings.Contains(stderr, "extism:host/user.create_message") ||
		!strings.Contains(stderr, "extism:host/user.list_roots") {
		t.Fatalf("exit %d, stderr %s", code, stderr)
	}
}
