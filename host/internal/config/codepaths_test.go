package config

import (
	"os"
	"strings"
	"testing"

	"github.com/bmatcuk/doublestar/v4"
)

// Every entry of the code-path list says which program loads it and why,
// is a valid glob, matches its own example (in the root and below it, as
// written by a tool) and appears once; the init file lists them all.
func TestCodePathEntries(t *testing.T) {
	seen := map[string]bool{}
	init := InitFile()
	for _, e := range CodePathEntries() {
		t.Run(e.Pattern, func(t *testing.T) {
			if e.Loader == "" || strings.TrimSpace(e.Why) == "" || e.Example == "" {
				t.Errorf("entry %q lacks its loader, its reason or its example: %+v", e.Pattern, e)
			}
			if !strings.HasPrefix(e.Pattern, "**/") || !doublestar.ValidatePattern(e.Pattern) {
				t.Errorf("pattern %q must be a valid glob starting with **/ (a file anywhere in a root)", e.Pattern)
			}
			for _, p := range []string{e.Example, "sub/dir/" + e.Example, "/home/u/project/" + e.Example} {
				if !doublestar.MatchUnvalidated(strings.ToLower(e.Pattern), strings.ToLower(p)) {
					t.Errorf("pattern %q does not match its example %q", e.Pattern, p)
				}
			}
			if seen[e.Pattern] {
				t.Errorf("pattern %q is listed twice", e.Pattern)
			}
			seen[e.Pattern] = true
			if !strings.Contains(init, `"`+e.Pattern+`"`) {
				t.Errorf("the init file's code_patterns lacks %q", e.Pattern)
			}
		})
	}
	// Files that only change how tools read data run nothing.
	for _, p := range []string{".editorconfig", ".gitattributes", "README.md", "Makefile", "package.json", "src/main.go", "model.pth", "CLAUDE.md"} {
		for _, pat := range DefaultCodePatterns() {
			if doublestar.MatchUnvalidated(strings.ToLower(pat), strings.ToLower(p)) {
				t.Errorf("%s matches %s, but runs nothing when created", p, pat)
			}
		}
	}
}

// docs/SECURITY.md documents every entry, in the table it keeps of them.
func TestCodePathEntriesDocumented(t *testing.T) {
	doc, err := os.ReadFile("../../../docs/SECURITY.md")
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range CodePathEntries() {
		row := "| `" + strings.TrimPrefix(e.Pattern, "**/") + "` | " + e.Loader + " | " + e.Why + " |"
		if !strings.Contains(string(doc), row) {
			t.Errorf("docs/SECURITY.md lacks the row\n%s", row)
		}
	}
}
