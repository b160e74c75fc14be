package extism

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/toolhost/toolhost/abi"
	"github.com/toolhost/toolhost/host/internal/wasmbin"
)

// The kind of a module follows from its exports and
// imports, as hyper-mcp decides it, and a native plugin (which exports
// describe and call too) is never taken for a servlet.
func TestKind(t *testing.T) {
	env := []wasmbin.Import{{Module: envModule, Name: "input_length"}}
	tests := []struct {
		name    string
		exports []string
		imports []wasmbin.Import
		want    Kind
	}{
		{"hyper-mcp", []string{"list_tools", "call_tool"}, env, HyperMCP},
		{"servlet", []string{"describe", "call"}, env, Servlet},
		{"both pairs: servlet, as hyper-mcp decides", []string{"describe", "call", "list_tools", "call_tool"}, env, Servlet},
		{"native", []string{"describe", "call", abi.ExportVersionMarker}, nil, NotExtism},
		{"native with an Extism-looking import", []string{"describe", "call", abi.ExportVersionMarker}, env, NotExtism},
		{"describe and call without Extism imports", []string{"describe", "call"}, nil, NotExtism},
		{"neither", []string{"_initialize"}, env, NotExtism},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := shape{exports: map[string]bool{}, imports: tt.imports}
			for _, e := range tt.exports {
				s.exports[e] = true
			}
			if got := s.kind(); got != tt.want {
				t.Errorf("kind %q, want %q", got, tt.want)
			}
		})
	}
}

// Every import toolhost does not provide is named at
// once; what it provides passes.
func TestCheckImports(t *testing.T) {
	ok := []wasmbin.Import{
		{Module: envModule, Name: "http_request"}, {Module: wasiModule, Name: "fd_write"},
		{Module: userModule, Name: "notify_progress"}, {Module: userModule, Name: "notify_tool_list_changed"},
	}
	if err := checkImports("p.wasm", ok); err != nil {
		t.Fatal(err)
	}
	bad := append(ok, wasmbin.Import{Module: userModule, Name: "get_keyring_secret"}, wasmbin.Import{Module: "env", Name: "foo"},
		wasmbin.Import{Module: envModule, Name: "nonexistent"}, wasmbin.Import{Module: envModule, Name: "memory", Kind: wasmbin.KindMemory})
	err := checkImports("p.wasm", bad)
	var ie *ImportError
	if !errors.As(err, &ie) || strings.Join(ie.Imports, ",") != "env.foo,extism:host/env.memory,extism:host/env.nonexistent,extism:host/user.get_keyring_secret" {
		t.Fatalf("error %v", err)
	}
	if !strings.Contains(err.Error(), "p.wasm") || !strings.Contains(err.Error(), "notify_progress") {
		t.Errorf("message %q names neither the file nor what is provided", err)
	}
}

// Allowed_hosts match host names exactly or by go-sdk's
// globs, without regard to case; URLs and bad patterns are refused when
// the plugin loads, not when a request panics.
func TestHostPatterns(t *testing.T) {
	hp, err := compileHosts("p", []string{"api.example.com", "*.Example.org"})
	if err != nil {
		t.Fatal(err)
	}
	for host, want := range map[string]bool{
		"api.example.com": true, "API.example.com": true, "x.example.org": true,
		"example.org": false, "api.example.com.evil": false, "evil.com": false, "": false,
	} {
		if hp.allows(host) != want {
			t.Errorf("allows(%q) = %v, want %v", host, !want, want)
		}
	}
	for _, bad := range []string{"https://api.example.com", "a.example:443", "", "[a-"} {
		if _, err := compileHosts("p", []string{bad}); err == nil || !strings.Contains(err.Error(), "extism.p.allowed_hosts") {
			t.Errorf("%q: error %v, want one naming the key", bad, err)
		}
	}
}

