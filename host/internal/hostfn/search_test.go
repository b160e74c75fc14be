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
