package hostfn

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/toolhost/toolhost/abi"
	"github.com/toolhost/toolhost/host/internal/sandbox"
)

// fs_search decodes and checks a request as untrusted input, searches
// only within the call's read scope, and answers in JSON.
func TestFSSearch(t *testing.T) {
	w := newWorkspace(t, map[string]string{"src/a.go": "func main() {}\n", "other/b.go": "func main() {}\n"})
	src, err := w.sb.Resolve("src")
	if err != nil {
		t.Fatal(err)
	}
	scoped := func() *Env {
		env := w.env("c")
		env.Call.Resolved = map[string]sandbox.Path{"src": src}
		env.Call.Readable = &ReadScope{Paths: map[string]bool{src.Abs: true}, Below: true}
		return env
	}
	g := newGuest(1 << 16)
	search := func(env *Env, raw []byte) (abi.SearchResult, error) {
		p, n := g.put(raw)
		resp, err := g.call(context.Background(), env, abi.FnFSSearch, p, n, 0)
		if err != nil {
			return abi.SearchResult{}, err
		}
		var r abi.SearchResult
		if err := json.Unmarshal(resp, &r); err != nil {
			t.Fatalf("response %s: %v", resp, err)
		}
		return r, nil
	}
	r, err := search(scoped(), abi.AppendSearchRequest(nil, abi.SearchRequest{Path: "src", Query: "func main"}))
	if err != nil || r.TotalMatches != 1 || len(r.Matches) != 1 || r.Matches[0].Path != "src/a.go" {
		t.Fatalf("search of src: %+v, %v", r, err)
	}
	for _, tt := range []struct {
		name string
		raw  string
		kind abi.ErrorKind
		in   string
	}{
		{"outside the read scope", `{"path":"other","query":"x"}`, abi.KindSandboxViolation, "other"},
		{"the root, not named", `{"query":"x"}`, abi.KindSandboxViolation, "."},
		{"an unknown field", `{"path":"src","query":"x","follow_links":true}`, abi.KindBadArgs, "follow_links"},
		{"not JSON", `{"path":`, abi.KindBadArgs, "not a search request"},
		{"two objects", `{"path":"src","query":"x"}{"path":"other"}`, abi.KindBadArgs, "more after"},
		{"too much context", `{"path":"src","query":"x","context_lines":99}`, abi.KindBadArgs, "context_lines"},
		{"an unknown mode", `{"path":"src","query":"x","mode":"grep"}`, abi.KindBadArgs, "mode"},
		{"look-ahead", `{"path":"src","query":"a(?=b)","regex":true}`, abi.KindBadArgs, "RE2"},
		{"a bad glob", `{"path":"src","mode":"glob","include":["[a"]}`, abi.KindBadArgs, "patterns"},
		{"escaping", `{"path":"../","query":"x"}`, abi.KindSandboxViolation, ".."},
		{"an unknown rendering", `{"path":"src","mode":"list","render":"tree"}`, abi.KindBadArgs, `render: "tree" is not known`},
		{"a listing of a search", `{"path":"src","query":"x","render":"listing"}`, abi.KindBadArgs, `render: "listing" needs mode "list"`},
		{"structured without a rendering", `{"path":"src","mode":"list","render_structured":true}`, abi.KindBadArgs, `render_structured: needs render "listing"`},
	} {
		_, err := search(scoped(), []byte(tt.raw))
		if he := hostErr(t, err); he.Kind != tt.kind || !strings.Contains(he.Message, tt.in) {
			t.Errorf("%s: %s %q, want %s naming %q", tt.name, he.Kind, he.Message, tt.kind, tt.in)
		}
	}
	// A request larger than any real one is refused before it is read.
	p, _ := g.put([]byte("{}"))
	if _, err := g.call(context.Background(), scoped(), abi.FnFSSearch, p, uint64(maxSearchRequestBytes+1), 0); hostErr(t, err).Status != abi.StatusTooLarge {
		t.Errorf("an oversized request: %v, want too large", err)
	}
}

// A rendered listing is list_directory's text, and its JSON only when
// asked for, shaped by the host within the call's output limit.
func TestFSSearchRenderedListing(t *testing.T) {
	w := newWorkspace(t, map[string]string{"src/a.go": "package a\n", "src/sub/b.go": "package b\n", "src/.hidden": "x"})
	src, err := w.sb.Resolve("src")
	if err != nil {
		t.Fatal(err)
	}
	g := newGuest(1 << 16)
	list := func(req abi.SearchRequest, limit int64) (string, string) {
		t.Helper()
		env := w.env("c")
		env.Call.Resolved = map[string]sandbox.Path{"src": src}
		env.Call.Readable = &ReadScope{Paths: map[string]bool{src.Abs: true}, Below: true}
		env.Call.Limits.MaxOutputBytes = limit
		p, n := g.put(abi.AppendSearchRequest(nil, req))
		resp, err := g.call(context.Background(), env, abi.FnFSSearch, p, n, 0)
		if err != nil {
			t.Fatalf("%+v: %v", req, err)
		}
		text, obj, err := abi.DecodeRendered(resp)
		if err != nil {
			t.Fatalf("%+v: response %q: %v", req, resp, err)
		}
		return string(text), string(obj)
	}
	req := abi.SearchRequest{Mode: abi.SearchList, Path: "src", Depth: 2, Render: abi.RenderListing}
	tests := []struct {
		name       string
		structured bool
		limit      int64
		text       string
		obj        []string // substrings; none: no object
	}{
		{"text alone", false, 0, "a.go  10\nsub/\nsub/b.go  10\n3 entries; left out: 1 hidden (include_hidden:true shows them)\n", nil},
		{"with the object", true, 0, "a.go  10\nsub/\nsub/b.go  10\n3 entries; left out: 1 hidden (include_hidden:true shows them)\n",
			[]string{`{"path":"src","entries":[{"name":"a.go","path":"src/a.go","type":"file","size":10,"modified":"`, `"truncated":false,"total":3,"skipped":{"hidden":1,"ignored":0}}`}},
		{"cut to the limit", false, 522, "a.go  10\n1 of 3 entries; left out: 1 hidden (include_hidden:true shows them); truncated: raise max_entries (up to 10000), list a subdirectory, or lower depth\n", nil},
	}
	// The directory as the sandbox shows it: "./src/" lists as "src".
	if text, _ := list(abi.SearchRequest{Mode: abi.SearchList, Path: "./src/", Depth: 2, Render: abi.RenderListing}, 0); text != tests[0].text {
		t.Errorf("./src/: text %q, want %q", text, tests[0].text)
	}
	for _, tt := range tests {
		r := req
		r.RenderStructured = tt.structured
		text, obj := list(r, tt.limit)
		if text != tt.text {
			t.Errorf("%s: text %q, want %q", tt.name, text, tt.text)
		}
		if len(tt.obj) == 0 && obj != "" {
			t.Errorf("%s: an object nobody asked for: %s", tt.name, obj)
		}
		for _, want := range tt.obj {
			if !strings.Contains(obj, want) {
				t.Errorf("%s: object %s lacks %s", tt.name, obj, want)
			}
		}
		if obj != "" && !json.Valid([]byte(obj)) {
			t.Errorf("%s: object is not JSON: %s", tt.name, obj)
		}
	}
}
