package server

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v5"

	"github.com/toolhost/toolhost/host/internal/config"
)

// openAPIDoc is the part of openapi.json the tests read.
type openAPIDoc struct {
	OpenAPI string                                `json:"openapi"`
	Paths   map[string]map[string]json.RawMessage `json:"paths"`
}

func loadOpenAPI(t *testing.T) openAPIDoc {
	t.Helper()
	var doc openAPIDoc
	if err := json.Unmarshal(openAPI, &doc); err != nil {
		t.Fatalf("openapi.json: %v", err)
	}
	return doc
}

// TestOpenAPIRoutes: openapi.json lists exactly the routes the mux
// serves under /v1, with the same methods, and the document served at
// GET /v1/openapi.json is it.
func TestOpenAPIRoutes(t *testing.T) {
	doc := loadOpenAPI(t)
	if !strings.HasPrefix(doc.OpenAPI, "3.1") {
		t.Errorf("openapi %q, want 3.1", doc.OpenAPI)
	}
	var documented, served []string
	for path, ops := range doc.Paths {
		for method := range ops {
			switch method {
			case "parameters", "summary", "description":
				continue
			}
			documented = append(documented, strings.ToUpper(method)+" "+path)
		}
	}
	for _, rt := range bareServer().apiRoutes() {
		if !strings.HasPrefix(rt.path, "/v1/") {
			t.Errorf("route %s %s is not under /v1", rt.method, rt.path)
		}
		served = append(served, rt.method+" "+rt.path)
	}
	slices.Sort(documented)
	slices.Sort(served)
	if !slices.Equal(documented, served) {
		t.Errorf("openapi.json documents\n  %s\nthe mux serves\n  %s", strings.Join(documented, "\n  "), strings.Join(served, "\n  "))
	}

	a := serveAPI(t, Options{}, nil)
	status, out := a.do("GET", "/v1/openapi.json", nil)
	if status != 200 || !bytes.Equal(out, openAPI) {
		t.Errorf("GET /v1/openapi.json: %d, %d bytes, want the embedded document", status, len(out))
	}
}

// schemas compiles the document's schemas for validation.
type schemas struct {
	t *testing.T
	c *jsonschema.Compiler
}

func newSchemas(t *testing.T) schemas {
	c := jsonschema.NewCompiler()
	c.Draft = jsonschema.Draft2020
	if err := c.AddResource("openapi.json", bytes.NewReader(openAPI)); err != nil {
		t.Fatal(err)
	}
	return schemas{t: t, c: c}
}

// pointer escapes a JSON pointer's token.
func pointer(tok string) string {
	return strings.ReplaceAll(strings.ReplaceAll(tok, "~", "~0"), "/", "~1")
}

// check validates body against the schema at the pointer's tokens.
func (s schemas) check(what string, body []byte, tokens ...string) {
	s.t.Helper()
	var ptr strings.Builder
	for _, tok := range tokens {
		ptr.WriteString("/" + pointer(tok))
	}
	sch, err := s.c.Compile("openapi.json#" + ptr.String())
	if err != nil {
		s.t.Errorf("%s: no schema at %s: %v", what, ptr.String(), err)
		return
	}
	var v any
	if err := json.Unmarshal(body, &v); err != nil {
		s.t.Errorf("%s: %v in %s", what, err, body)
		return
	}
	if err := sch.Validate(v); err != nil {
		s.t.Errorf("%s does not match openapi.json: %#v\nbody: %s", what, err, truncate(string(body), 600))
	}
}

