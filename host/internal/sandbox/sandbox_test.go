package sandbox

import (
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// fixture is a root with a few files, including credentials, and a
// directory outside it holding a secret.
type fixture struct {
	s       *Sandbox
	root    string // canonical
	outside string // canonical
}

func newFixture(t testing.TB, cfg Config) fixture {
	t.Helper()
	root, outside := canonTempDir(t), canonTempDir(t)
	for name, content := range map[string]string{
		"a.txt": "A", "sub/b.txt": "B", "sub/server.pem": "PEM", ".ssh/id_rsa": "KEY",
		"deep/x/.gnupg/y": "G", "a/b/c.txt": "C",
	} {
		mustWrite(t, filepath.Join(root, name), content)
	}
	mustWrite(t, filepath.Join(outside, "secret.txt"), "SECRET")
	cfg.Roots = append([]string{root}, cfg.Roots...)
	s, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return fixture{s: s, root: root, outside: outside}
}

// canonTempDir is t.TempDir with symlinks resolved (macOS's /tmp is one).
func canonTempDir(t testing.TB) string {
	t.Helper()
	dir, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	return dir
}

// portable turns off the Linux fast paths (fstatat and openat2 on a
// directory handle), so the os.Root code that other platforms use runs
// here too.
func portable(s *Sandbox) *Sandbox {
	for _, r := range s.roots {
		r.fd = nil
	}
	return s
}

// bothModes runs fn with the fast paths on and off.
func bothModes(t *testing.T, fn func(t *testing.T, fast bool)) {
	for _, fast := range []bool{true, false} {
		t.Run(map[bool]string{true: "fast", false: "portable"}[fast], func(t *testing.T) { fn(t, fast) })
	}
}

func mustWrite(t testing.TB, path, content string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

func mustSymlink(t testing.TB, target, link string) {
	t.Helper()
	if err := os.Symlink(target, link); err != nil {
		t.Fatal(err)
	}
}

// wantDenied checks that Resolve refuses p for reason and says so clearly.
func wantDenied(t *testing.T, s *Sandbox, p string, reason Reason) *DenialError {
	t.Helper()
	got, err := s.Resolve(p)
	var de *DenialError
	if !errors.As(err, &de) || de.Reason != reason || !errors.Is(err, ErrDenied) {
		t.Fatalf("Resolve(%q) = %+v, %v; want a %v denial", p, got, err, reason)
	}
	if got != (Path{}) {
		t.Errorf("Resolve(%q) returned a Path with its denial: %+v", p, got)
	}
	if p != "" && !strings.Contains(de.Error(), strconv.Quote(p)) {
		t.Errorf("message %q does not name the path %q", de.Error(), p)
	}
	return de
}

func wantResolved(t *testing.T, s *Sandbox, p, rel string) Path {
	t.Helper()
	got, err := s.Resolve(p)
	if err != nil {
		t.Fatalf("Resolve(%q): %v", p, err)
	}
	if got.Rel != rel || got.Abs != filepath.Join(got.RootDir, filepath.FromSlash(rel)) || got.Attempted != p || got.Root == nil {
		t.Fatalf("Resolve(%q) = %+v; want Rel %q", p, got, rel)
	}
	return got
}

func TestResolve_T_SBX_01_Traversal(t *testing.T) {
	f := newFixture(t, Config{AllowAbsolute: true})
	tests := []struct {
		name, path string
		rel        string // "" means a Traversal denial
	}{
		{"parent", "../x", ""},
		{"up and out", "a/../../x", ""},
		{"up to root", "a/..", ""},
		{"dot then up", "./..", ""},
		{"bare", "..", ""},
		{"up and back in", "sub/../a.txt", ""},
		{"deep escape", "x/../../../etc/passwd", ""},
		{"trailing", "sub/b.txt/..", ""},
		{"doubled slashes", "sub//..//x", ""},
		{"absolute with dots", filepath.Join(f.root, "sub") + "/../a.txt", ""},
		// Names that merely contain dots are ordinary.
		{"dots in a name", "a..b", "a..b"},
		{"three dots", "...", "..."},
		{"dot dir", "./sub/./b.txt", "sub/b.txt"},
	}
	if filepath.Separator == '/' {
		// A backslash is an ordinary character on Unix, not a separator.
		tests = append(tests,
			struct{ name, path, rel string }{"backslash name", `..\x`, `..\x`},
			struct{ name, path, rel string }{"backslashes", `a\..\..\x`, `a\..\..\x`},
		)
	} else {
		tests = append(tests, struct{ name, path, rel string }{"backslash", `..\x`, ""})
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if tt.rel == "" {
				de := wantDenied(t, f.s, tt.path, Traversal)
				if !strings.Contains(de.Error(), `".."`) {
					t.Errorf("message %q does not say what rule was hit", de.Error())
				}
				return
			}
			wantResolved(t, f.s, tt.path, tt.rel)
		})
	}
}

