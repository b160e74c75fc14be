package sandbox

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// wantWriteDenied checks that CheckWrite and WriteFileAtomic both refuse
// p for reason, naming the path, and that the write changed nothing.
func wantWriteDenied(t *testing.T, s *Sandbox, p Path, reason Reason) *DenialError {
	t.Helper()
	before, beforeErr := os.ReadFile(p.Abs)
	err := s.CheckWrite(p)
	var de *DenialError
	if !errors.As(err, &de) || de.Reason != reason || !errors.Is(err, ErrDenied) {
		t.Fatalf("CheckWrite(%q) = %v; want a %v denial", p.Attempted, err, reason)
	}
	if !strings.Contains(de.Error(), strconv.Quote(p.Attempted)) {
		t.Errorf("message %q does not name the path %q", de.Error(), p.Attempted)
	}
	_, err = s.WriteFileAtomic(p, []byte("PWNED"), true)
	if !errors.As(err, &de) || de.Reason != reason {
		t.Errorf("WriteFileAtomic(%q) = %v; want a %v denial", p.Attempted, err, reason)
	}
	after, afterErr := os.ReadFile(p.Abs)
	if string(after) != string(before) || (beforeErr == nil) != (afterErr == nil) {
		t.Errorf("%s changed: %q (%v), was %q (%v)", p.Abs, after, afterErr, before, beforeErr)
	}
	return de
}

// Toolhost's configuration files, its lock file
// and git's internals at any depth can never be written, even with no
// read-only pattern configured; they stay readable.
func TestCheckWrite_ProtectedNames(t *testing.T) {
	bothModes(t, func(t *testing.T, fast bool) {
		f := newFixture(t, Config{ReadOnlyPatterns: nil})
		s := f.s
		if !fast {
			s = portable(s)
		}
		for name, content := range map[string]string{
			"toolhost.toml": "[tools]", "sub/.git/config": "[core]", "a/b/.git/hooks/pre-commit": "#!/bin/sh",
			"wt/.git": "gitdir: /elsewhere", "sub/toolhost.lock": "lock",
		} {
			mustWrite(t, filepath.Join(f.root, name), content)
		}
		mustSymlink(t, "toolhost.toml", filepath.Join(f.root, "cfg"))
		mustSymlink(t, "sub/.git", filepath.Join(f.root, "gitdir"))
		tests := []struct {
			path, pattern string // pattern "": writable
		}{
			{"toolhost.toml", "**/toolhost.toml"},
			{"./././sub/toolhost.yaml", "**/toolhost.yaml"},
			{"deep/x/toolhost.yml", "**/toolhost.yml"},
			{"sub/toolhost.lock", "**/toolhost.lock"},
			{"toolhost.toml/x", "**/toolhost.toml/**"},
			{".git/config", "**/.git/**"},
			{"sub/.git/config", "**/.git/**"},
			{"a/b/.git/hooks/pre-commit", "**/.git/**"},
			{"new/.git/hooks/post-checkout", "**/.git/**"},
			{"wt/.git", "**/.git"},
			{".git", "**/.git"},
			{"cfg", "**/toolhost.toml"},     // a symlink is judged by its target
			{"gitdir/config", "**/.git/**"}, // likewise for a parent
			{"toolhost.toml.bak", ""},
			{"sub/toolhost.tomlx", ""},
			{"my.git/config", ""},
			{".gitignore", ""},
			{".github/workflows/x.yml", ""},
			{"sub/git/config", ""},
		}
		for _, tt := range tests {
			t.Run(tt.path, func(t *testing.T) {
				p, err := s.Resolve(tt.path)
				if err != nil {
					t.Fatalf("Resolve(%q): %v (protected paths stay readable)", tt.path, err)
				}
				pattern, ro := s.ReadOnly(p)
				if tt.pattern == "" {
					if err := s.CheckWrite(p); err != nil || ro {
						t.Fatalf("CheckWrite(%q) = %v, ReadOnly %v %q; want writable", tt.path, err, ro, pattern)
					}
					return
				}
				// ReadOnly reports them too, for the callers that still use it.
				if !ro || pattern != tt.pattern {
					t.Errorf("ReadOnly(%q) = %q, %v; want %q", tt.path, pattern, ro, tt.pattern)
				}
				de := wantWriteDenied(t, s, p, Protected)
				if de.Pattern != tt.pattern || !strings.Contains(de.Error(), "no tool may change") || de.Reason.String() != "Protected" {
					t.Errorf("denial %q (pattern %q), want pattern %q and why", de.Error(), de.Pattern, tt.pattern)
				}
			})
		}
		for rel, want := range map[string]string{"toolhost.toml": "[tools]", "sub/.git/config": "[core]"} {
			if got, err := readAll(wantResolved(t, s, rel, rel)); err != nil || got != want {
				t.Errorf("read %s = %q, %v; protected files stay readable", rel, got, err)
			}
		}
		for _, rel := range []string{"sub/toolhost.yaml", "deep/x/toolhost.yml", "toolhost.toml/x", "new"} {
			if _, err := os.Lstat(filepath.Join(f.root, rel)); err == nil {
				t.Errorf("%s was created: %v", rel, err)
			}
		}
		noTempFiles(t, f.root)
	})
}