// Go-sdk's refusal (a panic in the guest) and the
// guard's both become a NetDeniedError naming the host.
func TestNetDenied(t *testing.T) {
	sdk := fmt.Errorf("HTTP request to 'http://evil.example:8080/x' is not allowed (recovered by wazero)\nwasm stack trace: ...")
	guarded := fmt.Errorf("%w (recovered by wazero)", &url.Error{Op: "Get", URL: "http://evil.example/", Err: &NetDeniedError{Plugin: "p", Host: "evil.example"}})
	for _, err := range []error{sdk, guarded} {
		nd, ok := netDenied("p", err)
		if !ok || nd.Host != "evil.example" || !strings.Contains(nd.Error(), "extism.p.allowed_hosts") {
			t.Errorf("%v: %+v %v", err, nd, ok)
		}
	}
	if _, ok := netDenied("p", errors.New("wasm error: unreachable")); ok {
		t.Error("a trap taken for a refusal")
	}
	// Requests of anything but a plugin pass the guard untouched.
	var passed bool
	g := guard{next: roundTripper(func(*http.Request) { passed = true })}
	req, _ := http.NewRequest("GET", "http://anything.example/", nil)
	g.RoundTrip(req)
	if !passed {
		t.Error("the guard stopped a request no plugin made")
	}
}

type roundTripper func(*http.Request)

func (f roundTripper) RoundTrip(r *http.Request) (*http.Response, error) {
	f(r)
	return nil, errors.New("not sent")
}

// A CallToolResult becomes text: text blocks as they
// are, others described in one line, structuredContent when there is no
// content; isError makes an ExecutionFailed error; output that is not a
// CallToolResult is an error, and a huge text is not copied past a bound
// above the limit.
func TestCallResult(t *testing.T) {
	tests := []struct {
		name, out string
		kind      abi.ErrorKind
		want      string
	}{
		{"text", `{"content":[{"type":"text","text":"a"},{"type":"text","text":"b"}]}`, "", "a\nb"},
		{"image", `{"content":[{"type":"image","mimeType":"image/png","data":"AAAA"}]}`, "", "[image image/png, 3 bytes]"},
		{"resource text", `{"content":[{"type":"resource","resource":{"uri":"file:///x","text":"body"}}]}`, "", "[resource file:///x]\nbody"},
		{"resource link", `{"content":[{"type":"resource_link","uri":"https://x","name":"doc"}]}`, "", "[resource link https://x doc]"},
		{"unknown block", `{"content":[{"type":"widget","n":1}]}`, "", `{"type":"widget","n":1}`},
		{"structured", `{"content":[],"structuredContent":{"a":1}}`, "", `{"a":1}`},
		{"structured beside text", `{"content":[{"type":"text","text":"one"}],"structuredContent":{"a":1}}`, "", "one"},
		{"error", `{"isError":true,"content":[{"type":"text","text":"no"}]}`, abi.KindExecutionFailed, "no"},
		{"error without text", `{"isError":true}`, abi.KindExecutionFailed, "t reported an error without a message"},
		{"not a result", `[1,2]`, abi.KindExecutionFailed, "not an MCP CallToolResult"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := callResult("t", []byte(tt.out), 1000)
			if r.Kind != tt.kind || !strings.Contains(string(r.Content), tt.want) {
				t.Errorf("result %s %q, want %s %q", r.Kind, r.Content, tt.kind, tt.want)
			}
		})
	}
	for out, want := range map[string]string{
		`{"content":[{"type":"text","text":"one"}],"structuredContent":{"a":1}}`: `{"a":1}`,
		`{"content":[],"structuredContent":{"a":1}}`:                             `{"a":1}`,
		`{"content":[{"type":"text","text":"one"}],"structuredContent":[1]}`:     "",
		`{"content":[{"type":"text","text":"one"}]}`:                             "",
	} {
		if r := callResult("t", []byte(out), 1000); string(r.Structured) != want {
			t.Errorf("%s: structured %q, want %q", out, r.Structured, want)
		}
	}
	big, _ := json.Marshal(map[string]any{"content": []any{map[string]any{"type": "text", "text": strings.Repeat("x", 1<<20)}}})
	if r := callResult("t", big, 1000); len(r.Content) > 2*1000+4096+len("…") {
		t.Errorf("a 1 MiB text became %d bytes for a limit of 1000", len(r.Content))
	}
}

// A summary is made by the host, without the plugin:
// the tool, its arguments cut short, and the hosts it may contact.
func TestSummary(t *testing.T) {
	tool := &Tool{mod: &Module{grant: Grant{AllowedHosts: []string{"api.example.com"}}}, manifest: abi.Manifest{Name: "fetch"}}
	r, err := tool.Summary(t.Context(), []byte(`{"url": "`+strings.Repeat("a", 500)+`"}`))
	s := string(r.Content)
	if err != nil || !strings.HasPrefix(s, `fetch: {"url":"aaa`) || len(s) > 300 || !strings.HasSuffix(s, "(may contact api.example.com)") {
		t.Errorf("summary %q, %v", s, err)
	}
}