func TestResolve_T_SBX_02_Absolute(t *testing.T) {
	f := newFixture(t, Config{})
	allowed := newFixture(t, Config{AllowAbsolute: true})
	// The same root reached through a symlink outside it: an absolute path
	// spelled that way is canonicalized into the root.
	alias := filepath.Join(allowed.outside, "alias")
	mustSymlink(t, allowed.root, alias)
	// "/x/r" does not contain "/x/rc".
	sibling := allowed.root + "c"
	mustWrite(t, filepath.Join(sibling, "f.txt"), "SIBLING")

	tests := []struct {
		name   string
		s      *Sandbox
		path   string
		reason Reason // when rel is ""
		rel    string
	}{
		{"system file, disallowed", f.s, "/etc/passwd", AbsolutePath, ""},
		{"inside the root, disallowed", f.s, filepath.Join(f.root, "a.txt"), AbsolutePath, ""},
		{"the root, disallowed", f.s, f.root, AbsolutePath, ""},
		{"inside the root, allowed", allowed.s, filepath.Join(allowed.root, "sub", "b.txt"), 0, "sub/b.txt"},
		{"the root, allowed", allowed.s, allowed.root, 0, "."},
		{"new file, allowed", allowed.s, filepath.Join(allowed.root, "new", "f.txt"), 0, "new/f.txt"},
		{"through an alias, allowed", allowed.s, filepath.Join(alias, "a.txt"), 0, "a.txt"},
		{"outside, allowed", allowed.s, filepath.Join(allowed.outside, "secret.txt"), PathOutsideSandbox, ""},
		{"filesystem root, allowed", allowed.s, "/", PathOutsideSandbox, ""},
		{"sibling with the root as prefix", allowed.s, filepath.Join(sibling, "f.txt"), PathOutsideSandbox, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if tt.rel == "" {
				wantDenied(t, tt.s, tt.path, tt.reason)
				return
			}
			wantResolved(t, tt.s, tt.path, tt.rel)
		})
	}
}

func TestResolve_T_SBX_03_DeniedPatterns(t *testing.T) {
	f := newFixture(t, Config{IncludeDefaultDenies: true, DeniedPatterns: []string{"secrets/**", "**/private/*.txt"}})
	mustSymlink(t, ".ssh/id_rsa", filepath.Join(f.root, "innocent"))
	mustSymlink(t, filepath.Join(f.root, ".ssh"), filepath.Join(f.root, "innocent-dir"))
	mustSymlink(t, "deep/x", filepath.Join(f.root, "x"))

	tests := []struct{ path, pattern string }{
		{".ssh/id_rsa", "**/.ssh/**"},
		{".ssh", "**/.ssh/**"},
		{".ssh/new", "**/.ssh/**"},
		{"sub/server.pem", "**/*.pem"},
		{"deep/x/.gnupg/y", "**/.gnupg/**"},
		{"x.key", "**/*.key"},
		{"sub/id_rsa.pub", "**/id_rsa*"},
		{"new/.ssh/config", "**/.ssh/**"},
		{"secrets/new.txt", "secrets/**"},             // relative to the root
		{"sub/private/notes.txt", "**/private/*.txt"}, // on the absolute path
		// Matched on the canonical path: innocent names that lead there.
		{"innocent", "**/.ssh/**"},
		{"innocent-dir/id_rsa", "**/id_rsa*"}, // as written, before the link
		{"innocent-dir/new", "**/.ssh/**"},
		{"x/.gnupg/y", "**/.gnupg/**"},
	}
	for _, tt := range tests {
		t.Run(tt.path, func(t *testing.T) {
			de := wantDenied(t, f.s, tt.path, DeniedPatternMatched)
			if de.Pattern != tt.pattern {
				t.Errorf("pattern %q; want pattern %q", de.Pattern, tt.pattern)
			}
			// A denial names no path but the one written: where a link
			// in a denied place leads is not told.
			if written := filepath.Join(f.root, tt.path); de.Resolved != "" && de.Resolved != written {
				t.Errorf("resolved %q; want %q or nothing", de.Resolved, written)
			}
			if !strings.Contains(de.Error(), tt.pattern) {
				t.Errorf("message %q does not name the pattern", de.Error())
			}
		})
	}
	for _, p := range []string{"a.txt", "sub/b.txt", "sub/private/notes.md", "ssh/id", "keys.txt"} {
		wantResolved(t, f.s, p, p)
	}
	// Without the defaults only the configured patterns apply.
	plain := newFixture(t, Config{})
	wantResolved(t, plain.s, ".ssh/id_rsa", ".ssh/id_rsa")
}

