package extism_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/toolhost/toolhost/abi"
	"github.com/toolhost/toolhost/host"
	"github.com/toolhost/toolhost/host/internal/engine"
	"github.com/toolhost/toolhost/host/internal/inside"
	"github.com/toolhost/toolhost/host/internal/journal"
	"github.com/toolhost/toolhost/host/internal/tests/extism"
	"github.com/toolhost/toolhost/internal/testplugin"
)

// FR-REG-01, FR-EXE-01: a hyper-mcp plugin's tools are
// registered like native ones, with manifests toolhost derives (its MCP
// annotations claiming side effects are ignored: without a host to reach
// it is read-only, low risk); a call reaches call_tool with its arguments
// and the config value toolhost's configuration gives it; progress and
// log notifications become the call's stderr events; the journal records
// the call.
func TestHyperMCPToolsServed(t *testing.T) {
	cfg := defaultConfig(t)
	grant(cfg, "hypertools", nil, map[string]string{"greeting": "Hello"})
	h := openHost(t, cfg, t.TempDir(), guest{extism.HyperTools, "hypertools.wasm"})

	var names []string
	for _, m := range h.Installed() {
		names = append(names, m.Name)
		if m.SideEffecting || m.RequiresApproval || m.RiskLevel != abi.RiskLow || len(m.Capabilities) > 0 || len(m.PathArgs) > 0 {
			t.Errorf("tool %s: manifest %+v, want read-only, low risk, no capabilities or path args", m.Name, m)
		}
	}
	if strings.Join(names, ",") != "progress,upper" {
		t.Fatalf("tools %v, want progress and upper", names)
	}

	if r := run(t, h, "u1", "upper", `{"text": "abc"}`, nil); !r.OK || r.Content != "Hello ABC" {
		t.Fatalf("upper: %+v %s, want Hello ABC", r, errorOf(r))
	}
	if r := run(t, h, "u2", "upper", `{"text": 7}`, nil); r.OK || r.Error.Kind != abi.KindBadArgs {
		t.Errorf("upper with a number: %+v, want BadArgs from the plugin's schema", r)
	}

	ev := &events{}
	r := run(t, h, "p1", "progress", `{"steps": 3}`, ev)
	if !r.OK || r.Content != "counted to 3" {
		t.Fatalf("progress: %+v %s", r, errorOf(r))
	}
	stderr := ev.chunks(engine.EventStderrChunk)
	for _, want := range []string{"progress 1/3: step 1\n", "progress 3/3: step 3\n", "[info hypertools] counted\n"} {
		if !strings.Contains(stderr, want) {
			t.Errorf("stderr events %q lack %q", stderr, want)
		}
	}

	b, err := h.Inside(inside.Key{}).Journal.Batch(context.Background(), "batch_p1")
	if err != nil {
		t.Fatal(err)
	}
	if b.State != journal.StateDone || len(b.Calls) != 1 || b.Calls[0].Tool != "progress" || b.Calls[0].Result == nil || !b.Calls[0].Result.OK {
		t.Fatalf("journaled batch %+v, want one OK progress call", b)
	}
}

// An mcp.run servlet (describe / call) is served too;
// a non-text block is described in one line rather than passed as base64.
func TestServletServed(t *testing.T) {
	h := openHost(t, nil, "", guest{extism.Servlet, "servlet.wasm"})
	r := run(t, h, "s1", "servlet_echo", `{"text": "hi"}`, nil)
	if !r.OK || r.Content != "servlet_echo: hi\n[image image/png, 8 bytes]" {
		t.Fatalf("servlet_echo: %+v %s", r, errorOf(r))
	}
}

// A plugin alone in a folder (DIR/<name>/plugin.wasm,
// with a file beside it) goes by the folder's name in the configuration,
// and loads beside native plugins and other Extism ones.
func TestPluginInFolder(t *testing.T) {
	cfg := defaultConfig(t)
	grant(cfg, "hyper", nil, map[string]string{"greeting": "Folder"})
	h := openHost(t, cfg, "", guest{extism.HyperTools, "hyper/plugin.wasm"}, guest{extism.Servlet, "servlet.wasm"})
	if r := run(t, h, "f1", "upper", `{"text": "x"}`, nil); !r.OK || r.Content != "Folder X" {
		t.Fatalf("upper: %+v %s, want the folder's grant", r, errorOf(r))
	}
	if got := len(h.Installed()); got != 3 {
		t.Fatalf("%d tools installed, want 3", got)
	}
}

