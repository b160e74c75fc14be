package sandbox

import (
	"cmp"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// readAll reads p through Open.
func readAll(p Path) (string, error) {
	f, err := p.Open()
	if err != nil {
		return "", err
	}
	defer f.Close()
	b, err := io.ReadAll(f)
	return string(b), err
}

// readAllFile reads p through OpenFile.
func readAllFile(p Path) (string, error) {
	f, err := p.OpenFile()
	if err != nil {
		return "", err
	}
	defer f.Close()
	b, err := io.ReadAll(f)
	return string(b), err
}

// noTempFiles fails if WriteFileAtomic left a temporary file under dir.
func noTempFiles(t *testing.T, dirs ...string) {
	t.Helper()
	for _, dir := range dirs {
		filepath.WalkDir(dir, func(path string, _ fs.DirEntry, _ error) error {
			if strings.Contains(filepath.Base(path), ".toolhost-") {
				t.Errorf("temporary file left behind: %s", path)
			}
			return nil
		})
	}
}

// A path validated and then changed under the sandbox's feet must not
// leak a byte or take a write, wherever the swapped-in symlink points
// (FR-VAL-06, NFR-SEC-02).
func TestOpen_FR_VAL_06_SwapEscape(t *testing.T) {
	tests := []struct {
		name string
		// swap replaces root/dir/f.txt or root/dir and returns the file
		// that must stay unread and unchanged.
		swap func(t *testing.T, f fixture) string
		// inRoot: the escape stays inside the root, so the sandbox itself
		// (not os.Root) must notice and answer with a denial.
		inRoot bool
	}{
		{"final component to a file outside", func(t *testing.T, f fixture) string {
			return swapFile(t, f, filepath.Join(f.outside, "secret.txt"), "")
		}, false},
		// os.Root refuses absolute symlinks outright, so the in-root
		// escapes use relative ones: those it follows, and the sandbox
		// must notice.
		{"final component to a denied file in the root", func(t *testing.T, f fixture) string {
			return swapFile(t, f, filepath.Join(f.root, ".ssh", "id_rsa"), "../.ssh/id_rsa")
		}, true},
		{"final component to another file in the root", func(t *testing.T, f fixture) string {
			return swapFile(t, f, filepath.Join(f.root, "a.txt"), "../a.txt")
		}, true},
		{"final component to a file in the root, absolute", func(t *testing.T, f fixture) string {
			return swapFile(t, f, filepath.Join(f.root, "a.txt"), "")
		}, false},
		{"parent to a directory outside", func(t *testing.T, f fixture) string {
			return swapDir(t, f, f.outside, "")
		}, false},
		{"parent to a denied directory in the root", func(t *testing.T, f fixture) string {
			return swapDir(t, f, filepath.Join(f.root, ".ssh"), ".ssh")
		}, true},
		{"parent to another directory in the root", func(t *testing.T, f fixture) string {
			return swapDir(t, f, filepath.Join(f.root, "sub"), "sub")
		}, true},
	}
	bothModes(t, func(t *testing.T, fast bool) {
		for _, tt := range tests {
			t.Run(tt.name, func(t *testing.T) {
				f := newFixture(t, Config{IncludeDefaultDenies: true})
				if !fast {
					portable(f.s)
				}
				testSwap(t, f, tt.swap, strings.HasPrefix(tt.name, "parent"), tt.inRoot)
			})
		}
	})
}

// testSwap resolves root/dir/f.txt and root/dir, lets swap change the
// tree, and checks that no read, listing or write gets through.
func testSwap(t *testing.T, f fixture, swap func(*testing.T, fixture) string, parentSwapped, inRoot bool) {
	t.Helper()
	mustWrite(t, filepath.Join(f.root, "dir", "f.txt"), "ok")
	p := wantResolved(t, f.s, "dir/f.txt", "dir/f.txt")
	dirPath := wantResolved(t, f.s, "dir", "dir")
	victim := swap(t, f)
	// A content no path or message can hold by chance ("A" is in every
	// temporary directory named after an FR_VAL test).
	mustWrite(t, victim, "leak-canary-5f1d9c")
	before, err := os.ReadFile(victim)
	if err != nil {
		t.Fatal(err)
	}
	for name, read := range map[string]func(Path) (string, error){"Open": readAll, "OpenFile": readAllFile} {
		got, err := read(p)
		if err == nil || got != "" {
			t.Fatalf("%s after the swap read %q (err %v)", name, got, err)
		}
		if inRoot && !errors.Is(err, ErrDenied) {
			t.Errorf("%s: error %v is not a denial", name, err)
		}
		if strings.Contains(err.Error(), string(before)) {
			t.Errorf("%s: error leaks content: %v", name, err)
		}
	}
	if entries, err := dirPath.ReadDir(); err == nil && parentSwapped {
		t.Errorf("ReadDir of the swapped directory listed %d entries", len(entries))
	}
	if _, err := f.s.WriteFileAtomic(p, []byte("PWNED"), true); err == nil {
		t.Fatal("WriteFileAtomic through the swap succeeded")
	}
	if after, _ := os.ReadFile(victim); string(after) != string(before) {
		t.Fatalf("%s changed: %q", victim, after)
	}
	noTempFiles(t, f.root, f.outside)
}

// The identity check used where /proc is missing catches the same swaps.
func TestSameAsName_SwapFallback(t *testing.T) {
	f := newFixture(t, Config{})
	mustWrite(t, filepath.Join(f.root, "dir", "f.txt"), "ok")
	p := wantResolved(t, f.s, "dir/f.txt", "dir/f.txt")
	lstat := func() (fs.FileInfo, error) { return p.Root.Lstat(p.Rel) }
	fh, err := p.Root.Open(p.Rel)
	if err != nil {
		t.Fatal(err)
	}
	defer fh.Close()
	if ok, err := sameAsName(fh, lstat); !ok || err != nil {
		t.Fatalf("unchanged file: %v %v", ok, err)
	}
	swapFile(t, f, filepath.Join(f.root, "a.txt"), "../a.txt")
	swapped, err := p.Root.Open(p.Rel) // os.Root follows the relative link
	if err != nil {
		t.Fatal(err)
	}
	defer swapped.Close()
	for name, file := range map[string]*os.File{"old descriptor": fh, "followed link": swapped} {
		if ok, err := sameAsName(file, lstat); ok || err != nil {
			t.Errorf("%s after the swap: same = %v, %v", name, ok, err)
		}
	}
}

// swapFile replaces root/dir/f.txt with a symlink to target, spelled
// linkText if that is not empty.
func swapFile(t *testing.T, f fixture, target, linkText string) string {
	t.Helper()
	link := filepath.Join(f.root, "dir", "f.txt")
	if err := os.Remove(link); err != nil {
		t.Fatal(err)
	}
	mustSymlink(t, cmp.Or(linkText, target), link)
	return target
}

// swapDir replaces root/dir with a symlink to target (spelled linkText if
// that is not empty), which gets an f.txt holding a secret.
func swapDir(t *testing.T, f fixture, target, linkText string) string {
	t.Helper()
	if err := os.RemoveAll(filepath.Join(f.root, "dir")); err != nil {
		t.Fatal(err)
	}
	mustWrite(t, filepath.Join(target, "f.txt"), "SECRET")
	mustSymlink(t, cmp.Or(linkText, target), filepath.Join(f.root, "dir"))
	return filepath.Join(target, "f.txt")
}

// A file legitimately replaced (an editor's atomic save) still opens.
func TestOpen_ReplacedByRegularFile(t *testing.T) {
	f := newFixture(t, Config{})
	p := wantResolved(t, f.s, "a.txt", "a.txt")
	mustWrite(t, filepath.Join(f.root, "a.tmp"), "new")
	if err := os.Rename(filepath.Join(f.root, "a.tmp"), filepath.Join(f.root, "a.txt")); err != nil {
		t.Fatal(err)
	}
	for name, read := range map[string]func(Path) (string, error){"Open": readAll, "OpenFile": readAllFile} {
		if got, err := read(p); err != nil || got != "new" {
			t.Errorf("%s = %q, %v", name, got, err)
		}
	}
}

func TestReadDirChildLstat(t *testing.T) {
	f := newFixture(t, Config{IncludeDefaultDenies: true})
	mustSymlink(t, "a.txt", filepath.Join(f.root, "alias"))
	top := wantResolved(t, f.s, ".", ".")
	entries, err := top.ReadDir()
	if err != nil {
		t.Fatal(err)
	}
	var names, visible []string
	for _, e := range entries {
		names = append(names, e.Name())
		c := top.Child(e.Name())
		if c.Rel != e.Name() || c.Abs != filepath.Join(f.root, e.Name()) || c.Attempted != e.Name() {
			t.Errorf("Child(%q) = %+v", e.Name(), c)
		}
		if _, denied := f.s.Denied(c.Abs); !denied {
			visible = append(visible, e.Name())
		}
	}
	if !slices.IsSorted(names) {
		t.Errorf("entries not sorted: %v", names)
	}
	if want := []string{"a", "a.txt", "alias", "deep", "sub"}; !slices.Equal(visible, want) {
		t.Errorf("visible entries %v, want %v", visible, want)
	}

	sub := wantResolved(t, f.s, "sub", "sub")
	b := sub.Child("b.txt")
	if b.Rel != "sub/b.txt" || b.Attempted != "sub/b.txt" {
		t.Errorf("Child = %+v", b)
	}
	if got, err := readAll(b); err != nil || got != "B" {
		t.Errorf("read child: %q, %v", got, err)
	}
	if fi, err := top.Child("alias").Lstat(); err != nil || fi.Mode()&fs.ModeSymlink == 0 {
		t.Errorf("Lstat(alias) = %v, %v; want a symlink", fi, err)
	}
	// Opening a symlink entry as if it were the file is refused.
	if got, err := readAll(top.Child("alias")); err == nil {
		t.Errorf("Open(alias child) read %q", got)
	}
	// A denied child is refused even when the caller forgot Denied.
	ssh := top.Child(".ssh").Child("id_rsa")
	for name, read := range map[string]func(Path) (string, error){"Open": readAll, "OpenFile": readAllFile} {
		if got, err := read(ssh); !errors.Is(err, ErrDenied) || got != "" {
			t.Errorf("%s of a denied child = %q, %v", name, got, err)
		}
	}
	if _, err := top.Child(".ssh").ReadDir(); !errors.Is(err, ErrDenied) {
		t.Errorf("ReadDir of a denied child: %v", err)
	}
	for _, bad := range []string{"..", ".", "", "a/b"} {
		if _, err := sub.Child(bad).Open(); err == nil {
			t.Errorf("Child(%q).Open succeeded", bad)
		}
	}
	if _, err := b.ReadDir(); err == nil {
		t.Error("ReadDir of a file succeeded")
	}
	if _, err := (Path{}).Open(); err == nil {
		t.Error("Open of a zero Path succeeded")
	}
}

func TestWriteFileAtomic(t *testing.T) {
	f := newFixture(t, Config{IncludeDefaultDenies: true})
	if err := os.Chmod(filepath.Join(f.root, "a.txt"), 0o600); err != nil {
		t.Fatal(err)
	}
	long := strings.Repeat("é", 120) // 240 bytes: the temporary name must still fit
	tests := []struct {
		name       string
		path       string
		createDirs bool
		created    bool
		mode       fs.FileMode
		wantErr    error // nil: success
	}{
		{"overwrite keeps mode 0600", "a.txt", false, false, 0o600, nil},
		{"new file", "new.txt", false, true, 0o644, nil},
		{"new file, dirs made", "n1/n2/f.txt", true, true, 0o644, nil},
		{"existing dir, createDirs", "sub/c.txt", true, true, 0o644, nil},
		{"long name", long, false, true, 0o644, nil},
		{"missing parent", "nope/f.txt", false, false, 0, fs.ErrNotExist},
		{"target is a directory", "sub", false, false, 0, ErrNotRegular},
		{"target is the root", ".", false, false, 0, ErrNotRegular},
		{"parent is a file", "a.txt/x/f.txt", true, false, 0, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := wantResolved(t, f.s, tt.path, tt.path)
			data := []byte("new content " + tt.name)
			created, err := f.s.WriteFileAtomic(p, data, tt.createDirs)
			if tt.wantErr != nil || tt.mode == 0 {
				if err == nil || (tt.wantErr != nil && !errors.Is(err, tt.wantErr)) {
					t.Fatalf("err = %v, want %v", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			got, err := os.ReadFile(p.Abs)
			if err != nil || string(got) != string(data) || created != tt.created {
				t.Fatalf("content %q (%v), created %v", got, err, created)
			}
			if st, _ := os.Stat(p.Abs); st.Mode().Perm() != tt.mode {
				t.Errorf("mode %v, want %v", st.Mode().Perm(), tt.mode)
			}
		})
	}
	if st, err := os.Stat(filepath.Join(f.root, "n1")); err != nil || !st.IsDir() {
		t.Errorf("createDirs: %v %v", st, err)
	}
	noTempFiles(t, f.root)
}

func TestWriteFileAtomic_Refusals(t *testing.T) {
	f := newFixture(t, Config{IncludeDefaultDenies: true})
	other := newFixture(t, Config{})
	mustSymlink(t, filepath.Join(f.outside, "secret.txt"), filepath.Join(f.root, "out-link"))
	mustSymlink(t, "a.txt", filepath.Join(f.root, "in-link"))
	top := wantResolved(t, f.s, ".", ".")
	foreign := wantResolved(t, other.s, "a.txt", "a.txt")

	tests := []struct {
		name    string
		p       Path
		wantErr error
	}{
		// Resolve canonicalizes symlinks away; entries found by listing
		// can still be symlinks, and are never written through.
		{"symlink to outside", top.Child("out-link"), ErrNotRegular},
		{"symlink inside", top.Child("in-link"), ErrNotRegular},
		{"denied child", top.Child(".ssh").Child("id_rsa"), ErrDenied},
		{"path of another sandbox", foreign, nil},
		{"zero path", Path{}, nil},
		{"bad child name", top.Child(".."), nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := f.s.WriteFileAtomic(tt.p, []byte("PWNED"), true)
			if err == nil || (tt.wantErr != nil && !errors.Is(err, tt.wantErr)) {
				t.Fatalf("err = %v, want %v", err, tt.wantErr)
			}
		})
	}
	for path, want := range map[string]string{
		filepath.Join(f.outside, "secret.txt"): "SECRET", filepath.Join(f.root, "a.txt"): "A",
		filepath.Join(f.root, ".ssh", "id_rsa"): "KEY", filepath.Join(other.root, "a.txt"): "A",
	} {
		if got, _ := os.ReadFile(path); string(got) != want {
			t.Errorf("%s = %q, want %q", path, got, want)
		}
	}
	if fi, err := os.Lstat(filepath.Join(f.root, "out-link")); err != nil || fi.Mode()&fs.ModeSymlink == 0 {
		t.Errorf("out-link replaced: %v %v", fi, err)
	}
	noTempFiles(t, f.root, f.outside)
}

// A failure after the temporary file is written (here: the target became
// a directory just before the rename, which fails even for root) leaves
// the target as it is and no temporary file (T-PATCH-01's atomicity at the
// file level).
func TestWriteFileAtomic_LateFailureCleansUp(t *testing.T) {
	f := newFixture(t, Config{})
	target := filepath.Join(f.root, "sub", "b.txt")
	p := wantResolved(t, f.s, "sub/b.txt", "sub/b.txt")
	var sawTemp bool
	f.s.testHookBeforeRename = func(int) error {
		entries, _ := os.ReadDir(filepath.Dir(target))
		for _, e := range entries {
			sawTemp = sawTemp || strings.HasPrefix(e.Name(), ".toolhost-tmp-") && strings.HasSuffix(e.Name(), "-b.txt")
		}
		os.Remove(target)
		mustWrite(t, filepath.Join(target, "keep"), "K")
		return nil
	}
	if _, err := f.s.WriteFileAtomic(p, []byte("new"), false); err == nil {
		t.Fatal("WriteFileAtomic succeeded over a directory")
	}
	if !sawTemp {
		t.Error("the hook did not see the temporary file; the test tests nothing")
	}
	if got, err := os.ReadFile(filepath.Join(target, "keep")); err != nil || string(got) != "K" {
		t.Errorf("target changed: %q %v", got, err)
	}
	noTempFiles(t, f.root)
}

func FuzzResolve(f *testing.F) {
	for _, s := range []string{
		"a.txt", "../x", "/etc", "sub/../a", ".ssh/id_rsa", "link/x", "a//b", "./a", "~", "a\x00",
		"inner/b.txt", "innocent", "state/x", "up/up/x", ".", "/", `..\x`, "sub/./b.txt/", "loop/x",
		"./././sub/toolhost.yaml", "sub/.git/config", strings.Repeat("d/", 70) + "f", strings.Repeat("n", 300), "sub/", "sub/.",
	} {
		f.Add(s)
	}
	root, outside, second := canonTempDir(f), canonTempDir(f), canonTempDir(f)
	mustWrite(f, filepath.Join(root, "sub", "b.txt"), "B")
	mustWrite(f, filepath.Join(root, ".ssh", "id_rsa"), "K")
	mustWrite(f, filepath.Join(second, "c.txt"), "C")
	mustSymlink(f, outside, filepath.Join(root, "link"))
	mustSymlink(f, "sub", filepath.Join(root, "inner"))
	mustSymlink(f, ".ssh/id_rsa", filepath.Join(root, "innocent"))
	mustSymlink(f, "..", filepath.Join(root, "sub", "up"))
	mustSymlink(f, second, filepath.Join(root, "second"))
	mustSymlink(f, "loop", filepath.Join(root, "loop"))
	s, err := New(Config{
		Roots: []string{root, second}, IncludeDefaultDenies: true, AllowAbsolute: true,
		DeniedPatterns: []string{"**/*.secret"}, ProtectedDirs: []string{filepath.Join(root, "state")},
	})
	if err != nil {
		f.Fatal(err)
	}
	f.Cleanup(func() { s.Close() })
	roots := s.Roots()
	f.Fuzz(func(t *testing.T, in string) {
		got, err := s.Resolve(in)
		if err != nil {
			var de *DenialError
			if errors.As(err, &de) && (de.Attempted != in || de.Error() == "") {
				t.Fatalf("Resolve(%q): bad denial %#v", in, de)
			}
			return
		}
		if !slices.Contains(roots, got.RootDir) || !within(got.Abs, got.RootDir) {
			t.Fatalf("Resolve(%q) = %s, not inside root %s", in, got.Abs, got.RootDir)
		}
		if got.Rel != "." {
			for _, c := range strings.Split(got.Rel, "/") {
				if c == "" || c == "." || c == ".." {
					t.Fatalf("Resolve(%q) has Rel %q", in, got.Rel)
				}
			}
		}
		if got.Abs != filepath.Join(got.RootDir, filepath.FromSlash(got.Rel)) || got.Attempted != in || got.Root == nil {
			t.Fatalf("Resolve(%q) = %+v: fields disagree", in, got)
		}
		// Within the default limits, and a trailing
		// slash kept as Dir (item 11).
		if depth, longest := measure(filepath.FromSlash(got.Rel)); len(got.Abs) > defaultMaxPathBytes || len(longest) > defaultMaxComponentBytes || (got.Rel != "." && depth > defaultMaxDepth) {
			t.Fatalf("Resolve(%q) = %s: over a path limit", in, got.Abs)
		}
		if slash := filepath.ToSlash(in); got.Dir != (strings.HasSuffix(slash, "/") || strings.HasSuffix(slash, "/.")) {
			t.Fatalf("Resolve(%q).Dir = %v", in, got.Dir)
		}
		if got.Dir {
			if err := s.CheckWrite(got); !errors.Is(err, ErrDenied) {
				t.Fatalf("CheckWrite(%q) = %v; a path ending in a slash is never written as a file", in, err)
			}
		}
		if pattern, denied := s.Denied(got.Abs); denied {
			t.Fatalf("Resolve(%q) returned %s, denied by %s", in, got.Abs, pattern)
		}
		// The canonical path is a fixed point.
		again, err := s.Resolve(got.Abs)
		if err != nil || again.Abs != got.Abs {
			t.Fatalf("Resolve(%q) = %s, but that resolves to %+v, %v", in, got.Abs, again, err)
		}
	})
}

func BenchmarkOpen(b *testing.B) {
	f := newFixture(b, Config{IncludeDefaultDenies: true})
	p, err := f.s.Resolve("a/b/c.txt")
	if err != nil {
		b.Fatal(err)
	}
	b.Run("Open", func(b *testing.B) {
		for b.Loop() {
			fh, err := p.Open()
			if err != nil {
				b.Fatal(err)
			}
			fh.Close()
		}
	})
	b.Run("OpenFile", func(b *testing.B) {
		for b.Loop() {
			fh, err := p.OpenFile()
			if err != nil {
				b.Fatal(err)
			}
			fh.Close()
		}
	})
}

// ReadDirFirst keeps only the first n accepted names, in order, and says
// whether there were more (a listing costs what its page holds, not what the directory holds).
func TestReadDirFirst(t *testing.T) {
	f := newFixture(t, Config{})
	dir := filepath.Join(f.root, "many")
	for i := range 600 {
		mustWrite(t, filepath.Join(dir, fmt.Sprintf("f%04d", (i*7919)%600)), "x")
	}
	p := wantResolved(t, f.s, "many", "many")
	even := func(name string) bool { return (name[len(name)-1]-'0')%2 == 0 }
	tests := []struct {
		n     int
		keep  func(string) bool
		first string
		count int
		more  bool
	}{
		{10, even, "f0000", 10, true},
		{0, nil, "", 0, true},
		{1000, even, "f0000", 300, false},
		{600, nil, "f0000", 600, false},
		{599, nil, "f0000", 599, true},
	}
	for _, tt := range tests {
		entries, more, err := p.ReadDirFirst(tt.n, tt.keep)
		if err != nil {
			t.Fatal(err)
		}
		if len(entries) != tt.count || more != tt.more {
			t.Errorf("ReadDirFirst(%d) = %d entries, more %v; want %d, %v", tt.n, len(entries), more, tt.count, tt.more)
			continue
		}
		if !slices.IsSortedFunc(entries, func(a, b fs.DirEntry) int { return cmp.Compare(a.Name(), b.Name()) }) {
			t.Errorf("ReadDirFirst(%d) is not sorted", tt.n)
		}
		if tt.count > 0 && entries[0].Name() != tt.first {
			t.Errorf("ReadDirFirst(%d) starts at %s, want %s", tt.n, entries[0].Name(), tt.first)
		}
		for i, e := range entries {
			if want := fmt.Sprintf("f%04d", i*(1+btoi(tt.keep != nil))); e.Name() != want {
				t.Errorf("ReadDirFirst(%d)[%d] = %s, want %s", tt.n, i, e.Name(), want)
				break
			}
		}
	}
}

func btoi(b bool) int {
	if b {
		return 1
	}
	return 0
}