// Where filesystems are case-insensitive (macOS, Windows) a different
// spelling names the same file, so matching ignores case there.
func TestDenied_CaseInsensitiveWhereFilesystemsAre(t *testing.T) {
	f := newFixture(t, Config{IncludeDefaultDenies: true, ProtectedDirs: []string{"/nonexistent/state"}})
	f.s.fold = true // what New sets on darwin and windows
	for _, p := range []string{".SSH/ID_RSA", "sub/SERVER.PEM", "Deep/X/.GnuPG/y"} {
		wantDenied(t, f.s, p, DeniedPatternMatched)
	}
	if _, denied := f.s.Denied("/NONEXISTENT/State/x"); !denied {
		t.Error("protected directory matched case-sensitively")
	}
}

func TestDenied_ForListing(t *testing.T) {
	f := newFixture(t, Config{IncludeDefaultDenies: true})
	tests := []struct {
		abs    string
		denied bool
	}{
		{filepath.Join(f.root, ".ssh", "id_rsa"), true},
		{filepath.Join(f.root, ".ssh"), true},
		{filepath.Join(f.root, "sub", "server.pem"), true},
		{filepath.Join(f.root, "sub", "b.txt"), false},
		{f.root, false},
		{filepath.Join(f.outside, "x.key"), true}, // patterns apply outside roots too
	}
	for _, tt := range tests {
		if _, denied := f.s.Denied(tt.abs); denied != tt.denied {
			t.Errorf("Denied(%s) = %v, want %v", tt.abs, denied, tt.denied)
		}
	}
}

func TestResolve_FR_VAL_04_SymlinkEscape(t *testing.T) {
	f := newFixture(t, Config{})
	links := map[string]string{
		"filelink":  filepath.Join(f.outside, "secret.txt"),
		"dirlink":   f.outside,
		"dangling":  filepath.Join(f.outside, "not-yet"),
		"relative":  strings.Repeat("../", 40) + strings.TrimPrefix(f.outside, "/"),
		"chain":     "dirlink",
		"loop":      "loop",
		"pingpong":  "pongping",
		"pongping":  "pingpong",
		"innerlink": "sub",
		"absinner":  filepath.Join(f.root, "sub", "b.txt"),
		"sub/up":    "..",
	}
	for name, target := range links {
		mustSymlink(t, target, filepath.Join(f.root, name))
	}
	// A symlink outside that leads back into the root is fine: only the
	// canonical result counts.
	mustSymlink(t, filepath.Join(f.root, "sub"), filepath.Join(f.outside, "back"))
	mustSymlink(t, filepath.Join(f.outside, "back"), filepath.Join(f.root, "roundtrip"))

	// rel "" means PathOutsideSandbox.
	tests := []struct{ path, rel string }{
		{"filelink", ""},
		{"dirlink", ""},
		{"dirlink/secret.txt", ""},
		{"dirlink/newfile", ""},
		{"dirlink/new/deeper/file", ""},
		{"dangling", ""},
		{"dangling/deeper/file", ""},
		{"relative/secret.txt", ""},
		{"chain/secret.txt", ""},
		{"innerlink/b.txt", "sub/b.txt"},
		{"innerlink/new.txt", "sub/new.txt"},
		{"absinner", "sub/b.txt"},
		{"sub/up/a.txt", "a.txt"}, // a ".." inside a symlink's target is resolved, not lexical
		{"roundtrip/b.txt", "sub/b.txt"},
		{"a.txt/below", "a.txt/below"}, // under a file: does not exist, stays inside
	}
	bothModes(t, func(t *testing.T, fast bool) {
		s := f.s
		if !fast {
			var err error
			if s, err = New(Config{Roots: []string{f.root}}); err != nil {
				t.Fatal(err)
			}
			defer portable(s).Close()
		}
		testSymlinkEscapes(t, f, s, tests)
	})
}

