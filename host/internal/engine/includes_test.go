package engine

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/toolhost/toolhost/host/internal/sandbox"
)

func TestIncludeLines(t *testing.T) {
	for _, tc := range []struct {
		name, kind, text, dir, written, want string
	}{
		{"make -include", "make", "all:\n\ttrue\n-include local.mk\n", ".", "local.mk", "-include local.mk"},
		{"make several names", "make", "include a.mk b.mk\n", ".", "b.mk", "include a.mk b.mk"},
		{"make variable", "make", "sinclude $(HOST).mk\n", ".", "box.mk", "sinclude $(HOST).mk"},
		{"make from a subdirectory", "make", "include ../rules.mk\n", "sub", "rules.mk", "include ../rules.mk"},
		{"make relative to the top", "make", "include mk/x.mk\n", "mk", "mk/x.mk", "include mk/x.mk"},
		{"make case ignored", "make", "include Local.MK\n", ".", "local.mk", "include Local.MK"},
		{"make recipe line is no include", "make", "all:\n\tinclude local.mk\n", ".", "local.mk", ""},
		{"make comment", "make", "# -include local.mk\n", ".", "local.mk", ""},
		{"make other file", "make", "-include local.mk\n", ".", "other.mk", ""},
		{"make above the root", "make", "include ../../x.mk\n", ".", "x.mk", ""},
		{"git include.path", "git", "[include]\n\tpath = ../extra.cfg\n", ".git", "extra.cfg", "path = ../extra.cfg"},
		{"git includeIf", "git", "[includeIf \"gitdir:/w/\"]\npath = \"../w.cfg\"\n", ".git", "w.cfg", `path = "../w.cfg"`},
		{"git hooksPath", "git", "[core]\n\thooksPath = tools/hooks/\n", ".git", "tools/hooks/pre-push", "hooksPath = tools/hooks/"},
		{"git hooksPath not below", "git", "[core]\n\thooksPath = tools/hooks\n", ".git", "tools/other", ""},
		{"git fsmonitor", "git", "[core]\n\tfsmonitor = ./fsmon.sh\n", ".git", "fsmon.sh", "fsmonitor = ./fsmon.sh"},
		{"git alias", "git", "[alias]\n\tst = !./scripts/st.sh --short\n", ".git", "scripts/st.sh", "st = !./scripts/st.sh --short"},
		{"git path in another section", "git", "[user]\n\tpath = x.cfg\n", ".git", ".git/x.cfg", ""},
		{"git home include", "git", "[include]\n\tpath = ~/x.cfg\n", ".", "x.cfg", ""},
		{"envrc source_env_if_exists", "envrc", "source_env_if_exists .envrc.local\n", ".", ".envrc.local", "source_env_if_exists .envrc.local"},
		{"envrc dotenv default", "envrc", "dotenv_if_exists\n", ".", ".env", "dotenv_if_exists"},
		{"envrc dotenv named", "envrc", "dotenv 'config/dev.env'\n", ".", "config/dev.env", "dotenv 'config/dev.env'"},
		{"envrc PATH_add", "envrc", "PATH_add bin\n", ".", "bin/git", "PATH_add bin"},
		{"envrc PATH_add deeper", "envrc", "PATH_add bin\n", ".", "bin/sub/git", ""},
		{"envrc export", "envrc", "export X=local.sh\n", ".", "local.sh", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var got string
			switch tc.kind {
			case "make":
				got = makeIncludes([]byte(tc.text), tc.dir, tc.written)
			case "git":
				got = gitIncludes([]byte(tc.text), tc.dir, ".", tc.written)
			case "envrc":
				got = envrcIncludes([]byte(tc.text), tc.dir, tc.written)
			}
			if got != tc.want {
				t.Errorf("got %q, want %q", got, tc.want)
			}
		})
	}
}

// The cost of looking for includers when a new file is written beside
// many directories each holding a Makefile, and the bounds on it.
func TestIncludedByBounded(t *testing.T) {
	root := t.TempDir()
	for i := range 200 {
		dir := filepath.Join(root, "d"+strings.Repeat("x", i%7)+string(rune('a'+i%26))+itoa3(i))
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		os.WriteFile(filepath.Join(dir, "Makefile"), []byte(strings.Repeat("x = 1\n", 20000)), 0o644)
	}
	sb, err := sandbox.New(sandbox.Config{Roots: []string{root}})
	if err != nil {
		t.Fatal(err)
	}
	p, err := sb.Resolve("new.mk")
	if err != nil {
		t.Fatal(err)
	}
	if why := includedBy([]sandbox.Path{p}); why != "" {
		t.Fatalf("nothing includes new.mk, yet: %s", why)
	}
	os.WriteFile(filepath.Join(root, "Makefile"), []byte("-include new.mk\n"), 0o644)
	if why := includedBy([]sandbox.Path{p}); !strings.Contains(why, "new.mk, which Makefile includes (-include new.mk)") {
		t.Fatalf("the root's Makefile includes new.mk, yet: %q", why)
	}
}

func itoa3(i int) string {
	return string([]byte{byte('0' + i/100), byte('0' + i/10%10), byte('0' + i%10)})
}

func BenchmarkIncludedBy(b *testing.B) {
	root := b.TempDir()
	for i := range 64 {
		dir := filepath.Join(root, "d"+itoa3(i))
		os.MkdirAll(dir, 0o755)
		os.WriteFile(filepath.Join(dir, "Makefile"), []byte(strings.Repeat("x = 1\n", 10000)), 0o644)
	}
	os.WriteFile(filepath.Join(root, "Makefile"), []byte("all:\n\ttrue\n"), 0o644)
	sb, _ := sandbox.New(sandbox.Config{Roots: []string{root}})
	p, _ := sb.Resolve("sub/new.txt")
	q, _ := sb.Resolve("new.txt")
	b.Run("subdirectory", func(b *testing.B) {
		for b.Loop() {
			includedBy([]sandbox.Path{p})
		}
	})
	b.Run("root, 64 sub-makes of 60 KB", func(b *testing.B) {
		for b.Loop() {
			includedBy([]sandbox.Path{q})
		}
	})
}
