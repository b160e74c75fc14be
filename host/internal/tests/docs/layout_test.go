package docs

import (
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"sort"
	"strings"
	"testing"
)

// TestLayoutTableListsEveryPackage checks the README's layout table
// against the tree. It must list
//
//   - every top-level directory holding files (bin/, the build output,
//     and hidden directories aside), by a row for it or for anything in it,
//   - every directory of the module holding Go files, at any depth, except
//     testdata/ (fixtures) and nested modules (their own go.mod),
//   - every directory directly under host/internal/tests, Go or not (the
//     Node clients and the C plugin are test suites too).
//
// A row's first cell names one directory as a code span, from the
// repository root (`host/internal/engine`); an element written <like-this>
// stands for every directory there (`plugins/<tool>/`), for fixtures that
// are one kind of thing many times. Every row must name something that
// exists, so a row for a package that moved fails too.
func TestLayoutTableListsEveryPackage(t *testing.T) {
	root := repoRoot()
	rows := layoutRows(t, parse(t, root, "README.md"))
	if len(rows) == 0 {
		t.Fatal("README.md: no layout table (a ## Layout section whose table's first column names directories)")
	}
	want := wantedDirs(t, root)
	for _, r := range rows {
		if !anyMatch(r.text, want) {
			if _, err := os.Stat(filepath.Join(root, filepath.FromSlash(r.text))); err != nil {
				t.Errorf("README.md:%d: the layout table lists %s, which does not exist", r.n, r.text)
			}
		}
	}
	var missing []string
	for _, dir := range want {
		listed := false
		for _, r := range rows {
			// A top-level directory is listed by a row for it or for
			// anything in it (plugins/ by plugins/<tool>/).
			if match(r.text, dir) || !strings.Contains(dir, "/") && strings.HasPrefix(r.text, dir+"/") {
				listed = true
				break
			}
		}
		if !listed {
			missing = append(missing, dir)
		}
	}
	if len(missing) > 0 {
		t.Errorf("README.md: the layout table does not list %d director(ies); add a row for each, saying what it holds:\n  %s", len(missing), strings.Join(missing, "\n  "))
	}
}

// layoutRows returns the directories the README's layout table names,
// with their lines.
func layoutRows(t *testing.T, d doc) []proseLine {
	t.Helper()
	var rows []proseLine
	in := false
	for _, l := range d.prose {
		switch {
		case strings.HasPrefix(l.text, "## "):
			in = strings.TrimSpace(strings.TrimPrefix(l.text, "## ")) == "Layout"
		case in && strings.HasPrefix(l.text, "|"):
			cells := strings.Split(l.text, "|")
			if len(cells) < 3 {
				continue
			}
			for _, span := range codeSpan.FindAllString(cells[1], -1) {
				p := strings.TrimSuffix(strings.Trim(span, "`"), "/")
				rows = append(rows, proseLine{l.n, p})
			}
		}
	}
	return rows
}

// wantedDirs lists the directories the layout table must name, sorted.
func wantedDirs(t *testing.T, root string) []string {
	t.Helper()
	set := map[string]bool{}
	entries, err := os.ReadDir(root)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		if e.IsDir() && !hidden(e.Name()) && e.Name() != "bin" && holdsFiles(filepath.Join(root, e.Name())) {
			set[e.Name()] = true
		}
	}
	tests, err := os.ReadDir(filepath.Join(root, "host", "internal", "tests"))
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range tests {
		if e.IsDir() && !hidden(e.Name()) {
			set["host/internal/tests/"+e.Name()] = true
		}
	}
	err = filepath.WalkDir(root, func(p string, e fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, p)
		rel = filepath.ToSlash(rel)
		if e.IsDir() {
			name := e.Name()
			if rel != "." && (hidden(name) || name == "testdata" || name == "node_modules" || rel == "bin") {
				return filepath.SkipDir
			}
			if rel != "." {
				if _, err := os.Stat(filepath.Join(p, "go.mod")); err == nil {
					return filepath.SkipDir // a module of its own
				}
			}
			return nil
		}
		if strings.HasSuffix(p, ".go") && path.Dir(rel) != "." {
			set[path.Dir(rel)] = true
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for d := range set {
		out = append(out, d)
	}
	sort.Strings(out)
	return out
}

func hidden(name string) bool { return strings.HasPrefix(name, ".") }

// holdsFiles reports whether a regular file lies anywhere below dir.
func holdsFiles(dir string) bool {
	found := false
	filepath.WalkDir(dir, func(_ string, e fs.DirEntry, err error) error {
		if err == nil && e.Type().IsRegular() {
			found = true
			return filepath.SkipAll
		}
		return nil
	})
	return found
}

// match reports whether the table's path names dir; an element <x> of
// the path matches any one element.
func match(pattern, dir string) bool {
	pe, de := strings.Split(pattern, "/"), strings.Split(dir, "/")
	if len(pe) != len(de) {
		return false
	}
	for i := range pe {
		if !(pe[i] == de[i] || strings.HasPrefix(pe[i], "<") && strings.HasSuffix(pe[i], ">")) {
			return false
		}
	}
	return true
}

func anyMatch(pattern string, dirs []string) bool {
	for _, d := range dirs {
		if match(pattern, d) {
			return true
		}
	}
	return false
}
