package hostile_test

// Structured results: a plugin's object beside its text reaches MCP
// clients as structuredContent, /v1 as structured and toolhost call
// --format json beside the text, and a hostile plugin's object (not one
// JSON object, a name given twice, terminal escapes, over the output
// limit) is refused, made one, cleaned or left out.

import (
	"context"
	"encoding/json"
	"net/http"
	"os/exec"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolhost/toolhost/abi"
	"github.com/toolhost/toolhost/host"
	"github.com/toolhost/toolhost/host/internal/config"
	"github.com/toolhost/toolhost/host/internal/engine"
	"github.com/toolhost/toolhost/host/internal/server"
	"github.com/toolhost/toolhost/internal/testplugin"
)

// structuredObject is what mode "object" gives, as the host encodes it.
const structuredObject = `{"files":2,"ok":true,"paths":["a.txt","b.txt"]}`

// An MCP client (the official SDK's) receives the plugin's object as
// structuredContent beside the text, even when the text is a JSON object
// of its own (which, without one, would be sent); a /v1 batch gives it as
// structured.
func TestStructuredOutputReachesMCPAndBatches(t *testing.T) {
	sv := serveHost(t, server.Options{}, server.HTTPOptions{}, func(_ *config.Config, o *host.Options) {
		o.PluginDir = pluginDir(t, "structured")
	})
	cs, err := sv.connect(t, "/mcp", nil)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "structured", Arguments: map[string]any{"mode": "object", "text": `{"text":"is not the object"}`}})
	if err != nil {
		t.Fatal(err)
	}
	if res.IsError || len(res.Content) != 1 {
		t.Fatalf("result: %+v", res)
	}
	if text := res.Content[0].(*mcp.TextContent).Text; text != `{"text":"is not the object"}` {
		t.Errorf("text %q, want the plugin's text", text)
	}
	var want any
	json.Unmarshal([]byte(structuredObject), &want)
	if !reflect.DeepEqual(res.StructuredContent, want) {
		t.Errorf("structuredContent %#v, want %s", res.StructuredContent, structuredObject)
	}

	// The same call without an object: the text, a JSON object this
	// composing tool wrote, is the structuredContent as before.
	res, err = cs.CallTool(ctx, &mcp.CallToolParams{Name: "structured", Arguments: map[string]any{"mode": "none", "text": `{"n":1}`}})
	if err != nil {
		t.Fatal(err)
	}
	if m, _ := res.StructuredContent.(map[string]any); len(m) != 1 || m["n"] != float64(1) {
		t.Errorf("structuredContent without an object: %#v, want the text's {\"n\":1}", res.StructuredContent)
	}

	status, body := sv.do(t, "POST", "/v1/batches", `{"conversation_id":"c","calls":[{"id":"s1","name":"structured","arguments":{"mode":"object"}}]}`, nil)
	if status != http.StatusCreated {
		t.Fatalf("POST /v1/batches: %d %s", status, body)
	}
	var created struct {
		BatchID string `json:"batch_id"`
	}
	json.Unmarshal([]byte(body), &created)
	for deadline := time.Now().Add(time.Minute); ; time.Sleep(20 * time.Millisecond) {
		_, body = sv.do(t, "GET", "/v1/batches/"+created.BatchID, "", nil)
		var b struct {
			State   string `json:"state"`
			Results []struct {
				Content    string          `json:"content"`
				Structured json.RawMessage `json:"structured"`
			} `json:"results"`
		}
		json.Unmarshal([]byte(body), &b)
		if b.State == "done" {
			if len(b.Results) != 1 || b.Results[0].Content != "done" || string(b.Results[0].Structured) != structuredObject {
				t.Errorf("/v1 result: %s, want content \"done\" and structured %s", body, structuredObject)
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("batch not done: %s", body)
		}
	}
}

