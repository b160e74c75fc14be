package ignore

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"
)

func TestIgnored(t *testing.T) {
	tests := []struct {
		name    string
		root    string // the root's .gitignore
		sub     string // sub/.gitignore
		subIgn  string // sub/.ignore
		exclude string
		path    string
		dir     bool
		want    bool
	}{
		{name: "name at any depth", root: "*.log", path: "a/b/c.log", want: true},
		{name: "no match", root: "*.log", path: "a/b/c.txt"},
		{name: "dir only matches a dir", root: "build/", path: "x/build", dir: true, want: true},
		{name: "dir only skips a file", root: "build/", path: "x/build"},
		{name: "leading slash anchors", root: "/todo", path: "todo", want: true},
		{name: "anchored misses deeper", root: "/todo", path: "a/todo"},
		{name: "middle slash anchors", root: "doc/frotz", path: "doc/frotz", want: true},
		{name: "middle slash anchored", root: "doc/frotz", path: "a/doc/frotz"},
		{name: "leading **", root: "**/foo", path: "a/b/foo", want: true},
		{name: "leading ** at top", root: "**/foo", path: "foo", want: true},
		{name: "** in middle zero dirs", root: "a/**/b", path: "a/b", want: true},
		{name: "** in middle many dirs", root: "a/**/b", path: "a/x/y/b", want: true},
		{name: "trailing ** inside", root: "abc/**", path: "abc/x/y", want: true},
		{name: "trailing ** not itself", root: "abc/**", path: "abc", dir: true},
		{name: "negation re-includes", root: "*.log\n!keep.log", path: "keep.log"},
		{name: "later line wins", root: "!keep.log\n*.log", path: "keep.log", want: true},
		{name: "escaped bang is literal", root: `\!x`, path: "!x", want: true},
		{name: "escaped hash is literal", root: `\#x`, path: "#x", want: true},
		{name: "comment", root: "#x", path: "#x"},
		{name: "trailing spaces dropped", root: "x.txt   ", path: "x.txt", want: true},
		{name: "escaped trailing space kept", root: `x\ `, path: "x ", want: true},
		{name: "star does not cross slash", root: "a/*.c", path: "a/b/c.c"},
		{name: "question mark", root: "?.c", path: "a.c", want: true},
		{name: "class", root: "[a-c].txt", path: "b.txt", want: true},
		{name: "negated class", root: "[!a-c].txt", path: "b.txt"},
		{name: "CRLF file", root: "*.o\r\n*.a\r\n", path: "x.a", want: true},
		{name: "sub overrides root", root: "*.gen", sub: "!keep.gen", path: "sub/keep.gen"},
		{name: "root applies in sub", root: "*.gen", path: "sub/x.gen", want: true},
		{name: "sub pattern relative to sub", sub: "/only", path: "sub/only", want: true},
		{name: "sub anchored not at root", sub: "/only", path: "sub/a/only"},
		{name: ".ignore beats .gitignore", sub: "x", subIgn: "!x", path: "sub/x"},
		{name: "exclude lowest", exclude: "x", root: "!x", path: "x"},
		{name: "exclude applies", exclude: "x", path: "x", want: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var root []File
			if tt.exclude != "" {
				root = append(root, File{Name: "exclude", Data: []byte(tt.exclude)})
			}
			if tt.root != "" {
				root = append(root, File{Name: ".gitignore", Data: []byte(tt.root)})
			}
			var r *Rules
			r = r.Dir("", root...)
			if strings.HasPrefix(tt.path, "sub/") {
				var sub []File
				if tt.sub != "" {
					sub = append(sub, File{Name: ".gitignore", Data: []byte(tt.sub)})
				}
				if tt.subIgn != "" {
					sub = append(sub, File{Name: ".ignore", Data: []byte(tt.subIgn)})
				}
				r = r.Dir("sub", sub...)
			}
			if got := r.Ignored(tt.path, tt.dir); got != tt.want {
				t.Errorf("Ignored(%q, dir=%v) = %v, want %v", tt.path, tt.dir, got, tt.want)
			}
		})
	}
}

// The same answers as git's own, on a real repository with nested
// .gitignore files.
func TestIgnoredAsGit(t *testing.T) {
	git, err := exec.LookPath("git")
	if err != nil {
		t.Skip("git is not installed; the table test above covers the rules")
	}
	dir := t.TempDir()
	files := map[string]string{
		".gitignore":          "*.log\n!important.log\n/build/\ndocs/**/*.tmp\n**/cache\n[Tt]emp*\nvendor/\n",
		"src/.gitignore":      "!debug.log\n/local\ngen/*.go\n",
		"src/deep/.gitignore": "*.txt\n!keep.txt\n",
	}
	for name, content := range files {
		write(t, filepath.Join(dir, name), content)
	}
	run := func(args ...string) string {
		cmd := exec.Command(git, args...)
		cmd.Dir = dir
		cmd.Env = append(os.Environ(), "GIT_CONFIG_NOSYSTEM=1", "HOME="+dir)
		out, _ := cmd.Output()
		return string(out)
	}
	run("init", "-q")
	paths := []string{
		"a.log", "important.log", "src/debug.log", "src/x.log", "build", "src/build", "docs/a/b/c.tmp", "docs/c.tmp",
		"x.tmp", "a/cache", "cache", "Temp1", "temp", "src/Temp.go", "vendor", "src/local", "local", "src/gen/a.go",
		"src/gen/sub/a.go", "src/deep/a.txt", "src/deep/keep.txt", "src/deep/more/b.txt", "src/a.txt", "README",
	}
	isDir := map[string]bool{"build": true, "src/build": true, "a/cache": true, "cache": true, "vendor": true}
	for _, p := range paths {
		full := filepath.Join(dir, p)
		if isDir[p] {
			if err := os.MkdirAll(full, 0o755); err != nil {
				t.Fatal(err)
			}
			write(t, filepath.Join(full, "f"), "x")
		} else {
			write(t, full, "x")
		}
	}
	var r *Rules
	r = r.Dir("", File{Name: ".gitignore", Data: []byte(files[".gitignore"])})
	src := r.Dir("src", File{Name: ".gitignore", Data: []byte(files["src/.gitignore"])})
	deep := src.Dir("src/deep", File{Name: ".gitignore", Data: []byte(files["src/deep/.gitignore"])})
	gitIgnored := 0
	for _, p := range paths {
		rules := r
		switch {
		case strings.HasPrefix(p, "src/deep/"):
			rules = deep
		case strings.HasPrefix(p, "src/"):
			rules = src
		}
		target := p
		if isDir[p] {
			target = p + "/"
		}
		want := strings.TrimSpace(run("check-ignore", "--no-index", target)) != ""
		if want {
			gitIgnored++
		}
		// git judges a file by its parent directories too; the walker
		// never enters an ignored directory, so judge the way down.
		got := ignoredOnTheWay(rules, p, isDir[p])
		if got != want {
			t.Errorf("%s: Ignored = %v, git check-ignore says %v", p, got, want)
		}
	}
	if gitIgnored < 10 {
		t.Fatalf("git ignored only %d of %d paths: the repository was not set up as the test means", gitIgnored, len(paths))
	}
}

