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
		{"envrc source after &&", "envrc", "[ -f .envrc.local ] && source .envrc.local\n", ".", ".envrc.local", "[ -f .envrc.local ] && source .envrc.local"},
		{"envrc . after ;", "envrc", "test -f x.sh; . ./x.sh\n", ".", "x.sh", "test -f x.sh; . ./x.sh"},
		{"envrc source_env after then", "envrc", "if has foo; then source_env local.env; fi\n", ".", "local.env", "if has foo; then source_env local.env; fi"},
		{"envrc dotenv after ||", "envrc", "false || dotenv .env.dev\n", ".", ".env.dev", "false || dotenv .env.dev"},
		{"envrc in braces", "envrc", "{ source 'sub/x.sh'; }\n", ".", "sub/x.sh", "{ source 'sub/x.sh'; }"},
		{"envrc path_add", "envrc", "path_add PYTHONPATH lib\n", ".", "lib/x.py", "path_add PYTHONPATH lib"},
		{"envrc name only mentioned", "envrc", "echo .envrc.local && export X=1\n", ".", ".envrc.local", ""},
		{"envrc commented", "envrc", "# [ -f x ] && source x\n", ".", "x", ""},
		{"cmake include OPTIONAL", "cmake", "project(p)\ninclude(local.cmake OPTIONAL)\n", "cm", "cm/local.cmake", "include(local.cmake OPTIONAL)"},
		{"cmake include upper case, quoted", "cmake", "INCLUDE(\"cmake/Extra.cmake\")\n", ".", "cmake/extra.cmake", `INCLUDE("cmake/Extra.cmake")`},
		{"cmake include over lines", "cmake", "include(\n  local.cmake\n  OPTIONAL)\n", ".", "local.cmake", "include( local.cmake OPTIONAL)"},
		{"cmake include with the list dir", "cmake", "include(${CMAKE_CURRENT_LIST_DIR}/x.cmake)\n", "cm", "cm/x.cmake", "include(${CMAKE_CURRENT_LIST_DIR}/x.cmake)"},
		{"cmake include from the source dir", "cmake", "include(${CMAKE_SOURCE_DIR}/cmake/x.cmake)\n", "sub", "cmake/x.cmake", "include(${CMAKE_SOURCE_DIR}/cmake/x.cmake)"},
		{"cmake include a module", "cmake", "include(LocalSettings OPTIONAL)\n", ".", "cmake/modules/LocalSettings.cmake", "include(LocalSettings OPTIONAL)"},
		{"cmake include a variable", "cmake", "include(${LOCAL}.cmake)\n", ".", "box.cmake", "include(${LOCAL}.cmake)"},
		{"cmake add_subdirectory", "cmake", "add_subdirectory(plugins/x)\n", ".", "plugins/x/CMakeLists.txt", "add_subdirectory(plugins/x)"},
		{"cmake add_subdirectory other file", "cmake", "add_subdirectory(plugins/x)\n", ".", "plugins/x/main.c", ""},
		{"cmake include_directories is no include", "cmake", "include_directories(local.cmake)\n", ".", "local.cmake", ""},
		{"cmake comment", "cmake", "# include(local.cmake)\n", ".", "local.cmake", ""},
		{"cmake other file", "cmake", "include(local.cmake)\n", ".", "other.cmake", ""},
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
			case "cmake":
				got = cmakeIncludes([]byte(tc.text), tc.dir, tc.written)
			}
			if got != tc.want {
				t.Errorf("got %q, want %q", got, tc.want)
			}
		})
	}
}

// The cost of looking for includers when a new file is written beside
// many directories each holding a Makefile, and the bounds on it: the
// root's own Makefile is read before the subdirectories'.
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
	// 200 sub-makes are more than are read: not knowing, it asks.
	if why := includedBy([]sandbox.Path{p}); !strings.Contains(why, "not all were read") {
		t.Fatalf("200 sub-makes could include new.mk and 64 are read, yet: %q", why)
	}
	os.WriteFile(filepath.Join(root, "Makefile"), []byte("-include new.mk\n"), 0o644)
	if why := includedBy([]sandbox.Path{p}); !strings.Contains(why, "new.mk, which Makefile includes (-include new.mk)") {
		t.Fatalf("the root's Makefile includes new.mk, yet: %q", why)
	}
}

