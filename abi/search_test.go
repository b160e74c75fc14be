package abi

import (
	"encoding/json"
	"reflect"
	"testing"
)

func TestAppendSearchRequestIsJSON(t *testing.T) {
	for _, r := range []SearchRequest{
		{},
		{Mode: SearchContent, Path: "src", Query: `func "main"` + "\t\x01\\", Regex: true, CaseSensitive: true, Multiline: true,
			Include: []string{"*.go", "a/**"}, Exclude: []string{"vendor"}, ContextLines: 2, MaxResults: 50,
			Hidden: true, Ignored: true, SortMTime: true, Depth: 3},
		{Mode: SearchGlob, Query: "ünïcödé ✓"},
		{Mode: SearchList, Path: "src", Depth: 2, Render: RenderListing, RenderStructured: true},
	} {
		enc := AppendSearchRequest(nil, r)
		var got SearchRequest
		if err := json.Unmarshal(enc, &got); err != nil {
			t.Fatalf("%s: %v", enc, err)
		}
		if !reflect.DeepEqual(got, r) {
			t.Errorf("round trip of %s:\n got %+v\nwant %+v", enc, got, r)
		}
	}
	// Bytes that are not UTF-8 become U+FFFD, as encoding/json makes them.
	var got SearchRequest
	if err := json.Unmarshal(AppendSearchRequest(nil, SearchRequest{Query: "a\xffb"}), &got); err != nil || got.Query != "a\ufffdb" {
		t.Errorf("invalid UTF-8: %q, %v", got.Query, err)
	}
}

func TestRendered(t *testing.T) {
	for _, tt := range []struct{ text, obj string }{
		{"", ""},
		{"a/\nb  2\n2 entries\n", ""},
		{"x\n", `{"entries":[]}`},
	} {
		text, obj, err := DecodeRendered(AppendRendered([]byte("keep"), []byte(tt.text), []byte(tt.obj))[len("keep"):])
		if err != nil || string(text) != tt.text || string(obj) != tt.obj {
			t.Errorf("round trip of %q, %q: %q, %q, %v", tt.text, tt.obj, text, obj, err)
		}
	}
	for _, b := range [][]byte{nil, {1, 0, 0}, {5, 0, 0, 0, 'a'}, {0xff, 0xff, 0xff, 0xff}} {
		if _, _, err := DecodeRendered(b); err == nil {
			t.Errorf("DecodeRendered(%q) accepted a frame longer than its bytes", b)
		}
	}
}

func TestAppendExecAndJobRequestAreJSON(t *testing.T) {
	in := "line 1\nä \"q\" \\"
	since := int64(0)
	for _, r := range []ExecRequest{
		{Command: ""},
		{Command: "go test ./... 2>&1 | tail", Cwd: "sub dir", TimeoutMS: 1500, Env: map[string]string{"B": "2", "A": "x=y\n"},
			Stdin: &in, Background: true, Report: true},
	} {
		enc := AppendExecRequest(nil, r)
		var got ExecRequest
		if err := json.Unmarshal(enc, &got); err != nil {
			t.Fatalf("%s: %v", enc, err)
		}
		if !reflect.DeepEqual(got, r) {
			t.Errorf("round trip of %s:\n got %+v\nwant %+v", enc, got, r)
		}
	}
	for _, r := range []JobRequest{
		{Op: JobListOp},
		{Op: JobOutputOp, ID: "job-1", SinceByte: &since, MaxBytes: 10, WaitMS: 200},
		{Op: JobKillOp, ID: "job-2", Signal: "KILL"},
	} {
		enc := AppendJobRequest(nil, r)
		var got JobRequest
		if err := json.Unmarshal(enc, &got); err != nil {
			t.Fatalf("%s: %v", enc, err)
		}
		if !reflect.DeepEqual(got, r) {
			t.Errorf("round trip of %s:\n got %+v\nwant %+v", enc, got, r)
		}
	}
}
