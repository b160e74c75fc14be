package hostile_test

// A tool that composes its output (it reads no file and runs no command)
// has a text that is a JSON object passed on as structuredContent too.
// That object is held to what a plugin's own structured object is: the
// host's encoding of it, a name given twice once, terminal escapes
// written as \u escapes gone from its strings and names; the text stays
// as the plugin wrote it. Through the real binary: toolhost serve
// --stdio to the MCP SDK's client, and toolhost call --format json.

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"io"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
	"unicode"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolhost/toolhost/internal/testplugin"
)

// structuredComposedWant is the composed text of mode "composed" as the
// host passes it on as structuredContent: the second "status" alone,
// without its OSC 52 clipboard write, screen clear and colour, and the
// name without its C1 CSI.
const structuredComposedWant = `{"k":1,"status":"pwned"}`

// structuredComposedCheck fails t unless raw, a structuredContent as it
// came over the wire, is structuredComposedWant exactly: no name given
// twice at any depth, no control character in any string or name once
// decoded.
func structuredComposedCheck(t *testing.T, where string, raw json.RawMessage) {
	t.Helper()
	if len(raw) == 0 {
		t.Errorf("%s: no structuredContent, want %s", where, structuredComposedWant)
		return
	}
	if dup := structuredComposedDuplicate(raw); dup != "" {
		t.Errorf("%s: structuredContent %s gives the name %q twice: clients that keep the first and those that keep the last read different objects", where, raw, dup)
	}
	var v any
	if err := json.Unmarshal(raw, &v); err != nil {
		t.Fatalf("%s: structuredContent %s: %v", where, raw, err)
	}
	if s := structuredComposedControl(v); s != "" {
		t.Errorf("%s: structuredContent %s decodes to %q, which holds a control character a client shows live", where, raw, s)
	}
	var compact bytes.Buffer
	json.Compact(&compact, raw)
	if compact.String() != structuredComposedWant {
		t.Errorf("%s: structuredContent %s, want %s", where, raw, structuredComposedWant)
	}
}

// structuredComposedDuplicate is a member name raw's objects give twice,
// "" if none does.
func structuredComposedDuplicate(raw []byte) string {
	dec := json.NewDecoder(bytes.NewReader(raw))
	type level struct {
		names map[string]bool
		key   bool // the next string token is a member name
	}
	var stack []*level
	for {
		tok, err := dec.Token()
		if err != nil {
			return ""
		}
		var top *level
		if len(stack) > 0 {
			top = stack[len(stack)-1]
		}
		switch tok := tok.(type) {
		case json.Delim:
			switch tok {
			case '{':
				if top != nil {
					top.key = true
				}
				stack = append(stack, &level{names: map[string]bool{}, key: true})
			case '[':
				if top != nil {
					top.key = true
				}
				stack = append(stack, nil)
			default:
				stack = stack[:len(stack)-1]
			}
			continue
		case string:
			if top != nil && top.key {
				if top.names[tok] {
					return tok
				}
				top.names[tok] = true
				top.key = false
				continue
			}
		}
		if top != nil {
			top.key = true
		}
	}
}

// structuredComposedControl is the first string or name in v holding a
// control character, "" if none does.
func structuredComposedControl(v any) string {
	has := func(s string) bool { return strings.IndexFunc(s, unicode.IsControl) >= 0 }
	switch v := v.(type) {
	case string:
		if has(v) {
			return v
		}
	case []any:
		for _, x := range v {
			if s := structuredComposedControl(x); s != "" {
				return s
			}
		}
	case map[string]any:
		for k, x := range v {
			if has(k) {
				return k
			}
			if s := structuredComposedControl(x); s != "" {
				return s
			}
		}
	}
	return ""
}

// structuredComposedText checks the text content is the plugin's JSON
// text still: its escapes stay escapes, which a client shows as written.
func structuredComposedText(t *testing.T, where, text string) {
	t.Helper()
	if !strings.Contains(text, `"status":"ok","status":"\u001b]52;c;cHduZWQ=\u0007`) || !json.Valid([]byte(text)) {
		t.Errorf("%s: text %q, want the plugin's JSON text as it wrote it", where, text)
	}
}