// A hostile plugin's object: what is not exactly one JSON object fails
// the call (the plugin's fault, said so); a name given twice comes out
// once; terminal escapes, raw or as \u escapes, are gone from strings and
// names; an object over the output limit beside the text is left out
// while the text is kept, and one of 8 MiB is never read whole.
func TestStructuredOutputFromAHostilePlugin(t *testing.T) {
	h, _ := openHost(t, nil, "structured")
	tests := []struct {
		mode string
		// fail is a text the error must hold; "" for a success.
		fail string
		// want is the structured object expected; "" for none.
		want string
	}{
		{mode: "object", want: structuredObject},
		{mode: "repeated", want: `{"path":"../../etc/passwd"}`},
		{mode: "controls", want: `{"c1":"ab","k":1,"s":"red"}`},
		{mode: "array", fail: "is not one JSON object (it is an array)"},
		{mode: "two", fail: "more follows the first JSON value"},
		{mode: "string", fail: "is not one JSON object (it is a string)"},
		{mode: "broken", fail: "is not one JSON object"},
		{mode: "half"},
		{mode: "huge"},
	}
	for _, tt := range tests {
		t.Run(tt.mode, func(t *testing.T) {
			b := engine.Batch{Conversation: "c", Calls: []engine.Call{call("s", "structured", jsonArgs(t, map[string]any{"mode": tt.mode, "text": strings.Repeat("t", 40<<10)}))}}
			r := process(t, h, context.Background(), b, host.BatchOptions{}, time.Minute)[0]
			if tt.fail != "" {
				if r.OK || r.Error.Kind != abi.KindExecutionFailed || !strings.Contains(r.Error.Message, tt.fail) ||
					!strings.Contains(r.Error.Message, "plugin's fault") || r.Content != "" || r.Structured != nil {
					t.Fatalf("result %+v (error %+v), want ExecutionFailed blaming the plugin, saying %q, without content", r, r.Error, tt.fail)
				}
				return
			}
			if !r.OK {
				t.Fatalf("error %+v", r.Error)
			}
			if r.Content != strings.Repeat("t", 40<<10) {
				t.Errorf("text of %d bytes, want the plugin's 40 KiB", len(r.Content))
			}
			if string(r.Structured) != tt.want {
				t.Errorf("structured %.200s, want %q", r.Structured, tt.want)
			}
			if limit := int(abi.DefaultLimits().OutputLimit()); len(r.Content)+len(r.Structured) > limit {
				t.Errorf("text and object are %d bytes, over the %d-byte output limit", len(r.Content)+len(r.Structured), limit)
			}
		})
	}
}

