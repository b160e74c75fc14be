package hostile_test

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// Attack (hostile workspace, prompt-injected model): what a search costs
// is bounded by the call, not by the files or the arguments.
//   - a regex whose class takes in a line end ([^yz]) over a file of
//     20,000 lines ran to the end of the file at every line: 166 s, past
//     its 30 s deadline;
//   - a glob of 28 {a,*} groups took doublestar minutes on one name;
//   - sixty nested .gitignore files of long wildcard patterns grew the
//     process to 5 GB.
//
// Expected: each answers at once (a refusal for the glob), well within
// the call's deadline, with the right totals.
func TestSearchCostBounded(t *testing.T) {
	h, root := openHost(t, nil)
	if err := os.WriteFile(filepath.Join(root, "q.txt"), []byte(strings.Repeat("aaaaaaaaaaaaaaaaaaa\n", 20000)+"y\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(root, strings.Repeat("a", 40)), []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	var gitignore strings.Builder
	for i := range 1000 {
		fmt.Fprintf(&gitignore, "%s%d\n", strings.Repeat("*a", 250), i)
	}
	dir := filepath.Join(root, "deep")
	for i := range 30 {
		dir = filepath.Join(dir, fmt.Sprintf("d%d", i))
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, ".gitignore"), []byte(gitignore.String()), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(dir, "needle.txt"), []byte("needle\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		name, tool, args string
		ok               bool
		want             string
	}{
		{"class across lines", "search", `{"query":"[ab][^yz]*[yz]","is_regex":true,"output":"count"}`, true, "No matches in 3 files searched"},
		{"brace groups", "glob", `{"patterns":["` + strings.Repeat("{a,*}", 28) + `x"]}`, false, "groups"},
		{"nested hostile ignore files", "search", `{"query":"needle","path":"deep","output":"count"}`, true, "1 matching line"},
	} {
		start := time.Now()
		rs := runBatch(t, h, nil, call("s", tt.tool, tt.args))
		took := time.Since(start)
		text := rs[0].Content
		if rs[0].Error != nil {
			text = rs[0].Error.Message
		}
		if rs[0].OK != tt.ok || !strings.Contains(text, tt.want) {
			t.Errorf("%s: ok %v, %q; want ok %v and %q", tt.name, rs[0].OK, text, tt.ok, tt.want)
		}
		// Well within the 30 s default deadline: a bound that proves the
		// search stops, not a speed claim.
		if took > 20*time.Second {
			t.Errorf("%s: took %v", tt.name, took)
		}
	}
}