func testSymlinkEscapes(t *testing.T, f fixture, s *Sandbox, tests []struct{ path, rel string }) {
	for _, tt := range tests {
		t.Run(tt.path, func(t *testing.T) {
			if tt.rel != "" {
				wantResolved(t, s, tt.path, tt.rel)
				return
			}
			de := wantDenied(t, s, tt.path, PathOutsideSandbox)
			if !strings.HasPrefix(de.Resolved, f.outside) {
				t.Errorf("Resolved = %q, want under %s", de.Resolved, f.outside)
			}
			if strings.Contains(de.Error(), "SECRET") {
				t.Errorf("message leaks content: %q", de.Error())
			}
		})
	}
	for _, p := range []string{"loop", "loop/x", "pingpong/x"} {
		if got, err := s.Resolve(p); err == nil || errors.Is(err, ErrDenied) {
			t.Errorf("Resolve(%q) = %+v, %v; want a too-many-links error", p, got, err)
		}
	}
}

func TestProtectedDirs(t *testing.T) {
	root := canonTempDir(t)
	alias := filepath.Join(canonTempDir(t), "alias")
	mustSymlink(t, root, alias)
	mustWrite(t, filepath.Join(root, ".toolhost", "journal", "db"), "J")
	mustSymlink(t, ".toolhost/journal", filepath.Join(root, "shortcut"))
	s, err := New(Config{Roots: []string{root}, ProtectedDirs: []string{
		filepath.Join(alias, ".toolhost", "journal"), // exists, named through a symlink
		filepath.Join(root, ".toolhost", "state"),    // does not exist yet
	}})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	for _, p := range []string{
		".toolhost/journal", ".toolhost/journal/db", ".toolhost/journal/new",
		".toolhost/state", ".toolhost/state/reads/x.json", "shortcut/db",
	} {
		t.Run(p, func(t *testing.T) { wantDenied(t, s, p, DeniedPatternMatched) })
	}
	for _, p := range []string{".toolhost", ".toolhost/other", ".toolhost/statefile"} {
		wantResolved(t, s, p, p)
	}
	// Creating it later does not change the answer.
	mustWrite(t, filepath.Join(root, ".toolhost", "state", "x"), "S")
	wantDenied(t, s, ".toolhost/state/x", DeniedPatternMatched)
}

func TestResolve_MultipleRoots(t *testing.T) {
	second := canonTempDir(t)
	mustWrite(t, filepath.Join(second, "c.txt"), "C")
	f := newFixture(t, Config{Roots: []string{second}, AllowAbsolute: true})
	mustSymlink(t, filepath.Join(second, "c.txt"), filepath.Join(f.root, "to-second"))
	mustSymlink(t, f.outside, filepath.Join(second, "out"))

	if got := f.s.Roots(); len(got) != 2 || got[0] != f.root || got[1] != second {
		t.Fatalf("Roots() = %v", got)
	}
	p := wantResolved(t, f.s, filepath.Join(second, "c.txt"), "c.txt")
	if p.RootDir != second {
		t.Errorf("RootDir = %s, want %s", p.RootDir, second)
	}
	p = wantResolved(t, f.s, "to-second", "c.txt") // a symlink between roots
	if p.RootDir != second {
		t.Errorf("RootDir = %s, want %s", p.RootDir, second)
	}
	if b, err := readAll(p); err != nil || b != "C" {
		t.Errorf("read through the second root: %q, %v", b, err)
	}
	wantResolved(t, f.s, "c.txt", "c.txt") // relative: against Roots[0], does not exist there
	if p, _ := f.s.Resolve("c.txt"); p.RootDir != f.root {
		t.Errorf("relative path resolved against %s, want the first root", p.RootDir)
	}
	wantDenied(t, f.s, filepath.Join(second, "out", "secret.txt"), PathOutsideSandbox)
}