// structuredComposedWire keeps what the client's transport logs, as its
// reading goroutine writes it.
type structuredComposedWire struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (w *structuredComposedWire) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.b.Write(p)
}

func (w *structuredComposedWire) String() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.b.String()
}

func TestStructuredComposedTextIsCanonicalOverStdio(t *testing.T) {
	bin := toolhostBinary(t)
	plugins := pluginDir(t, "structured")
	home := t.TempDir()
	cmd := exec.Command(bin, "--state-dir", filepath.Join(home, "state"), "--plugins", plugins, "serve", "--stdio", "--root", t.TempDir())
	cmd.Env = append(cmd.Environ(), "HOME="+home, "XDG_CONFIG_HOME="+filepath.Join(home, ".config"),
		"XDG_STATE_HOME="+filepath.Join(home, ".state"), "TOOLHOST_CACHE_DIR="+testplugin.CacheDir(t))
	wire := &structuredComposedWire{}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	client := mcp.NewClient(&mcp.Implementation{Name: "hostile", Version: "0"}, nil)
	session, err := client.Connect(ctx, &mcp.LoggingTransport{Transport: &mcp.CommandTransport{Command: cmd}, Writer: wire}, nil)
	if err != nil {
		t.Fatalf("toolhost serve --stdio: %v", err)
	}
	defer session.Close()
	res, err := session.CallTool(ctx, &mcp.CallToolParams{Name: "structured", Arguments: map[string]any{"mode": "composed"}})
	if err != nil {
		t.Fatal(err)
	}
	if res.IsError || len(res.Content) != 1 {
		t.Fatalf("result %+v", res)
	}
	structuredComposedText(t, "serve --stdio", res.Content[0].(*mcp.TextContent).Text)

	// The client decodes structuredContent (a repeated name to its last
	// value); what the server sent is read off the wire.
	var sent json.RawMessage
	sc := bufio.NewScanner(strings.NewReader(wire.String()))
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		_, frame, ok := strings.Cut(sc.Text(), "read: ")
		if !ok {
			continue
		}
		var msg struct {
			Result *struct {
				StructuredContent json.RawMessage `json:"structuredContent"`
			} `json:"result"`
		}
		if json.Unmarshal([]byte(frame), &msg) == nil && msg.Result != nil && msg.Result.StructuredContent != nil {
			sent = msg.Result.StructuredContent
		}
	}
	if sent == nil {
		t.Fatalf("no tools/call result with structuredContent on the wire:\n%.2000s", wire.String())
	}
	structuredComposedCheck(t, "serve --stdio", sent)
}

func TestStructuredComposedTextIsCanonicalInCallFormatJSON(t *testing.T) {
	bin := toolhostBinary(t)
	plugins := pluginDir(t, "structured")
	home := t.TempDir()
	cmd := exec.Command(bin, "--state-dir", filepath.Join(home, "state"), "--plugins", plugins,
		"call", "structured", "--args", `{"mode":"composed"}`, "--format", "json")
	cmd.Dir = t.TempDir()
	cmd.Env = append(cmd.Environ(), "HOME="+home, "XDG_CONFIG_HOME="+filepath.Join(home, ".config"),
		"XDG_STATE_HOME="+filepath.Join(home, ".state"), "TOOLHOST_CACHE_DIR="+testplugin.CacheDir(t))
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("toolhost call --format json: %v\n%s\n%s", err, out, stderr.Bytes())
	}
	var got struct {
		Content           string          `json:"content"`
		StructuredContent json.RawMessage `json:"structuredContent"`
		IsError           bool            `json:"isError"`
	}
	if err := json.NewDecoder(io.LimitReader(bytes.NewReader(out), 1<<20)).Decode(&got); err != nil || got.IsError {
		t.Fatalf("--format json printed %s (%v)", out, err)
	}
	structuredComposedText(t, "call --format json", got.Content)
	structuredComposedCheck(t, "call --format json", got.StructuredContent)
}
