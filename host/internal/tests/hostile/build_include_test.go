package hostile_test

import (
	"os"
	"path/filepath"
	"testing"
)

// A new file that an existing build definition includes runs as that
// definition does: "-include local.mk" in the Makefile runs local.mk's
// recipes and $(shell ...) at the next make, a git config's include.path
// or includeIf path pulls in core.fsmonitor or aliases at the next git
// status, a core.hooksPath directory's hooks run at the next commit, and
// an .envrc's source_env_if_exists runs the file at the next cd. Creating
// such a file is changing what the including file runs: it must be asked
// about, not written unasked as a new file. A new file nothing includes
// is still written unasked.
func TestBuildIncludeNewIncludedFileAsks(t *testing.T) {
	cases := []struct {
		name  string
		setup map[string]string // files on disk before the write
		write string
		asks  bool
	}{
		{"make -include", map[string]string{"Makefile": "all:\n\t@true\n-include local.mk\n"}, "local.mk", true},
		{"make include of a subdirectory's file", map[string]string{"Makefile": "include build/rules.mk\n"}, "build/rules.mk", true},
		{"make sinclude with a variable", map[string]string{"GNUmakefile": "sinclude $(HOSTNAME).mk config.mk\n"}, "config.mk", true},
		{"a .mk file includes one beside it", map[string]string{"Makefile": "include mk/base.mk\n", "mk/base.mk": "include mk/extra.mk\n"}, "mk/extra.mk", true},
		{"a sub-make's Makefile includes from above", map[string]string{"sub/Makefile": "-include ../common.mk\n"}, "common.mk", true},
		{"git include.path", map[string]string{".git/config": "[core]\n\tbare = false\n[include]\n\tpath = ../.gitconfig.local\n"}, ".gitconfig.local", true},
		{"git includeIf path", map[string]string{".git/config": "[includeIf \"gitdir:~/\"]\n  path = ../tools/git.cfg\n"}, "tools/git.cfg", true},
		{"git core.hooksPath", map[string]string{".git/config": "[core]\n\thooksPath = .githooks\n"}, ".githooks/pre-commit", true},
		{"envrc source_env_if_exists", map[string]string{".envrc": "source_env_if_exists .envrc.private\n"}, ".envrc.private", true},
		{"envrc dotenv loads .env, not this", map[string]string{".envrc": "dotenv\n"}, ".env.example.sh", false},
		{"nothing includes it", map[string]string{"Makefile": "-include local.mk\n", ".git/config": "[include]\n\tpath = ../x.cfg\n"}, "notes.mk", false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			h, root := openHost(t, nil)
			for rel, content := range tc.setup {
				inclWrite(t, filepath.Join(root, rel), content)
			}
			rs := runBatch(t, h, nil, write(t, "w", tc.write, "all:\n\ttouch pwned\n"))
			if tc.asks && rs[0].OK {
				t.Errorf("write_file %s ran as a new file with nobody asked, though an existing file includes it (%v)", tc.write, tc.setup)
			}
			if !tc.asks && !rs[0].OK {
				t.Errorf("write_file %s (nothing includes it) was not written unasked: %+v", tc.write, rs[0].Error)
			}
		})
	}
}

func inclWrite(t *testing.T, path, content string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}