// A Child found by listing is held to the same rule as a resolved path.
func TestCheckWrite_ProtectedChildAndRoot(t *testing.T) {
	f := newFixture(t, Config{})
	mustWrite(t, filepath.Join(f.root, "sub", ".git", "config"), "[core]")
	gitDir := wantResolved(t, f.s, "sub/.git", "sub/.git")
	wantWriteDenied(t, f.s, gitDir.Child("config"), Protected)

	// A root that is itself inside a repository's .git directory: every
	// write in it is a write to git's internals.
	s, err := New(Config{Roots: []string{filepath.Join(f.root, "sub", ".git")}})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	p, err := s.Resolve("config")
	if err != nil {
		t.Fatal(err)
	}
	if de := wantWriteDenied(t, s, p, Protected); de.Pattern != "**/.git/**" {
		t.Errorf("pattern %q", de.Pattern)
	}
}

// Protected names are refused in every spelling some disk, git or Win32
// would take for them, on every system (red team after : a case-insensitive share mounted under Linux, trailing dots, 8.3 names),
// while names that only contain them are not.
func TestCheckWrite_ProtectedNameSpellings(t *testing.T) {
	f := newFixture(t, Config{})
	for _, fold := range []bool{false, true} {
		f.s.fold = fold
		tests := []struct {
			path    string
			denied  bool
			pattern string
		}{
			{"TOOLHOST.TOML", true, "**/toolhost.toml"},
			{"Sub/.GIT/config", true, "**/.git/**"},
			{"toolhost.toml.", true, "**/toolhost.toml"},
			{"sub/.git. /config", true, "**/.git/**"},
			{"sub/GIT~1/config", true, "**/GIT~1/**"},
			{"TOOLHO~1.TOM", true, "**/TOOLHO~1.TOM"},
			{"toolhost.toml.bak", false, ""},
			{"my.git", false, ""},
			{".gitignore", false, ""},
			{"sub/.github/x.yml", false, ""},
		}
		for _, tt := range tests {
			err := f.s.CheckWrite(wantResolved(t, f.s, tt.path, tt.path))
			var de *DenialError
			switch {
			case tt.denied && (!errors.As(err, &de) || de.Reason != Protected || de.Pattern != tt.pattern):
				t.Errorf("fold %v: CheckWrite(%q) = %v, want Protected by %s", fold, tt.path, err, tt.pattern)
			case !tt.denied && err != nil:
				t.Errorf("fold %v: CheckWrite(%q) = %v, want allowed", fold, tt.path, err)
			}
		}
	}
}

// Configured read-only patterns still apply, through the same check.
func TestCheckWrite_ReadOnlyPatterns(t *testing.T) {
	f := newFixture(t, Config{ReadOnlyPatterns: []string{"vendor/**"}})
	de := wantWriteDenied(t, f.s, wantResolved(t, f.s, "vendor/x.go", "vendor/x.go"), ReadOnly)
	if de.Pattern != "vendor/**" {
		t.Errorf("pattern %q", de.Pattern)
	}
	if err := f.s.CheckWrite(wantResolved(t, f.s, "a.txt", "a.txt")); err != nil {
		t.Errorf("a.txt: %v", err)
	}
}

