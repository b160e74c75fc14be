package server

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"io"
	"reflect"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// The stdio fast path writes a result in one pass; what it writes must
// decode to what the SDK's own encoding does, for every result toResult
// makes, and be one line (make bench).
func TestAppendResultMatchesSDK(t *testing.T) {
	tests := []struct {
		name string
		res  *mcp.CallToolResult
	}{
		{"text", &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "line 1\nline 2\n"}}}},
		{"escapes", &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "q\"b\\s/<a>&\t\r\x00\x1f\x7f é 世 \u2028\u2029 😀"}}}},
		{"invalid UTF-8", &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "a\xffb\xc3(c\xed\xa0\x80"}}}},
		{"empty", &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: ""}}}},
		{"error", &mcp.CallToolResult{IsError: true, Content: []mcp.Content{&mcp.TextContent{Text: "SandboxViolation: no"}}}},
		{"structured, indented", &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "{\n  \"a\": [1, 2]\n}"}},
			StructuredContent: json.RawMessage("{\n  \"a\": [1, 2]\n}")}},
		{"structured, compact", &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: `{"a":"\u2028<b>"}`}},
			StructuredContent: json.RawMessage(`{"a":"\u2028<b>"}`)}},
		{"another shape goes through encoding/json", &mcp.CallToolResult{Content: []mcp.Content{
			&mcp.TextContent{Text: "a"}, &mcp.TextContent{Text: "b", Annotations: &mcp.Annotations{Priority: 1}}}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var b bytes.Buffer
			if err := appendResult(&b, tt.res); err != nil {
				t.Fatal(err)
			}
			want, err := json.Marshal(tt.res)
			if err != nil {
				t.Fatal(err)
			}
			if bytes.ContainsAny(b.Bytes(), "\n\r") {
				t.Errorf("the result holds a line break, which would end its frame: %s", b.Bytes())
			}
			var got, sdk any
			if err := json.Unmarshal(b.Bytes(), &got); err != nil {
				t.Fatalf("not JSON: %v: %s", err, b.Bytes())
			}
			json.Unmarshal(want, &sdk)
			if !reflect.DeepEqual(got, sdk) {
				t.Errorf("fast path\n%s\nSDK\n%s", b.Bytes(), want)
			}
		})
	}
}

// FuzzAppendString: any string encodes to valid JSON, on one line, that
// decodes to the string with invalid UTF-8 replaced, as encoding/json
// does.
func FuzzAppendString(f *testing.F) {
	for _, s := range []string{"", "plain", "\"\\\n\r\t\x00", "\xff\xfe", "\u2028\u2029", "é世😀", "\xed\xa0\x80"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		var b bytes.Buffer
		appendString(&b, s)
		if bytes.ContainsAny(b.Bytes(), "\n\r") {
			t.Fatalf("%q encoded with a line break: %s", s, b.Bytes())
		}
		var got string
		if err := json.Unmarshal(b.Bytes(), &got); err != nil {
			t.Fatalf("%q encoded as %s: %v", s, b.Bytes(), err)
		}
		if want := strings.ToValidUTF8(s, "\ufffd"); got != want && !sameReplacement(got, s) {
			t.Fatalf("%q came back as %q", s, got)
		}
	})
}

// sameReplacement reports whether got is s with each invalid byte
// replaced by U+FFFD, which is what both encoders do (ToValidUTF8 folds a
// run of invalid bytes into one replacement).
func sameReplacement(got, s string) bool {
	var b strings.Builder
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		b.WriteRune(r)
		i += size
	}
	return got == b.String()
}

// A client that sends two calls with one request id at once (a bug, or
// a retry) gets both answered as they ran: the first one ending must not
// stop the second.
func TestFastPathSameIDTwice(t *testing.T) {
	s, _ := testServer(t, Options{}, true)
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	served := make(chan error, 1)
	go func() { served <- s.serveStdio(ctx, inR, outW) }()
	defer func() { inW.Close(); <-served }()
	lines := bufio.NewReader(outR)
	send := func(msg string) {
		t.Helper()
		if _, err := io.WriteString(inW, msg+"\n"); err != nil {
			t.Fatal(err)
		}
	}
	send(`{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`)
	if _, err := lines.ReadString('\n'); err != nil {
		t.Fatal(err)
	}
	send(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	send(`{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"list_directory","arguments":{}}}`)
	send(`{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"run_command","arguments":{"command":"sleep 0.5; echo slow"}}}`)
	var texts []string
	for range 2 {
		line, err := lines.ReadString('\n')
		if err != nil {
			t.Fatal(err)
		}
		var resp struct {
			Result mcp.CallToolResult `json:"result"`
		}
		if err := json.Unmarshal([]byte(line), &resp); err != nil {
			t.Fatalf("%v: %s", err, line)
		}
		if resp.Result.IsError || len(resp.Result.Content) != 1 {
			t.Errorf("a call failed: %s", line)
			continue
		}
		texts = append(texts, resp.Result.Content[0].(*mcp.TextContent).Text)
	}
	if len(texts) != 2 || !strings.Contains(strings.Join(texts, "\n"), "slow") {
		t.Errorf("answers %q, want the listing and the slow command's output", texts)
	}
}

// A client that sends its calls the moment initialize is answered gets
// every call answered, two on one id included: the SDK answers
// initialize before Connect returns and the session is stored, and a
// call read in between went to the SDK, which dropped one of the two.
func TestFastPathCallsRightAfterInitialize(t *testing.T) {
	s, _ := testServer(t, Options{}, true)
	for i := range 20 {
		inR, inW := io.Pipe()
		outR, outW := io.Pipe()
		served := make(chan error, 1)
		go func() { served <- s.serveStdio(context.Background(), inR, outW) }()
		answers := make(chan int, 1)
		go func() {
			lines := bufio.NewReader(outR)
			io.WriteString(inW, `{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`+"\n")
			if _, err := lines.ReadString('\n'); err != nil {
				answers <- 0
				return
			}
			io.WriteString(inW, `{"jsonrpc":"2.0","method":"notifications/initialized"}`+"\n"+
				`{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"list_directory","arguments":{}}}`+"\n"+
				`{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"list_directory","arguments":{}}}`+"\n")
			n := 0
			for n < 2 {
				if _, err := lines.ReadString('\n'); err != nil {
					break
				}
				n++
			}
			answers <- n
		}()
		select {
		case n := <-answers:
			if n != 2 {
				t.Fatalf("round %d: %d answers to the two calls, want 2", i, n)
			}
		case <-time.After(30 * time.Second):
			t.Fatalf("round %d: a call sent the moment initialize was answered was never answered", i)
		}
		inW.Close()
		<-served
		outR.Close()
	}
}