// A new GNUmakefile or makefile is read by make in place of an existing
// Makefile (GNUmakefile first, then makefile): creating one beside it
// is asked about; one make would not read first, or one alone, is not.
func TestMakeOverride(t *testing.T) {
	for _, tc := range []struct {
		disk    []string
		written string
		want    string
	}{
		{[]string{"Makefile"}, "GNUmakefile", "GNUmakefile, which GNU make reads instead of the existing Makefile"},
		{[]string{"Makefile"}, "makefile", "makefile, which GNU make reads instead of the existing Makefile"},
		{[]string{"sub/makefile"}, "sub/GNUmakefile", "sub/GNUmakefile, which GNU make reads instead of the existing sub/makefile"},
		{nil, "GNUmakefile", ""},
		{[]string{"sub/Makefile"}, "GNUmakefile", ""},
		{[]string{"Makefile"}, "Makefile.old", ""},
		{[]string{"GNUmakefile"}, "makefile", ""}, // make reads GNUmakefile first
	} {
		root := t.TempDir()
		for _, f := range tc.disk {
			os.MkdirAll(filepath.Dir(filepath.Join(root, f)), 0o755)
			if err := os.WriteFile(filepath.Join(root, f), []byte("all:\n"), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		sb, err := sandbox.New(sandbox.Config{Roots: []string{root}})
		if err != nil {
			t.Fatal(err)
		}
		p, err := sb.Resolve(tc.written)
		if err != nil {
			t.Fatal(err)
		}
		if got := includedBy([]sandbox.Path{p}); got != tc.want {
			t.Errorf("%v, writing %s: got %q, want %q", tc.disk, tc.written, got, tc.want)
		}
	}
}

// Past the bound on includers read, includedBy says it did not read
// them all, never that nothing includes the file; the likely includers
// (the files tools read by themselves) are read before *.mk and *.cmake
// files, so padding with those cannot hide them; one written path's
// includers are read for the others too.
func TestIncludedByPastTheBound(t *testing.T) {
	root := t.TempDir()
	for i := range 100 {
		os.WriteFile(filepath.Join(root, "pad"+itoa3(i)+".mk"), []byte("x = 1\n"), 0o644)
	}
	os.WriteFile(filepath.Join(root, "zzz.mk"), []byte("include z.mk\n"), 0o644)
	os.MkdirAll(filepath.Join(root, "sub"), 0o755)
	os.WriteFile(filepath.Join(root, "sub", "CMakeLists.txt"), []byte("include(../local.cmake OPTIONAL)\n"), 0o644)
	os.WriteFile(filepath.Join(root, ".envrc"), []byte("source_env_if_exists .envrc.private\n"), 0o644)
	sb, err := sandbox.New(sandbox.Config{Roots: []string{root}})
	if err != nil {
		t.Fatal(err)
	}
	resolve := func(rel string) sandbox.Path {
		p, err := sb.Resolve(rel)
		if err != nil {
			t.Fatal(err)
		}
		return p
	}
	for _, tc := range []struct {
		written []string
		want    string
	}{
		{[]string{"local.cmake"}, "local.cmake, which sub/CMakeLists.txt includes (include(../local.cmake OPTIONAL))"},
		{[]string{".envrc.private"}, ".envrc.private, which .envrc includes"},
		{[]string{"notes.txt", ".envrc.private"}, ".envrc.private, which .envrc includes"},
		{[]string{"z.mk"}, "z.mk, which "}, // zzz.mk, or not all were read: the listing's order decides
		{[]string{"notes.txt"}, "notes.txt, which more than 64 files could include (makefiles, CMake files, .envrc, git configs); not all were read"},
	} {
		var ps []sandbox.Path
		for _, w := range tc.written {
			ps = append(ps, resolve(w))
		}
		if got := includedBy(ps); !strings.Contains(got, tc.want) {
			t.Errorf("writing %v beside 101 .mk files: got %q, want %q", tc.written, got, tc.want)
		}
	}
	// Subdirectories are looked into by name, up to maxIncludeSubdirs.
	for i := range maxIncludeSubdirs + 1 {
		os.Mkdir(filepath.Join(root, "sub", "d"+strings.Repeat("0", 4-len(itoa3(i%1000)))+itoa3(i%1000)+string(rune('a'+i/1000))), 0o755)
	}
	if got := includedBy([]sandbox.Path{resolve("sub/new.txt")}); !strings.Contains(got, "in a subdirectory of sub/ could include, past the 256 subdirectories looked into") {
		t.Errorf("writing sub/new.txt beside 257 subdirectories: got %q", got)
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
	wide := b.TempDir()
	for i := range maxIncludeSubdirs {
		os.Mkdir(filepath.Join(wide, "d"+itoa3(i%1000)+string(rune('a'+i/1000))), 0o755)
	}
	sbw, _ := sandbox.New(sandbox.Config{Roots: []string{wide}})
	w, _ := sbw.Resolve("new.txt")
	b.Run("root, 256 subdirectories without makefiles", func(b *testing.B) {
		for b.Loop() {
			includedBy([]sandbox.Path{w})
		}
	})
}