// nested returns a relative path of n directories "d" and a final name.
func nested(n int, name string) string {
	return strings.Repeat("d/", n) + name
}

// Path length, component length and depth are bounded,
// refused with the limit, its key and the measured value, before a
// directory of a deep chain is made.
func TestResolve_PathLimits(t *testing.T) {
	f := newFixture(t, Config{})
	rootLen := len(f.root)
	long := strings.Repeat("n", 256)
	tests := []struct {
		name     string
		cfg      Config
		path     string
		key      string // "" for allowed
		measured int
	}{
		{"20,000 levels", Config{}, nested(20000, "f"), keyMaxPathBytes, rootLen + 1 + 40001},
		{"long component", Config{}, "sub/" + long, keyMaxComponentBytes, 256},
		{"255-byte component", Config{}, "sub/" + long[:255], "", 0},
		{"65 deep", Config{}, nested(64, "f"), keyMaxDepth, 65},
		{"64 deep", Config{}, nested(63, "f"), "", 0},
		{"configured bytes", Config{MaxPathBytes: rootLen + 10}, "sub/abcdefg", keyMaxPathBytes, rootLen + 12},
		{"configured bytes, at the limit", Config{MaxPathBytes: rootLen + 10}, "sub/abcde", "", 0},
		{"configured component", Config{MaxComponentBytes: 8}, "sub/123456789", keyMaxComponentBytes, 9},
		{"configured depth", Config{MaxDepth: 2}, "a/b/c.txt", keyMaxDepth, 3},
		{"configured depth, dots do not count", Config{MaxDepth: 2}, "./a/./b/.", "", 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := tt.cfg
			cfg.Roots = []string{f.root}
			s, err := New(cfg)
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			start := time.Now()
			p, err := s.Resolve(tt.path)
			if took := time.Since(start); took > time.Second {
				t.Errorf("Resolve took %v", took)
			}
			if tt.key == "" {
				if err != nil {
					t.Fatalf("Resolve: %v", err)
				}
				return
			}
			var de *DenialError
			if !errors.As(err, &de) || de.Reason != PathTooLong || de.Reason.String() != "LimitsExceeded" || p != (Path{}) {
				t.Fatalf("Resolve = %+v, %v; want a PathTooLong denial", p, err)
			}
			msg := de.Error()
			if de.Limit != tt.key || de.Measured != tt.measured {
				t.Errorf("limit %s measured %d, want %s %d", de.Limit, de.Measured, tt.key, tt.measured)
			}
			for _, want := range []string{tt.key, strconv.Itoa(de.Max), strconv.Itoa(tt.measured)} {
				if !strings.Contains(msg, want) {
					t.Errorf("message %q lacks %q", msg, want)
				}
			}
			if len(msg) > 1000 {
				t.Errorf("message is %d bytes long; a long path must be elided", len(msg))
			}
		})
	}
	if _, err := os.Lstat(filepath.Join(f.root, "d")); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("a directory was made: %v", err)
	}
}

// A symlink can make the canonical path deeper than the path as given;
// the limit holds for the canonical path.
func TestResolve_LimitsAfterSymlinks(t *testing.T) {
	f := newFixture(t, Config{})
	if err := os.MkdirAll(filepath.Join(f.root, filepath.FromSlash(nested(60, ""))), 0o755); err != nil {
		t.Fatal(err)
	}
	mustSymlink(t, nested(59, "d"), filepath.Join(f.root, "chain"))
	wantResolved(t, f.s, "chain/a/b/c", nested(60, "a/b/c"))
	p, err := f.s.Resolve("chain/a/b/c/e/f")
	var de *DenialError
	if !errors.As(err, &de) || de.Limit != keyMaxDepth || de.Measured != 65 || de.Resolved == "" {
		t.Fatalf("Resolve = %+v, %v; want a depth denial of the resolved path", p, err)
	}
}

func TestNew_NegativeLimit(t *testing.T) {
	for _, cfg := range []Config{{MaxPathBytes: -1}, {MaxComponentBytes: -1}, {MaxDepth: -1}} {
		cfg.Roots = []string{t.TempDir()}
		if s, err := New(cfg); err == nil || !strings.Contains(err.Error(), "tools.sandbox.max_path") {
			if s != nil {
				s.Close()
			}
			t.Errorf("New(%+v) = %v, want an error naming the key", cfg, err)
		}
	}
}

