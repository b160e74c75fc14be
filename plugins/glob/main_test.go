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
		{"one pattern", args{Patterns: []string{"**/*_test.go"}},
			abi.SearchRequest{Mode: "glob", Path: ".", Include: []string{"**/*_test.go"}, MaxResults: 1000}},
		{"! patterns become exclusions", args{Patterns: []string{"**/*.go", "!vendor/**", "*.md", "!**/*_test.go"}, Path: "src", Sort: "mtime", MaxResults: 50000, IncludeHidden: true, IncludeIgnored: true},
			abi.SearchRequest{Mode: "glob", Path: "src", Include: []string{"**/*.go", "*.md"}, Exclude: []string{"vendor/**", "**/*_test.go"}, MaxResults: 10000, Hidden: true, Ignored: true, SortMTime: true}},
		{"only exclusions match the rest", args{Patterns: []string{"!*.log"}, Sort: "path"},
			abi.SearchRequest{Mode: "glob", Path: ".", Include: []string{"**"}, Exclude: []string{"*.log"}, MaxResults: 1000}},
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
		{"no patterns", args{}, "patterns is empty"},
		{"a lone !", args{Patterns: []string{"*.go", "!"}}, `patterns[1] "!" is empty`},
		{"bad glob", args{Patterns: []string{"{a,b"}}, `patterns[0] "{a,b" is not a valid glob`},
		{"absolute", args{Patterns: []string{"!/etc/*"}}, `patterns[0] "!/etc/*"`},
		{"a .. component", args{Patterns: []string{"!a/../../*"}}, "has a .. component"},
		{"unknown sort", args{Patterns: []string{"*"}, Sort: "size"}, `sort "size" is not known`},
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

func TestStructuredFitsOutputSchema(t *testing.T) {
	s, err := jsonschema.CompileString("output_schema.json", outputSchema)
	if err != nil {
		t.Fatalf("outputSchema does not compile: %v", err)
	}
	if _, err := jsonschema.CompileString("schema.json", schema); err != nil {
		t.Fatalf("schema does not compile: %v", err)
	}
	for _, files := range [][]abi.SearchFile{nil, {{Path: "a.go", Type: "file", Size: 3}, {Path: "l", Type: "symlink"}}} {
		_, obj := searchtext.Glob(abi.SearchResult{Files: files, TotalMatches: len(files)}, searchtext.Scope{Glob: true}, false, 0)
		var v any
		if err := json.Unmarshal(obj, &v); err != nil {
			t.Fatalf("%s: %v", obj, err)
		}
		if err := s.Validate(v); err != nil {
			t.Errorf("%s does not fit the output schema: %v", obj, err)
		}
	}
}