func TestResolve_RootItselfAndInvalid(t *testing.T) {
	f := newFixture(t, Config{})
	for _, p := range []string{".", "./", "./.", "sub/."} {
		got, err := f.s.Resolve(p)
		if err != nil {
			t.Fatalf("Resolve(%q): %v", p, err)
		}
		wantRel := "."
		if strings.HasPrefix(p, "sub") {
			wantRel = "sub"
		}
		if got.Rel != wantRel || got.Abs != filepath.Join(f.root, wantRel) {
			t.Errorf("Resolve(%q) = %+v", p, got)
		}
	}
	for _, p := range []string{"", "a\x00b", "\x00"} {
		de := wantDenied(t, f.s, p, InvalidPath)
		if de.Error() == "" {
			t.Error("empty message")
		}
	}
}

func TestNew_Errors(t *testing.T) {
	dir := canonTempDir(t)
	file := filepath.Join(dir, "file")
	mustWrite(t, file, "x")
	tests := []struct {
		name    string
		cfg     Config
		mention string
	}{
		{"no roots", Config{}, "no allowed roots"},
		{"empty root", Config{Roots: []string{""}}, `root ""`},
		{"missing root", Config{Roots: []string{filepath.Join(dir, "missing")}}, "missing"},
		{"root is a file", Config{Roots: []string{file}}, "not a directory"},
		{"bad second root", Config{Roots: []string{dir, file}}, file},
		{"bad pattern", Config{Roots: []string{dir}, DeniedPatterns: []string{"a/[b"}}, `"a/[b"`},
		{"empty pattern", Config{Roots: []string{dir}, DeniedPatterns: []string{""}}, `pattern ""`},
		{"empty protected dir", Config{Roots: []string{dir}, ProtectedDirs: []string{""}}, "protected directory"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, err := New(tt.cfg)
			if err == nil {
				s.Close()
				t.Fatal("New succeeded")
			}
			if !strings.Contains(err.Error(), tt.mention) {
				t.Errorf("error %q does not mention %q", err, tt.mention)
			}
		})
	}
	// Roots are reported canonical.
	alias := filepath.Join(canonTempDir(t), "alias")
	mustSymlink(t, dir, alias)
	s, err := New(Config{Roots: []string{alias}})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if got := s.Roots(); len(got) != 1 || got[0] != dir {
		t.Errorf("Roots() = %v, want [%s]", got, dir)
	}
	if got := DefaultDeniedPatterns(); len(got) != 5 {
		t.Errorf("DefaultDeniedPatterns() = %v", got)
	}
}

