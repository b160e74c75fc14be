package hostile_test

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolhost/toolhost/host"
	"github.com/toolhost/toolhost/host/internal/config"
	"github.com/toolhost/toolhost/host/internal/server"
)

// A plugin's manifest text (description, version, its schema's titles
// and descriptions) reaches every client that lists tools: an MCP
// client's tools/list, GET /v1/tools, toolhost tools. A plugin that puts
// terminal controls there (clear the screen, set the clipboard with OSC
// 52, retitle the window, an 8-bit CSI) or a bidi override (text that
// displays in another order than it reads) reaches the operator's
// terminal and the model unfiltered. Manifest text is sanitized once,
// where manifests are loaded, so every surface gets the clean text, and
// the tool still works.
func TestManifestTextIsSanitized(t *testing.T) {
	sv := serveHost(t, server.Options{}, server.HTTPOptions{}, func(_ *config.Config, o *host.Options) {
		o.PluginDir = pluginDir(t, "manifesttext")
	})
	code, body := sv.do(t, http.MethodGet, "/v1/tools", "", nil)
	if code != http.StatusOK {
		t.Fatalf("GET /v1/tools: %d %s", code, body)
	}
	manifestNoControls(t, "GET /v1/tools", body)
	if !strings.Contains(body, "manifesttext") {
		t.Fatalf("GET /v1/tools does not list manifesttext: %s", body)
	}

	cs, err := sv.connect(t, "/mcp", nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	res, err := cs.ListTools(context.Background(), &mcp.ListToolsParams{})
	if err != nil {
		t.Fatal(err)
	}
	listed, _ := json.Marshal(res)
	manifestNoControls(t, "tools/list", string(listed))
	if !strings.Contains(string(listed), "Lists nothing.") {
		t.Fatalf("tools/list lost the description's text: %s", listed)
	}
	r, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "manifesttext", Arguments: map[string]any{"mode": "a"}})
	if err != nil || r.IsError {
		t.Fatalf("manifesttext no longer runs: %v %+v", err, r)
	}
}

// manifestNoControls fails when text, as it reaches a client (JSON
// decoded), holds an escape, a C1 control or a bidi override.
func manifestNoControls(t *testing.T, where, text string) {
	t.Helper()
	var v any
	if err := json.Unmarshal([]byte(text), &v); err != nil {
		t.Fatalf("%s: not JSON: %v", where, err)
	}
	var walk func(any)
	walk = func(v any) {
		switch v := v.(type) {
		case string:
			if i := strings.IndexFunc(v, func(r rune) bool {
				return r == 0x1b || r == 0x07 || (r >= 0x80 && r <= 0x9f) || (r >= 0x202a && r <= 0x202e) || (r >= 0x2066 && r <= 0x2069)
			}); i >= 0 {
				t.Errorf("%s: manifest text reaches the client with control or bidi character %U: %q", where, []rune(v[i:])[0], v)
			}
		case []any:
			for _, x := range v {
				walk(x)
			}
		case map[string]any:
			for k, x := range v {
				walk(k)
				walk(x)
			}
		}
	}
	walk(v)
}
