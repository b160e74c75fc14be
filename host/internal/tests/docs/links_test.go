package docs

import (
	"os"
	"path"
	"path/filepath"
	"strings"
	"testing"
)

// TestRelativeLinksResolve checks every Markdown link of the documents
// that points into the repository: the file or directory exists and, for
// a link with a fragment (docs/JOURNAL.md#undo), the target has that
// heading. Moving a section breaks the links into it; this finds them.
func TestRelativeLinksResolve(t *testing.T) {
	root := repoRoot()
	docs := map[string]doc{}
	load := func(rel string) doc {
		if d, ok := docs[rel]; ok {
			return d
		}
		d := parse(t, root, rel)
		docs[rel] = d
		return d
	}
	for _, rel := range markdownFiles(t, true) {
		for _, l := range load(rel).links() {
			target := l.text
			if strings.Contains(target, "://") || strings.HasPrefix(target, "mailto:") {
				continue
			}
			file, frag, _ := strings.Cut(target, "#")
			dest := rel
			if file != "" {
				dest = path.Clean(path.Join(path.Dir(rel), file))
				if strings.HasPrefix(dest, "../") {
					t.Errorf("%s:%d: link %s leaves the repository", rel, l.n, target)
					continue
				}
				if _, err := os.Stat(filepath.Join(root, filepath.FromSlash(dest))); err != nil {
					t.Errorf("%s:%d: link %s: %s does not exist", rel, l.n, target, dest)
					continue
				}
			}
			if frag == "" {
				continue
			}
			if !strings.HasSuffix(dest, ".md") {
				t.Errorf("%s:%d: link %s has a fragment but %s is not Markdown", rel, l.n, target, dest)
				continue
			}
			if !load(dest).anchors()[frag] {
				t.Errorf("%s:%d: link %s: %s has no heading whose anchor is #%s", rel, l.n, target, dest, frag)
			}
		}
	}
}

// TestNamedPathsExist checks the repository paths the documents' prose
// names in code spans (`host/internal/engine/plan.go`,
// `host/internal/tests/cplugin/build.sh`): each must exist, so a file that
// moved or went away is not left described. A span counts as a path when
// it has a slash and its first element is a top-level directory of the
// repository; spans with placeholders (<tool>, *, …, $VAR) are examples,
// not paths.
func TestNamedPathsExist(t *testing.T) {
	root := repoRoot()
	top := map[string]bool{}
	entries, err := os.ReadDir(root)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		if e.IsDir() && e.Name() != ".git" && e.Name() != "bin" {
			top[e.Name()] = true
		}
	}
	for _, rel := range markdownFiles(t, true) {
		for _, l := range parse(t, root, rel).prose {
			for _, span := range codeSpan.FindAllString(l.text, -1) {
				p := strings.Trim(span, "`")
				if !strings.Contains(p, "/") || strings.ContainsAny(p, " <>*…${}:=") {
					continue
				}
				first, _, _ := strings.Cut(p, "/")
				if !top[first] {
					continue
				}
				if _, err := os.Stat(filepath.Join(root, filepath.FromSlash(strings.TrimSuffix(p, "/")))); err != nil {
					t.Errorf("%s:%d: names %s, which does not exist", rel, l.n, p)
				}
			}
		}
	}
}
