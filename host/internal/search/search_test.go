package search

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/toolhost/toolhost/abi"
	"github.com/toolhost/toolhost/host/internal/sandbox"
)

var update = flag.Bool("update", false, "rewrite testdata/ripgrep.json from ripgrep's answers")

const testScanLimit = 2 << 20

// parityTree builds the tree of the ripgrep comparison: nested
// .gitignore files (negation, anchored, directory-only, **), hidden
// files, a binary file, a 5 MB one-line file, symbolic links in and out
// of the root, a denied .env and toolhost's protected state directory.
func parityTree(t testing.TB) (root, outside string) {
	t.Helper()
	root, outside = t.TempDir(), t.TempDir()
	files := map[string]string{
		".gitignore":                "*.log\n!keep.log\n/build/\n**/gen/**\nnode_modules/\n",
		"main.go":                   "package main\n\nfunc main() {\n\tprintln(\"needle\")\n}\n",
		"keep.log":                  "needle kept by negation\n",
		"drop.log":                  "needle in an ignored log\n",
		"build/out.txt":             "needle in anchored build\n",
		"src/build/x.txt":           "needle in src/build: not anchored there\n",
		"src/gen/a/b.go":            "needle generated\n",
		"src/lib.go":                "// Needle with a capital\nfunc lib() {} // needle\nno match here\n",
		"src/.gitignore":            "*.tmp\n!important.tmp\n/local.txt\n",
		"src/x.tmp":                 "needle tmp\n",
		"src/important.tmp":         "needle important\n",
		"src/local.txt":             "needle local\n",
		"src/deep/local.txt":        "needle deep local\n",
		"node_modules/pkg/index.js": "needle module\n",
		".hidden/h.txt":             "needle hidden dir\n",
		".dotfile":                  "needle dotfile\n",
		".env":                      "SECRET=needle\n",
		"secrets/.env":              "needle too\n",
		"bin.dat":                   "needle\x00binary\n",
		"crlf.txt":                  "first needle\r\nsecond\r\nthird NEEDLE\r\n",
		"docs/readme.md":            "a needle\nb\nc needle\n",
		"state/journal":             "needle in toolhost's state\n",
	}
	for name, content := range files {
		writeFile(t, filepath.Join(root, name), content)
	}
	writeFile(t, filepath.Join(root, "big.txt"), strings.Repeat("x", 5<<20)+"needle\n")
	writeFile(t, filepath.Join(outside, "secret.txt"), "needle outside\n")
	for link, target := range map[string]string{
		"link-out":       outside,
		"link-out.txt":   filepath.Join(outside, "secret.txt"),
		"src/link-in.go": filepath.Join(root, "main.go"),
		"link-dir":       filepath.Join(root, "src"),
	} {
		if err := os.Symlink(target, filepath.Join(root, link)); err != nil {
			t.Fatal(err)
		}
	}
	return root, outside
}