// toolhost call --format json prints what an MCP client receives: the
// text, the plugin's object as structuredContent, isError; the default
// result record carries the object as structured.
func TestStructuredOutputCallFormatJSON(t *testing.T) {
	bin := toolhostBinary(t)
	plugins := pluginDir(t, "structured")
	dir := t.TempDir()
	run := func(args ...string) ([]byte, error) {
		home := t.TempDir()
		cmd := exec.Command(bin, append([]string{"--state-dir", filepath.Join(home, "state"), "--plugins", plugins, "call", "structured"}, args...)...)
		cmd.Dir = dir
		cmd.Env = append(cmd.Environ(), "HOME="+home, "XDG_CONFIG_HOME="+filepath.Join(home, ".config"),
			"XDG_STATE_HOME="+filepath.Join(home, ".state"), "TOOLHOST_CACHE_DIR="+testplugin.CacheDir(t))
		return cmd.Output()
	}
	out, err := run("--args", `{"mode":"object","text":"2 files"}`, "--format", "json")
	if err != nil {
		t.Fatalf("toolhost call --format json: %v\n%s", err, out)
	}
	var got struct {
		Content           string          `json:"content"`
		StructuredContent json.RawMessage `json:"structuredContent"`
		IsError           bool            `json:"isError"`
	}
	if err := json.Unmarshal(out, &got); err != nil {
		t.Fatalf("--format json printed %s: %v", out, err)
	}
	var compact strings.Builder
	json.NewEncoder(&compact).Encode(got.StructuredContent)
	if got.Content != "2 files" || got.IsError || strings.TrimSpace(compact.String()) != structuredObject {
		t.Errorf("--format json printed %s, want content \"2 files\", structuredContent %s, isError false", out, structuredObject)
	}

	out, err = run("--args", `{"mode":"object"}`)
	var rec engine.Result
	if err != nil || json.Unmarshal(out, &rec) != nil || !rec.OK || rec.Content != "done" {
		t.Fatalf("toolhost call: %v\n%s", err, out)
	}
	if s, _ := json.Marshal(rec.Structured); string(s) != structuredObject {
		t.Errorf("the result record's structured is %s, want %s", s, structuredObject)
	}

	out, err = run("--args", `{"mode":"array"}`, "--format", "json")
	if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != 1 {
		t.Fatalf("a refused object: exit %v, want 1\n%s", err, out)
	}
	got.StructuredContent = nil
	if err := json.Unmarshal(out, &got); err != nil || !got.IsError || !strings.HasPrefix(got.Content, "ExecutionFailed: structured failed") || got.StructuredContent != nil {
		t.Errorf("a refused object printed %s, want isError with an ExecutionFailed text and no structuredContent", out)
	}

	out, err = run("--args", `{"mode":"object","text":"2 files"}`, "--format", "text")
	if err != nil || string(out) != "2 files\n" {
		t.Errorf("--format text printed %q (%v), want the text alone", out, err)
	}
	if out, err := run("--args", `{"mode":"object"}`, "--format", "yaml"); err == nil {
		t.Errorf("--format yaml was accepted: %s", out)
	}
}

// A tool declaring an output_schema: an MCP client is given it as the
// tool's outputSchema and receives only objects matching it; a result
// that breaks it (a wrong type, a member it forbids) or gives none is an
// error blaming the plugin, never an object the schema does not describe.
func TestStructuredOutputHeldToTheOutputSchema(t *testing.T) {
	sv := serveHost(t, server.Options{}, server.HTTPOptions{}, func(_ *config.Config, o *host.Options) {
		o.PluginDir = pluginDir(t, "structuredschema")
	})
	cs, err := sv.connect(t, "/mcp", nil)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	tools, err := cs.ListTools(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	var schema any
	for _, tool := range tools.Tools {
		if tool.Name == "structuredschema" {
			schema = tool.OutputSchema
		}
	}
	if m, _ := schema.(map[string]any); m["type"] != "object" || m["required"] == nil {
		t.Fatalf("outputSchema of structuredschema: %#v", schema)
	}
	for _, tt := range []struct {
		mode, fail string
	}{
		{"ok", ""},
		{"mismatch", "does not match its output_schema; at /files"},
		{"extra", "does not match its output_schema; at (root)"},
		{"none", "returned no structured result, which its output_schema promises"},
	} {
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "structuredschema", Arguments: map[string]any{"mode": tt.mode}})
		if err != nil {
			t.Fatalf("%s: %v", tt.mode, err)
		}
		text := res.Content[0].(*mcp.TextContent).Text
		if tt.fail == "" {
			if m, _ := res.StructuredContent.(map[string]any); res.IsError || text != "2 files" || len(m) != 1 || m["files"] != float64(2) {
				t.Errorf("%s: isError %v, text %q, structuredContent %#v", tt.mode, res.IsError, text, res.StructuredContent)
			}
			continue
		}
		if !res.IsError || res.StructuredContent != nil || !strings.Contains(text, tt.fail) || !strings.Contains(text, "plugin's fault") {
			t.Errorf("%s: isError %v, text %q, structuredContent %#v; want an error saying %q", tt.mode, res.IsError, text, res.StructuredContent, tt.fail)
		}
	}
}
