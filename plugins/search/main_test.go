package main

import (
	"encoding/json"
	"errors"
	"reflect"
	"strings"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v5"

	"github.com/toolhost/toolhost/abi"
	"github.com/toolhost/toolhost/internal/searchtext"
	"github.com/toolhost/toolhost/sdk"
)

func TestRequest(t *testing.T) {
	tests := []struct {
		name string
		a    args
		want abi.SearchRequest
	}{
		{"defaults", args{Query: "func main"},
			abi.SearchRequest{Mode: "content", Path: ".", Query: "func main", MaxResults: 200}},
		{"content clamps max_results to 2000 and keeps context",
			args{Query: "x", MaxResults: 9000, ContextLines: 3, IsRegex: true, CaseSensitive: true, Path: "src", IncludePaths: []string{"*.go"}, ExcludePaths: []string{"vendor/**"}, IncludeHidden: true, IncludeIgnored: true, Multiline: true},
			abi.SearchRequest{Mode: "content", Path: "src", Query: "x", Regex: true, CaseSensitive: true, Multiline: true, Include: []string{"*.go"}, Exclude: []string{"vendor/**"}, ContextLines: 3, MaxResults: 2000, Hidden: true, Ignored: true}},
		{"files: default 1000, no context", args{Query: "x", Output: "files", ContextLines: 2},
			abi.SearchRequest{Mode: "files", Path: ".", Query: "x", MaxResults: 1000}},
		{"count", args{Query: "x", Output: "count", MaxResults: 20000},
			abi.SearchRequest{Mode: "count", Path: ".", Query: "x", MaxResults: 10000}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, _, err := request(tt.a)
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("request\n got %+v\nwant %+v", got, tt.want)
			}
		})
	}
}

func TestRequestRefusals(t *testing.T) {
	tests := []struct {
		name string
		a    args
		want string
	}{
		{"empty query", args{}, "query is empty"},
		{"unknown output", args{Query: "x", Output: "lines"}, `output "lines" is not known`},
		{"context out of range", args{Query: "x", ContextLines: 11}, "context_lines 11"},
		{"bad include glob", args{Query: "x", IncludePaths: []string{"*.go", "a[b"}}, `include_paths[1] "a[b" is not a valid glob`},
		{"absolute exclude", args{Query: "x", ExcludePaths: []string{"/etc/**"}}, `exclude_paths[0] "/etc/**"`},
		{"a .. component", args{Query: "x", IncludePaths: []string{"../src/*.go"}}, "has a .. component"},
		{"too many globs", args{Query: "x", IncludePaths: make([]string, 101)}, "include_paths has 101 globs"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, _, err := request(tt.a)
			var e *sdk.Error
			if !errors.As(err, &e) || e.Kind != abi.KindBadArgs || !strings.Contains(e.Message, tt.want) {
				t.Errorf("err = %v, want BadArgs containing %q", err, tt.want)
			}
		})
	}
}

// Every shape the plugin sets as its structured object fits its
// declared output schema, which the host holds each result to.
func TestStructuredFitsOutputSchema(t *testing.T) {
	s, err := jsonschema.CompileString("output_schema.json", outputSchema)
	if err != nil {
		t.Fatalf("outputSchema does not compile: %v", err)
	}
	if _, err := jsonschema.CompileString("schema.json", schema); err != nil {
		t.Fatalf("schema does not compile: %v", err)
	}
	r := abi.SearchResult{
		Matches:       []abi.SearchMatch{{Path: "a.go", Line: 1, Column: 1, Text: "x", MatchText: "x", Before: []string{"b"}}},
		Files:         []abi.SearchFile{{Path: "a.go", Matches: 1}},
		FilesSearched: 1, FilesMatched: 1, TotalMatches: 1,
	}
	for _, mode := range []string{abi.SearchContent, abi.SearchFiles, abi.SearchCount} {
		for _, context := range []int{0, 2} {
			_, obj := searchtext.Search(r, mode, context, searchtext.Scope{}, 0)
			var v any
			if err := json.Unmarshal(obj, &v); err != nil {
				t.Fatalf("%s: %s: %v", mode, obj, err)
			}
			if err := s.Validate(v); err != nil {
				t.Errorf("%s context %d: %s does not fit the output schema: %v", mode, context, obj, err)
			}
		}
	}
}

func TestSummary(t *testing.T) {
	if got, _ := summary(args{Query: "func main", Path: "src"}); got != `Search for "func main" in src` {
		t.Errorf("summary %q", got)
	}
	got, _ := summary(args{Query: strings.Repeat("é", 100)})
	if !strings.HasSuffix(got, `…" in .`) || len(got) > 120 {
		t.Errorf("long query summary %q", got)
	}
}