// ignoredOnTheWay judges p and each directory above it, as a walk does.
func ignoredOnTheWay(r *Rules, p string, dir bool) bool {
	parts := strings.Split(p, "/")
	for i := range parts {
		last := i == len(parts)-1
		if r.Ignored(strings.Join(parts[:i+1], "/"), !last || dir) {
			return true
		}
	}
	return false
}

// A hostile ignore file costs time linear in its size, never
// exponential in its stars, and at most MaxPatterns of it apply.
func TestIgnoredHostilePatterns(t *testing.T) {
	var b bytes.Buffer
	b.WriteString(strings.Repeat("**/", 300) + "x\n")
	b.WriteString(strings.Repeat("*a", 500) + "b\n")
	for i := range 100_000 {
		b.WriteString("p")
		b.WriteString(strings.Repeat("*", i%7))
		b.WriteString("q\n")
	}
	start := time.Now()
	var r *Rules
	r = r.Dir("", File{Name: ".gitignore", Data: b.Bytes()})
	path := strings.Repeat("a/", 200) + strings.Repeat("a", 1000)
	for range 10 {
		r.Ignored(path, false)
	}
	if r.Dropped() != 100_002-MaxPatterns {
		t.Errorf("Dropped = %d, want %d", r.Dropped(), 100_002-MaxPatterns)
	}
	// A generous bound that proves it stops, not a speed claim.
	if d := time.Since(start); d > 30*time.Second {
		t.Fatalf("10 matches against a hostile file took %v", d)
	}
}

func FuzzIgnored(f *testing.F) {
	f.Add("*.log\n!keep.log\n/build/\na/**/b\n[!x]y\n", "a/x/b", true)
	f.Add(`\!x`+"\n"+`\#y`+"\n"+strings.Repeat("**/", 20), "!x", false)
	f.Fuzz(func(t *testing.T, patterns, path string, dir bool) {
		var r *Rules
		r = r.Dir("", File{Name: ".gitignore", Data: []byte(patterns)})
		r.Ignored(path, dir)
	})
}

func write(t *testing.T, name, content string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(name), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(name, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}
func BenchmarkIgnored200Patterns(b *testing.B) {
	var sb strings.Builder
	for i := range 200 {
		switch i % 4 {
		case 0:
			fmt.Fprintf(&sb, "*.ext%d\n", i)
		case 1:
			fmt.Fprintf(&sb, "/build%d/\n", i)
		case 2:
			fmt.Fprintf(&sb, "**/cache%d/**\n", i)
		case 3:
			fmt.Fprintf(&sb, "name%d\n", i)
		}
	}
	var r *Rules
	r = r.Dir("", File{Name: ".gitignore", Data: []byte(sb.String())})
	path := "src/cmd/compile/internal/ssagen/ssa_test_file.go"
	for b.Loop() {
		r.Ignored(path, false)
	}
}

// Nested ignore files of long wildcard patterns are bounded across the
// whole walk, not only each: sixty of them took 5 GB of memory and a
// second each to compile.
func TestBudgetBoundsNestedFiles(t *testing.T) {
	var b bytes.Buffer
	for i := range 1000 {
		b.WriteString(strings.Repeat("*a", 250))
		fmt.Fprintf(&b, "%d\n", i)
	}
	budget := NewBudget(128 << 10)
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	start := time.Now()
	var r *Rules
	dir := ""
	for i := range 60 {
		dir = strings.TrimPrefix(fmt.Sprintf("%s/d%d", dir, i), "/")
		r = r.DirWithin(budget, dir, File{Name: ".gitignore", Data: b.Bytes()})
	}
	r.Ignored(dir+"/"+strings.Repeat("a", 200), false)
	runtime.ReadMemStats(&after)
	if d := time.Since(start); d > 60*time.Second {
		t.Errorf("sixty hostile files took %v", d)
	}
	// Each line is 501 bytes: the budget takes 261 of them in all.
	if applied := 60*1000 - r.Dropped(); applied > (128<<10)/501+1 {
		t.Errorf("%d patterns applied, more than the budget allows", applied)
	}
	if grew := int64(after.HeapAlloc) - int64(before.HeapAlloc); grew > 400<<20 {
		t.Errorf("the rules hold %d MB", grew>>20)
	}
}