// TestOpenAPIShapes: real requests and the answers every endpoint gives
// them, success and errors, match the document's schemas for that route
// and status.
func TestOpenAPIShapes(t *testing.T) {
	sc := newSchemas(t)
	a := serveAPI(t, Options{}, nil)
	os.WriteFile(filepath.Join(a.root, "a.txt"), []byte("old\n"), 0o644)

	// call sends a request, checks it against the request schema, and
	// its answer against the response schema for its status.
	call := func(method, route, path string, body any, want int) []byte {
		t.Helper()
		var raw []byte
		if body != nil {
			raw, _ = json.Marshal(body)
		}
		if body != nil && want != 400 { // a 400 is for a request the schema refuses too
			sc.check("request "+method+" "+path, raw, "paths", route, strings.ToLower(method), "requestBody", "content", "application/json", "schema")
		}
		var status int
		var out []byte
		if raw != nil {
			status, out = a.do(method, path, string(raw))
		} else {
			status, out = a.do(method, path, nil)
		}
		if status != want {
			t.Fatalf("%s %s: %d %s, want %d", method, path, status, out, want)
		}
		sc.check(method+" "+path+" "+strconv.Itoa(status), out, "paths", route, strings.ToLower(method), "responses", strconv.Itoa(status), "content", "application/json", "schema")
		return out
	}
	batchID := func(out []byte) string {
		var v batchView
		json.Unmarshal(out, &v)
		return v.BatchID
	}

	call("GET", "/v1/health", "/v1/health", nil, 200)
	call("GET", "/v1/tools", "/v1/tools?format=openai", nil, 200)
	call("GET", "/v1/tools", "/v1/tools?format=nope", nil, 400)
	read := map[string]any{"conversation_id": "c1", "turn_id": "t1", "calls": []map[string]any{
		{"id": "r", "name": "read_file", "arguments": map[string]any{"path": "a.txt"}},
		{"id": "x", "name": "no_such_tool"}}}
	first := batchID(call("POST", "/v1/batches", "/v1/batches", read, 201))
	a.wait(first, stateDone)
	call("GET", "/v1/batches/{id}", "/v1/batches/"+first, nil, 200)
	write := map[string]any{"conversation_id": "c1", "calls": []map[string]any{
		{"id": "w", "name": "write_file", "arguments": map[string]any{"path": "a.txt", "content": "new\n"}}}}
	held := batchID(call("POST", "/v1/batches", "/v1/batches", write, 201))
	call("GET", "/v1/batches", "/v1/batches?state=awaiting_approval", nil, 200)
	call("GET", "/v1/batches", "/v1/batches?state=nope", nil, 400)
	call("POST", "/v1/batches/{id}/results", "/v1/batches/"+held+"/results", map[string]any{"results": []map[string]any{{"id": "w", "content": "x"}}}, 409)
	call("POST", "/v1/batches/{id}/decision", "/v1/batches/"+held+"/decision", map[string]any{"decision": "approve_selected", "ids": []string{"nope"}}, 400)
	call("POST", "/v1/batches/{id}/decision", "/v1/batches/"+held+"/decision", map[string]any{"decision": "approve_all"}, 200)
	a.wait(held, stateDone)
	call("GET", "/v1/batches/{id}", "/v1/batches/"+held, nil, 200)
	call("POST", "/v1/batches/{id}/decision", "/v1/batches/"+held+"/decision", map[string]any{"decision": "deny_all"}, 409)
	call("POST", "/v1/batches/{id}/cancel", "/v1/batches/"+held+"/cancel", nil, 409)
	call("GET", "/v1/batches/{id}", "/v1/batches/batch_0000000000000000", nil, 404)
	call("POST", "/v1/batches", "/v1/batches", map[string]any{"conversation_id": "c1", "calls": []any{}}, 400)
	cancel := batchID(call("POST", "/v1/batches", "/v1/batches", write, 201))
	call("POST", "/v1/batches/{id}/cancel", "/v1/batches/"+cancel+"/cancel", nil, 200)
	call("GET", "/v1/batches", "/v1/batches", nil, 200)

	p := serveAPI(t, Options{}, func(c *config.Config) { c.Tools.Mode = config.ModeParseOnly })
	a = p
	pending := batchID(call("POST", "/v1/batches", "/v1/batches", read, 201))
	call("POST", "/v1/batches/{id}/results", "/v1/batches/"+pending+"/results", map[string]any{"results": []map[string]any{{"id": "zz", "content": "ok", "is_error": false}}}, 400)
	call("POST", "/v1/batches/{id}/results", "/v1/batches/"+pending+"/results", map[string]any{"results": []map[string]any{{"id": "r", "content": "text", "is_error": false}, {"id": "x", "content": "no such tool", "is_error": true}}}, 200)
	p.wait(pending, stateDone)
	call("GET", "/v1/batches/{id}", "/v1/batches/"+pending, nil, 200)
}