func newSandbox(t testing.TB, root string) *sandbox.Sandbox {
	t.Helper()
	sb, err := sandbox.New(sandbox.Config{Roots: []string{root}, DeniedPatterns: []string{"**/.env"},
		ProtectedDirs: []string{filepath.Join(root, "state")}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { sb.Close() })
	return sb
}

func runSearch(t testing.TB, sb *sandbox.Sandbox, ctx context.Context, req abi.SearchRequest, outputLimit int64) abi.SearchResult {
	t.Helper()
	if err := Normalize(&req); err != nil {
		t.Fatalf("Normalize(%+v): %v", req, err)
	}
	path := req.Path
	if path == "" {
		path = "."
	}
	start, err := sb.Resolve(path)
	if err != nil {
		t.Fatal(err)
	}
	res, err := Run(ctx, start, req, Options{Sandbox: sb, Display: func(p sandbox.Path) string { return p.Rel },
		ScanLimit: testScanLimit, OutputLimit: outputLimit})
	if err != nil {
		t.Fatalf("Run(%+v): %v", req, err)
	}
	return res
}

// parityCase is one query of the comparison, with ripgrep's flags for
// the same settings.
type parityCase struct {
	name string
	req  abi.SearchRequest
	rg   []string
	// skipped is what toolhost counts as left out (ripgrep does not say).
	skipped abi.SearchSkipped
}

func parityCases() []parityCase {
	return []parityCase{
		{name: "literal, ignore rules", req: abi.SearchRequest{Query: "needle", CaseSensitive: true},
			rg:      []string{"-s", "needle"},
			skipped: abi.SearchSkipped{Ignored: 6, Hidden: 4, Binary: 1, TooLarge: 1, Symlink: 4}},
		{name: "case-insensitive", req: abi.SearchRequest{Query: "NEEDLE"},
			rg:      []string{"-i", "NEEDLE"},
			skipped: abi.SearchSkipped{Ignored: 6, Hidden: 4, Binary: 1, TooLarge: 1, Symlink: 4}},
		{name: "regex", req: abi.SearchRequest{Query: `func \w+\(`, Regex: true, CaseSensitive: true},
			rg:      []string{"-s", `func \w+\(`},
			skipped: abi.SearchSkipped{Ignored: 6, Hidden: 4, Binary: 1, TooLarge: 1, Symlink: 4}},
		{name: "ignored included", req: abi.SearchRequest{Query: "needle", CaseSensitive: true, Ignored: true},
			rg:      []string{"-s", "--no-ignore", "needle"},
			skipped: abi.SearchSkipped{Hidden: 4, Binary: 1, TooLarge: 1, Symlink: 4}},
		{name: "hidden included", req: abi.SearchRequest{Query: "needle", CaseSensitive: true, Hidden: true},
			rg:      []string{"-s", "--hidden", "needle"},
			skipped: abi.SearchSkipped{Ignored: 6, Binary: 1, TooLarge: 1, Symlink: 4}},
		{name: "under src", req: abi.SearchRequest{Query: "needle", CaseSensitive: true, Path: "src"},
			rg:      []string{"-s", "needle", "src"},
			skipped: abi.SearchSkipped{Ignored: 3, Hidden: 1, Symlink: 1}},
		{name: "include glob", req: abi.SearchRequest{Query: "needle", Include: []string{"*.go"}},
			rg:      []string{"-i", "-g", "*.go", "needle"},
			skipped: abi.SearchSkipped{Ignored: 6, Hidden: 4, Symlink: 4}},
		{name: "exclude glob", req: abi.SearchRequest{Query: "needle", Exclude: []string{"docs"}},
			rg:      []string{"-i", "-g", "!docs", "needle"},
			skipped: abi.SearchSkipped{Ignored: 6, Hidden: 4, Binary: 1, TooLarge: 1, Symlink: 4}},
	}
}

// hit is one matching line, as both tools give it.
type hit struct {
	Path   string `json:"path"`
	Line   int    `json:"line"`
	Column int    `json:"column"`
}

// ripgrep's answers, checked in so the test runs without it.
func expected(t *testing.T) map[string][]hit {
	data, err := os.ReadFile(filepath.Join("testdata", "ripgrep.json"))
	if err != nil {
		t.Fatal(err)
	}
	var want map[string][]hit
	if err := json.Unmarshal(data, &want); err != nil {
		t.Fatal(err)
	}
	return want
}

// ripgrep runs rg with toolhost's settings on root; nil when rg is absent.
func ripgrep(t *testing.T, root string, args []string) []hit {
	rg, err := exec.LookPath("rg")
	if err != nil {
		return nil
	}
	cmd := exec.Command(rg, append([]string{"--no-require-git", "--no-ignore-global", "--no-config", "--sort", "path",
		"-n", "--column", "--no-heading", "--max-filesize", fmt.Sprint(testScanLimit), "-g", "!.env", "-g", "!state"}, args...)...)
	cmd.Dir = root
	out, err := cmd.Output()
	if err != nil && len(out) > 0 {
		t.Fatalf("rg %v: %v", args, err)
	}
	hits := []hit{}
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		if line == "" {
			continue
		}
		var h hit
		parts := strings.SplitN(line, ":", 4)
		if len(parts) < 4 {
			t.Fatalf("rg line %q", line)
		}
		h.Path = strings.TrimPrefix(parts[0], "./")
		fmt.Sscan(parts[1], &h.Line)
		fmt.Sscan(parts[2], &h.Column)
		hits = append(hits, h)
	}
	return hits
}