// Load-time refusals name the plugin file and what is
// wrong: host functions toolhost does not provide (every one), a tool
// name toolhost cannot serve.
func TestLoadRefusals(t *testing.T) {
	tests := []struct {
		name   string
		values map[string]string // misbehave's config
		guest  guest
		want   []string
	}{
		{"unprovided host functions", nil, guest{extism.BadImport, "badimport.wasm"},
			[]string{"badimport.wasm", "extism:host/user.create_message", "extism:host/user.list_roots", "does not provide"}},
		{"tool name", map[string]string{"extra_tool": "Bad-Name"}, guest{extism.Misbehave, "misbehave.wasm"},
			[]string{"misbehave.wasm", `"Bad-Name"`, "^[a-z][a-z0-9_]{0,63}$"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := defaultConfig(t)
			grant(cfg, "misbehave", nil, tt.values)
			_, err := tryOpen(t, cfg, "", tt.guest)
			if err == nil {
				t.Fatal("host.Open succeeded")
			}
			for _, w := range tt.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q lacks %q", err, w)
				}
			}
		})
	}
}

// FR-APR-01: a plugin granted a host is side-effecting,
// medium risk and asks first, whatever its annotations say; denied, it
// does not run.
func TestNetworkGrantRequiresApproval(t *testing.T) {
	cfg := defaultConfig(t)
	grant(cfg, "netfetch", []string{"example.invalid"}, nil)
	h := openHost(t, cfg, "", guest{extism.NetFetch, "netfetch.wasm"})
	m := h.Installed()[0]
	if !m.SideEffecting || !m.RequiresApproval || m.RiskLevel != abi.RiskMedium || !m.Nondeterministic {
		t.Fatalf("manifest %+v, want side-effecting, approval, medium risk, nondeterministic", m)
	}
	var asked []engine.Confirmation
	_, results := h.Process(context.Background(), engine.Batch{ID: "b", Calls: []engine.Call{
		{ID: "c1", Name: "fetch", Arguments: json.RawMessage(`{"url": "http://example.invalid/"}`)},
	}}, hostOptions(func(cs []engine.Confirmation) engine.Decision { asked = cs; return engine.DenyAll("the test") }))
	if len(asked) != 1 || !strings.Contains(asked[0].Summary, "fetch") || !strings.Contains(asked[0].Summary, "example.invalid") {
		t.Errorf("confirmations %+v, want one naming the tool and the host", asked)
	}
	if results[0].OK {
		t.Fatal("a denied call ran")
	}
}

// A native plugin in a folder of its own loads as it
// does beside the others (without being compiled); a folder holding two
// modules is refused, naming it.
func TestNativePluginInFolder(t *testing.T) {
	dir := t.TempDir()
	data, err := os.ReadFile(filepath.Join(testplugin.BuiltIns(t), "read_file.wasm"))
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{"rf/read_file.wasm", "two/a.wasm", "two/b.wasm"} {
		os.MkdirAll(filepath.Join(dir, filepath.Dir(f)), 0o755)
		if err := os.WriteFile(filepath.Join(dir, f), data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	_, err = host.Open(context.Background(), host.Options{PluginDir: dir, Config: defaultConfig(t)})
	if err == nil || !strings.Contains(err.Error(), filepath.Join(dir, "two")) || !strings.Contains(err.Error(), "exactly one .wasm") {
		t.Fatalf("error %v, want the folder with two modules named", err)
	}
	os.RemoveAll(filepath.Join(dir, "two"))
	h, err := host.Open(context.Background(), host.Options{PluginDir: dir, Config: defaultConfig(t)})
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close(context.Background())
	if ms := h.Installed(); len(ms) != 1 || ms[0].Name != "read_file" {
		t.Fatalf("installed %+v, want read_file", ms)
	}
}
