package e2e

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

// keysOf is an object's member names, sorted.
func keysOf(m map[string]any) []string {
	var keys []string
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

// search through the binary as an MCP client gets it: a definition is
// found, an ignored file holding it too is skipped and counted (and found
// with include_ignored), and structuredContent has the documented keys.
func TestSearchFindsDefinitionThroughCLI(t *testing.T) {
	w := newWorkspace(t)
	w.file(t, ".gitignore", "gen/\n")
	w.file(t, "src/engine.go", "package src\n\n// Plan is made here.\nfunc Plan() {}\n")
	w.file(t, "src/engine_test.go", "package src\n\nfunc TestPlan() { Plan() }\n")
	w.file(t, "gen/copy.go", "func Plan() {}\n")

	r := readToolsCall(t, w, "search", `{"query":"func Plan("}`)
	if r.IsError {
		t.Fatalf("search: %s", r.Content)
	}
	want := "src/engine.go:4:1: func Plan() {}\n1 matching line in 1 of 2 files searched; skipped: 1 ignored, 1 hidden\n"
	if r.Content != want {
		t.Errorf("content\n got %q\nwant %q", r.Content, want)
	}
	s := r.StructuredContent
	if got, want := keysOf(s), []string{"files_matched", "files_searched", "matches", "skipped", "total_is_lower_bound", "total_matches", "truncated"}; !slices.Equal(got, want) {
		t.Errorf("structuredContent keys %v, want %v", got, want)
	}
	if sk, _ := s["skipped"].(map[string]any); sk["ignored"] != 1.0 || sk["hidden"] != 1.0 || sk["binary"] != 0.0 || sk["too_large"] != 0.0 {
		t.Errorf("skipped %v, want 1 ignored (gen/), 1 hidden (.gitignore)", s["skipped"])
	}
	ms, _ := s["matches"].([]any)
	if len(ms) != 1 {
		t.Fatalf("matches %v", s["matches"])
	}
	m := ms[0].(map[string]any)
	if got, want := keysOf(m), []string{"column", "line", "match_text", "path"}; !slices.Equal(got, want) {
		t.Errorf("match keys %v, want %v", got, want)
	}
	if m["path"] != "src/engine.go" || m["line"] != 4.0 || m["column"] != 1.0 || m["match_text"] != "func Plan(" {
		t.Errorf("match %v", m)
	}

	r = readToolsCall(t, w, "search", `{"query":"func Plan(","include_ignored":true,"output":"files"}`)
	if want := "gen/copy.go (1 match)\nsrc/engine.go (1 match)\n2 files with matches (2 matching lines) of 3 files searched; skipped: 1 hidden\n"; r.Content != want {
		t.Errorf("include_ignored, files\n got %q\nwant %q", r.Content, want)
	}
}

// 10,000 matching lines with max_results 50: 50 shown, the total
// counted whole, and the result says how to see more.
func TestSearchTruncationIsHonestThroughCLI(t *testing.T) {
	w := newWorkspace(t)
	var b strings.Builder
	for i := range 2000 {
		fmt.Fprintf(&b, "needle %d\n", i)
	}
	for i := range 5 {
		w.file(t, fmt.Sprintf("f%d.txt", i), b.String())
	}
	r := readToolsCall(t, w, "search", `{"query":"needle","max_results":50}`)
	if n := strings.Count(r.Content, ": needle "); n != 50 {
		t.Errorf("%d lines shown, want 50", n)
	}
	if !strings.Contains(r.Content, "\n50 of 10,000 matching lines in 5 of 5 files searched\nTo see more: raise max_results (up to 2,000); narrow path or include_paths\n") {
		t.Errorf("totals:\n%s", r.Content[max(0, len(r.Content)-300):])
	}
	if s := r.StructuredContent; s["total_matches"] != 10000.0 || s["truncated"] != true || s["total_is_lower_bound"] != false || len(s["matches"].([]any)) != 50 {
		t.Errorf("structured totals: total %v truncated %v lower bound %v", s["total_matches"], s["truncated"], s["total_is_lower_bound"])
	}
}

// glob through the binary: ** patterns, a ! exclusion, the most recently
// modified first with sort mtime, and structuredContent's keys.
func TestGlobThroughCLI(t *testing.T) {
	w := newWorkspace(t)
	base := time.Date(2026, 3, 4, 5, 6, 7, 0, time.UTC)
	for i, name := range []string{"a_test.go", "pkg/b_test.go", "pkg/deep/c_test.go", "vendor/v_test.go", "pkg/b.go"} {
		w.file(t, name, "package x\n")
		mt := base.Add(time.Duration(i) * time.Hour)
		if err := os.Chtimes(filepath.Join(w.dir, name), mt, mt); err != nil {
			t.Fatal(err)
		}
	}
	r := readToolsCall(t, w, "glob", `{"patterns":["**/*_test.go","!vendor/**"]}`)
	if !strings.HasPrefix(r.Content, "a_test.go\npkg/b_test.go\npkg/deep/c_test.go\n3 matching paths, of ") {
		t.Errorf("by path:\n%s", r.Content)
	}
	r = readToolsCall(t, w, "glob", `{"patterns":["**/*_test.go"],"sort":"mtime"}`)
	if !strings.HasPrefix(r.Content, "vendor/v_test.go\npkg/deep/c_test.go\npkg/b_test.go\na_test.go\n4 matching paths, of ") || !strings.Contains(r.Content, "most recently modified first") {
		t.Errorf("by mtime:\n%s", r.Content)
	}
	s := r.StructuredContent
	if got, want := keysOf(s), []string{"files", "skipped", "total", "total_is_lower_bound", "truncated"}; !slices.Equal(got, want) {
		t.Errorf("structuredContent keys %v, want %v", got, want)
	}
	files, _ := s["files"].([]any)
	if len(files) != 4 || s["total"] != 4.0 {
		t.Fatalf("files %v total %v", files, s["total"])
	}
	f := files[0].(map[string]any)
	if f["path"] != "vendor/v_test.go" || f["type"] != "file" || f["size"] != 10.0 || f["mtime"] != base.Add(3*time.Hour).Format(time.RFC3339) {
		t.Errorf("first file %v", f)
	}
}