func TestSearchAsRipgrep(t *testing.T) {
	root, _ := parityTree(t)
	sb := newSandbox(t, root)
	want := expected(t)
	rgWant := map[string][]hit{}
	for _, c := range parityCases() {
		t.Run(c.name, func(t *testing.T) {
			res := runSearch(t, sb, context.Background(), c.req, 1<<20)
			got := []hit{}
			for _, m := range res.Matches {
				got = append(got, hit{Path: m.Path, Line: m.Line, Column: m.Column})
			}
			if rg := ripgrep(t, root, c.rg); rg != nil {
				rgWant[c.name] = rg
				if !slices.Equal(got, rg) {
					t.Errorf("toolhost found %v\n ripgrep found %v", got, rg)
				}
			}
			if !*update && !slices.Equal(got, want[c.name]) {
				t.Errorf("toolhost found %v\n checked-in ripgrep answer %v", got, want[c.name])
			}
			if res.Skipped != c.skipped {
				t.Errorf("skipped %+v, want %+v", res.Skipped, c.skipped)
			}
			if res.TotalMatches != len(got) || res.Truncated || res.TotalIsLowerBound {
				t.Errorf("totals %d (lower bound %v, truncated %v) for %d matches", res.TotalMatches, res.TotalIsLowerBound, res.Truncated, len(got))
			}
			for _, m := range res.Matches {
				if strings.Contains(m.Path, ".env") || strings.HasPrefix(m.Path, "state") || strings.Contains(m.Text, "outside") {
					t.Errorf("a denied, protected or outside file was searched: %+v", m)
				}
			}
		})
	}
	if *update {
		if len(rgWant) != len(parityCases()) {
			t.Fatal("-update needs rg installed")
		}
		data, _ := json.MarshalIndent(rgWant, "", "  ")
		if err := os.WriteFile(filepath.Join("testdata", "ripgrep.json"), append(data, '\n'), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// Ten thousand matches and max_results 50: 50 returned, all counted,
// and the result says it is truncated.
func TestSearchTruncatedTotals(t *testing.T) {
	root := t.TempDir()
	for i := range 100 {
		writeFile(t, filepath.Join(root, fmt.Sprintf("f%03d.txt", i)), strings.Repeat("match me\n", 100))
	}
	sb := newSandbox(t, root)
	res := runSearch(t, sb, context.Background(), abi.SearchRequest{Query: "match", MaxResults: 50}, 1<<20)
	if len(res.Matches) != 50 || res.TotalMatches != 10_000 || !res.Truncated || res.TotalIsLowerBound ||
		res.StoppedBy != abi.StoppedMaxResults || res.FilesSearched != 100 || res.FilesMatched != 100 {
		t.Fatalf("got %d matches, total %d, truncated %v, lower bound %v, stopped by %q, %d/%d files",
			len(res.Matches), res.TotalMatches, res.Truncated, res.TotalIsLowerBound, res.StoppedBy, res.FilesMatched, res.FilesSearched)
	}
	if res.Matches[49].Path != "f000.txt" || res.Matches[49].Line != 50 {
		t.Errorf("the 50th match is %s:%d, want f000.txt:50 (path then line order)", res.Matches[49].Path, res.Matches[49].Line)
	}
	// A small output limit keeps fewer, and says why.
	res = runSearch(t, sb, context.Background(), abi.SearchRequest{Query: "match", MaxResults: 2000}, 4<<10)
	if res.StoppedBy != abi.StoppedOutputLimit || len(res.Matches) == 0 || len(res.Matches) >= 100 || res.TotalMatches != 10_000 {
		t.Errorf("with a 4 KiB output limit: %d matches, total %d, stopped by %q", len(res.Matches), res.TotalMatches, res.StoppedBy)
	}
	// Files and count modes count the same.
	files := runSearch(t, sb, context.Background(), abi.SearchRequest{Mode: abi.SearchFiles, Query: "match", MaxResults: 10}, 1<<20)
	count := runSearch(t, sb, context.Background(), abi.SearchRequest{Mode: abi.SearchCount, Query: "match"}, 1<<20)
	if len(files.Files) != 10 || files.Files[0].Matches != 100 || files.TotalMatches != 10_000 || count.TotalMatches != 10_000 || len(count.Matches) != 0 {
		t.Errorf("files mode %d files (first %d matches), total %d; count mode total %d", len(files.Files), files.Files[0].Matches, files.TotalMatches, count.TotalMatches)
	}
}

// A deadline stops the search with what it found, and the total says
// "at least".
func TestSearchDeadline(t *testing.T) {
	root := t.TempDir()
	for i := range 2000 {
		writeFile(t, filepath.Join(root, fmt.Sprintf("d%02d/f%04d.txt", i%20, i)), strings.Repeat("match me\n", 2000))
	}
	sb := newSandbox(t, root)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Millisecond)
	defer cancel()
	res := runSearch(t, sb, ctx, abi.SearchRequest{Query: "match", Mode: abi.SearchCount}, 1<<20)
	if !res.TotalIsLowerBound || res.StoppedBy != abi.StoppedDeadline || !res.Truncated {
		t.Fatalf("lower bound %v, stopped by %q, truncated %v (searched %d files)", res.TotalIsLowerBound, res.StoppedBy, res.Truncated, res.FilesSearched)
	}
	if res.TotalMatches != res.FilesSearched*2000 {
		t.Errorf("total %d for %d files searched: a file was counted half", res.TotalMatches, res.FilesSearched)
	}
}

// Glob, list and the sort by modification time.
func TestSearchGlobAndList(t *testing.T) {
	root, _ := parityTree(t)
	sb := newSandbox(t, root)
	paths := func(files []abi.SearchFile) []string {
		var out []string
		for _, f := range files {
			out = append(out, f.Path+":"+f.Type)
		}
		return out
	}
	tests := []struct {
		req  abi.SearchRequest
		want []string
	}{
		{abi.SearchRequest{Mode: abi.SearchGlob, Include: []string{"**/*.go"}},
			[]string{"main.go:file", "src/lib.go:file", "src/link-in.go:symlink"}},
		{abi.SearchRequest{Mode: abi.SearchGlob, Include: []string{"**/*.go"}, Exclude: []string{"src/**"}},
			[]string{"main.go:file"}},
		{abi.SearchRequest{Mode: abi.SearchGlob, Include: []string{"*.{go,md}", "docs/*"}},
			[]string{"docs/readme.md:file", "main.go:file"}},
		{abi.SearchRequest{Mode: abi.SearchGlob, Include: []string{"**/*.go"}, Ignored: true},
			[]string{"main.go:file", "src/gen/a/b.go:file", "src/lib.go:file", "src/link-in.go:symlink"}},
		{abi.SearchRequest{Mode: abi.SearchList, Path: "src"},
			[]string{"src/build:dir", "src/deep:dir", "src/gen:dir", "src/important.tmp:file", "src/lib.go:file", "src/link-in.go:symlink"}},
		{abi.SearchRequest{Mode: abi.SearchList, Path: "src", Depth: 2, Hidden: true, Ignored: true},
			[]string{"src/.gitignore:file", "src/build:dir", "src/build/x.txt:file", "src/deep:dir", "src/deep/local.txt:file",
				"src/gen:dir", "src/gen/a:dir", "src/important.tmp:file", "src/lib.go:file", "src/link-in.go:symlink",
				"src/local.txt:file", "src/x.tmp:file"}},
	}
	for _, tt := range tests {
		res := runSearch(t, sb, context.Background(), tt.req, 1<<20)
		if got := paths(res.Files); !slices.Equal(got, tt.want) {
			t.Errorf("%+v:\n got %v\nwant %v", tt.req, got, tt.want)
		}
		if res.TotalMatches != len(tt.want) {
			t.Errorf("%+v: total %d, want %d", tt.req, res.TotalMatches, len(tt.want))
		}
	}
	old := time.Now().Add(-time.Hour)
	if err := os.Chtimes(filepath.Join(root, "main.go"), old, old); err != nil {
		t.Fatal(err)
	}
	res := runSearch(t, sb, context.Background(), abi.SearchRequest{Mode: abi.SearchGlob, Include: []string{"**/*.go"}, SortMTime: true, MaxResults: 2}, 1<<20)
	if got := paths(res.Files); len(got) != 2 || got[1] == "main.go:file" || !res.Truncated || res.TotalMatches != 3 {
		t.Errorf("most recent two: %v (truncated %v, total %d); main.go is the oldest", got, res.Truncated, res.TotalMatches)
	}
}

func TestNormalizeRefuses(t *testing.T) {
	for _, tt := range []struct {
		req   abi.SearchRequest
		field string
	}{
		{abi.SearchRequest{Mode: "grep", Query: "x"}, "mode"},
		{abi.SearchRequest{}, "query"},
		{abi.SearchRequest{Query: "x", ContextLines: 11}, "context_lines"},
		{abi.SearchRequest{Query: "x", ContextLines: -1}, "context_lines"},
		{abi.SearchRequest{Query: "x", MaxResults: -5}, "max_results"},
		{abi.SearchRequest{Query: "x", Include: []string{"[abc"}}, "include_paths"},
		{abi.SearchRequest{Query: "x", Exclude: make([]string, 101)}, "include_paths"},
		{abi.SearchRequest{Mode: abi.SearchList, Depth: 17}, "depth"},
		{abi.SearchRequest{Mode: abi.SearchGlob}, "patterns"},
		{abi.SearchRequest{Mode: abi.SearchGlob, Include: []string{strings.Repeat("{a,*}", 28) + "x"}}, "patterns"},
		{abi.SearchRequest{Query: "x", Exclude: []string{"{a,b,c,d,e,f,g,h,i,j,k,l,m,n,o,p,q,r,s,t,u,v,w,x,y,z,0,1,2,3,4,5,6}"}}, "exclude_paths"},
		{abi.SearchRequest{Query: strings.Repeat("x", MaxQueryBytes+1)}, "query"},
		{abi.SearchRequest{Mode: abi.SearchList, Render: "tree"}, "render"},
		{abi.SearchRequest{Mode: abi.SearchGlob, Include: []string{"*"}, Render: abi.RenderListing}, "render"},
		{abi.SearchRequest{Mode: abi.SearchList, RenderStructured: true}, "render_structured"},
	} {
		err := Normalize(&tt.req)
		re, ok := err.(*RequestError)
		if !ok || re.Field != tt.field || !strings.HasPrefix(re.Message, tt.field+": ") {
			t.Errorf("Normalize(%+v) = %v, want a refusal naming %s", tt.req, err, tt.field)
		}
	}
	ok := abi.SearchRequest{Mode: abi.SearchGlob, Include: []string{"**/*.{ts,tsx,js,jsx}", `a\{b,c\}{x,y}`}}
	if err := Normalize(&ok); err != nil {
		t.Errorf("a usual brace pattern refused: %v", err)
	}
	req := abi.SearchRequest{Query: "x", MaxResults: 1 << 30}
	if err := Normalize(&req); err != nil || req.MaxResults != MaxContentResults {
		t.Errorf("max_results 1<<30 → %d, %v; want clamped to %d", req.MaxResults, err, MaxContentResults)
	}
}

func writeFile(t testing.TB, name, content string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(name), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(name, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

func TestShownPath(t *testing.T) {
	for in, want := range map[string]string{"a/b.go": "a/b.go", "data\xff": `data\xff`, "d\xfe/x\uFFFD": `d\xfe/x` + "\uFFFD"} {
		got, invalid := shownPath(in)
		if got != want || invalid != (in != want) {
			t.Errorf("shownPath(%q) = %q, %v; want %q", in, got, invalid, want)
		}
	}
}