func TestDenialError_Messages(t *testing.T) {
	tests := []struct {
		err  *DenialError
		want []string
	}{
		{&DenialError{Reason: Traversal, Attempted: "../x"}, []string{`path "../x" is not allowed`, `".." components are rejected`, "use a path inside the workspace root"}},
		{&DenialError{Reason: AbsolutePath, Attempted: "/etc/passwd"}, []string{`"/etc/passwd"`, "absolute paths are rejected", "relative"}},
		{&DenialError{Reason: PathOutsideSandbox, Attempted: "l/x", Resolved: "/out/x"}, []string{`"l/x"`, "/out/x", "outside every allowed root"}},
		{&DenialError{Reason: DeniedPatternMatched, Attempted: "k.pem", Pattern: "**/*.pem"}, []string{`"k.pem"`, `"**/*.pem"`, "never accessible"}},
		{&DenialError{Reason: InvalidPath}, []string{"empty path"}},
		{&DenialError{Reason: InvalidPath, Attempted: "a\x00"}, []string{"NUL"}},
		{swappedError(Path{Attempted: "f"}, "/out/f"), []string{`"f"`, "no longer leads to the file that was validated", "/out/f", "nothing was read or written"}},
		{&DenialError{Reason: Protected, Attempted: "sub/toolhost.yaml", Pattern: "**/toolhost.yaml"}, []string{`"sub/toolhost.yaml"`, `"**/toolhost.yaml"`, "toolhost's configuration file", "no tool may change it", "edit it yourself"}},
		{&DenialError{Reason: Protected, Attempted: "toolhost.lock", Pattern: "**/toolhost.lock"}, []string{"plugin lock file", "no tool may change it"}},
		{&DenialError{Reason: Protected, Attempted: "s/.git/config", Pattern: "**/.git/**"}, []string{`"s/.git/config"`, "git's internals", "run code", "it can be read"}},
		{&DenialError{Reason: PathTooLong, Attempted: "a/b", Limit: keyMaxPathBytes, Max: 4096, Measured: 5000}, []string{`"a/b"`, "5000 bytes", "limit of 4096", "tools.sandbox.max_path_bytes"}},
		{&DenialError{Reason: PathTooLong, Attempted: "a/b", Limit: keyMaxComponentBytes, Max: 255, Measured: 300, component: "bbb"}, []string{`name "bbb" is 300 bytes`, "limit of 255", "tools.sandbox.max_path_component_bytes"}},
		{&DenialError{Reason: PathTooLong, Attempted: "a/b", Limit: keyMaxDepth, Max: 64, Measured: 65}, []string{"65 names deep", "limit of 64", "tools.sandbox.max_path_depth"}},
		{&DenialError{Reason: PathTooLong, Attempted: strings.Repeat("é/", 5000), Limit: keyMaxPathBytes, Max: 4096, Measured: 15000}, []string{`"é/é/`, "…(15000 bytes)…"}},
		{&DenialError{Reason: NamesDirectory, Attempted: "newdir/"}, []string{`"newdir/"`, "names a directory; to write a file give its name without the trailing slash"}},
	}
	for _, tt := range tests {
		msg := tt.err.Error()
		for _, w := range tt.want {
			if !strings.Contains(msg, w) {
				t.Errorf("%v message %q lacks %q", tt.err.Reason, msg, w)
			}
		}
		if !errors.Is(tt.err, ErrDenied) {
			t.Errorf("%v is not ErrDenied", tt.err.Reason)
		}
	}
	for r, name := range map[Reason]string{
		InvalidPath: "InvalidPath", AbsolutePath: "AbsolutePath", Traversal: "Traversal", PathOutsideSandbox: "PathOutsideSandbox",
		DeniedPatternMatched: "DeniedPatternMatched", ReadOnly: "ReadOnly", Protected: "Protected", PathTooLong: "LimitsExceeded", NamesDirectory: "InvalidPath",
	} {
		if r.String() != name {
			t.Errorf("%d.String() = %q, want %q", r, r.String(), name)
		}
	}
}

func TestClose_PathsFailAfterwards(t *testing.T) {
	root := canonTempDir(t)
	mustWrite(t, filepath.Join(root, "a.txt"), "A")
	s, err := New(Config{Roots: []string{root}})
	if err != nil {
		t.Fatal(err)
	}
	p, err := s.Resolve("a.txt")
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	// Fill the descriptor table a little, so a reused number would be found.
	for range 4 {
		d, err := os.Open(t.TempDir())
		if err != nil {
			t.Fatal(err)
		}
		defer d.Close()
	}
	if _, err := s.Resolve("a.txt"); err == nil {
		t.Error("Resolve after Close succeeded")
	}
	if f, err := p.Open(); err == nil {
		f.Close()
		t.Error("Open after Close succeeded")
	}
	if f, err := p.OpenFile(); err == nil {
		f.Close()
		t.Error("OpenFile after Close succeeded")
	}
	if _, err := s.WriteFileAtomic(p, []byte("x"), false); err == nil {
		t.Error("WriteFileAtomic after Close succeeded")
	}
}

func BenchmarkResolve(b *testing.B) {
	f := newFixture(b, Config{IncludeDefaultDenies: true})
	for _, p := range []string{"a/b/c.txt", "a/b/new.txt"} {
		b.Run(p, func(b *testing.B) {
			for b.Loop() {
				if _, err := f.s.Resolve(p); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