// A path that ends in a slash names a directory. Reads
// of it open only a directory; writes of it are refused.
func TestPath_TrailingSlash(t *testing.T) {
	bothModes(t, func(t *testing.T, fast bool) {
		f := newFixture(t, Config{})
		s := f.s
		if !fast {
			s = portable(s)
		}
		mustSymlink(t, "a.txt", filepath.Join(f.root, "link"))
		for _, tt := range []struct {
			path, rel string
			dir       bool
		}{
			{"a.txt", "a.txt", false}, {"a.txt/", "a.txt", true}, {"a.txt/.", "a.txt", true}, {"link/", "a.txt", true},
			{"sub", "sub", false}, {"sub/", "sub", true}, {"./sub/./", "sub", true}, {".", ".", false}, {"./", ".", true},
		} {
			p := wantResolved(t, s, tt.path, tt.rel)
			if p.Dir != tt.dir {
				t.Errorf("Resolve(%q).Dir = %v, want %v", tt.path, p.Dir, tt.dir)
			}
			_, errOpen := readAll(p)
			_, errFile := readAllFile(p)
			notDir := tt.dir && tt.rel == "a.txt"
			for _, err := range []error{errOpen, errFile} {
				if !notDir {
					// Reading a directory fails later, in Read, as before.
					if errors.Is(err, syscall.ENOTDIR) {
						t.Errorf("open %q: %v", tt.path, err)
					}
					continue
				}
				want := strconv.Quote(tt.path) + ` ends in a slash, so it names a directory, but "` + strings.TrimSuffix(strings.TrimSuffix(tt.path, "."), "/") + `" is a file; drop the slash to read the file`
				if !errors.Is(err, syscall.ENOTDIR) || err.Error() != want {
					t.Errorf("open %q = %v, want %q", tt.path, err, want)
				}
			}
		}
		// Listing a directory named with a slash works, and its entries
		// do not inherit the slash.
		top := wantResolved(t, s, "sub/", "sub")
		entries, err := top.ReadDir()
		if err != nil || len(entries) == 0 {
			t.Fatalf("ReadDir(sub/) = %v, %v", entries, err)
		}
		child := top.Child("b.txt")
		if got, err := readAll(child); child.Dir || err != nil || got != "B" {
			t.Errorf("child %+v: %q, %v", child, got, err)
		}
		if child.Attempted != "sub/b.txt" {
			t.Errorf("child named %q, want sub/b.txt", child.Attempted)
		}

		for _, path := range []string{"newdir/", "newdir/.", "a.txt/", "sub/", "x/y/"} {
			p, err := s.Resolve(path)
			if err != nil {
				t.Fatal(err)
			}
			de := wantWriteDenied(t, s, p, NamesDirectory)
			if !strings.Contains(de.Error(), "names a directory; to write a file give its name without the trailing slash") || de.Reason.String() != "InvalidPath" {
				t.Errorf("message %q", de.Error())
			}
		}
		for _, rel := range []string{"newdir", "x"} {
			if _, err := os.Lstat(filepath.Join(f.root, rel)); !errors.Is(err, fs.ErrNotExist) {
				t.Errorf("%s was created: %v", rel, err)
			}
		}
		if got, _ := os.ReadFile(filepath.Join(f.root, "a.txt")); string(got) != "A" {
			t.Errorf("a.txt = %q", got)
		}
	})
}

// The type is checked when the path is opened, not when it was resolved:
// a directory replaced by a file in between is refused.
func TestOpen_ReplacedByFile(t *testing.T) {
	f := newFixture(t, Config{})
	mustWrite(t, filepath.Join(f.root, "d", "x"), "X")
	p := wantResolved(t, f.s, "d/", "d")
	if err := os.RemoveAll(filepath.Join(f.root, "d")); err != nil {
		t.Fatal(err)
	}
	mustWrite(t, filepath.Join(f.root, "d"), "now a file")
	if _, err := readAll(p); !errors.Is(err, syscall.ENOTDIR) {
		t.Errorf("Open = %v, want ENOTDIR", err)
	}
}
