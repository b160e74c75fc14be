package sandbox

import (
	"errors"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// newTestSandbox makes a root with a few files and a directory outside it
// holding a secret.
func newTestSandbox(t *testing.T, cfg Config) (s *Sandbox, root, outside string) {
	t.Helper()
	root, outside = t.TempDir(), t.TempDir()
	for name, content := range map[string]string{
		"a.txt": "A", "sub/b.txt": "B", ".ssh/id_rsa": "KEY", "keys/server.pem": "PEM", "deep/x/.gnupg/y": "G",
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
	root, _ = filepath.EvalSymlinks(root)
	return s, root, outside
}

func mustWrite(t *testing.T, path, content string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

func wantDenied(t *testing.T, s *Sandbox, p string, reason Reason) {
	t.Helper()
	_, err := s.Resolve(p)
	var de *DenialError
	if !errors.As(err, &de) || de.Reason != reason || !errors.Is(err, ErrDenied) {
		t.Fatalf("Resolve(%q): err = %v, want denial %v", p, err, reason)
	}
	if !strings.Contains(de.Error(), strconv.Quote(p)) && p != "" {
		t.Errorf("message %q does not name the path", de.Error())
	}
}

func TestResolve_T_SBX_01_Traversal(t *testing.T) {
	s, _, _ := newTestSandbox(t, Config{})
	for _, p := range []string{"../x", "a/../../x", "a/..", "./..", "..", "sub/../a.txt", "x/../../../etc/passwd"} {
		wantDenied(t, s, p, Traversal)
	}
	// A backslash is an ordinary character on Unix, not a separator.
	if _, err := s.Resolve(`..\x`); err != nil {
		t.Errorf(`Resolve("..\\x") = %v; a file name with a backslash is legal`, err)
	}
}

func TestResolve_T_SBX_02_Absolute(t *testing.T) {
	s, root, outside := newTestSandbox(t, Config{})
	wantDenied(t, s, "/etc/passwd", AbsolutePath)
	wantDenied(t, s, filepath.Join(root, "a.txt"), AbsolutePath)

	allowed, root2, outside2 := newTestSandbox(t, Config{AllowAbsolute: true})
	p, err := allowed.Resolve(filepath.Join(root2, "sub", "b.txt"))
	if err != nil || p.Rel != "sub/b.txt" {
		t.Fatalf("absolute inside root: %+v %v", p, err)
	}
	wantDenied(t, allowed, filepath.Join(outside2, "secret.txt"), PathOutsideSandbox)
	_, _ = root, outside
}

func TestResolve_T_SBX_03_DeniedPatterns(t *testing.T) {
	s, root, _ := newTestSandbox(t, Config{IncludeDefaultDenies: true, DeniedPatterns: []string{"secrets/**"}})
	for _, p := range []string{".ssh/id_rsa", ".ssh", "keys/server.pem", "deep/x/.gnupg/y", "sub/id_rsa.pub", "x.key", "secrets/new.txt"} {
		wantDenied(t, s, p, DeniedPatternMatched)
	}
	// The pattern applies to the canonical path: an innocent-looking name
	// that is a symlink to a denied file is denied too.
	if err := os.Symlink(filepath.Join(root, ".ssh", "id_rsa"), filepath.Join(root, "innocent")); err != nil {
		t.Fatal(err)
	}
	wantDenied(t, s, "innocent", DeniedPatternMatched)
	if _, err := s.Resolve("sub/b.txt"); err != nil {
		t.Fatalf("ordinary file denied: %v", err)
	}
}

func TestResolve_SymlinkEscapes(t *testing.T) {
	s, root, outside := newTestSandbox(t, Config{})
	links := map[string]string{
		"filelink":  filepath.Join(outside, "secret.txt"),
		"dirlink":   outside,
		"dangling":  filepath.Join(outside, "not-yet"),
		"relative":  "../../../../../../../../" + strings.TrimPrefix(outside, "/"),
		"chain":     filepath.Join(root, "dirlink"),
		"loop":      filepath.Join(root, "loop"),
		"innerlink": filepath.Join(root, "sub"),
	}
	for name, target := range links {
		if err := os.Symlink(target, filepath.Join(root, name)); err != nil {
			t.Fatal(err)
		}
	}
	for _, p := range []string{"filelink", "dirlink/secret.txt", "dirlink/new.txt", "dangling", "dangling/deeper/file", "relative/secret.txt", "chain/secret.txt"} {
		wantDenied(t, s, p, PathOutsideSandbox)
	}
	p, err := s.Resolve("innerlink/b.txt")
	if err != nil || p.Rel != "sub/b.txt" {
		t.Fatalf("symlink inside the root: %+v %v", p, err)
	}
	if _, err := s.Resolve("loop/x"); err == nil {
		t.Fatal("symlink loop resolved")
	}
}

func TestResolve_RootAndMultipleRoots(t *testing.T) {
	second := t.TempDir()
	mustWrite(t, filepath.Join(second, "c.txt"), "C")
	s, root, _ := newTestSandbox(t, Config{Roots: []string{second}, AllowAbsolute: true})
	p, err := s.Resolve(".")
	if err != nil || p.Rel != "." || p.Abs != root {
		t.Fatalf("Resolve(.) = %+v %v", p, err)
	}
	canon2, _ := filepath.EvalSymlinks(second)
	p, err = s.Resolve(filepath.Join(second, "c.txt"))
	if err != nil || p.RootDir != canon2 || p.Rel != "c.txt" {
		t.Fatalf("second root: %+v %v", p, err)
	}
	wantDenied(t, s, "", InvalidPath)
	wantDenied(t, s, "a\x00b", InvalidPath)
}

func TestProtectedDirs(t *testing.T) {
	root := t.TempDir()
	state := filepath.Join(root, ".toolhost", "state") // does not exist yet
	s, err := New(Config{Roots: []string{root}, ProtectedDirs: []string{state}})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	for _, p := range []string{".toolhost/state", ".toolhost/state/reads/x.json"} {
		wantDenied(t, s, p, DeniedPatternMatched)
	}
	if _, err := s.Resolve(".toolhost/other"); err != nil {
		t.Errorf("sibling of the protected dir denied: %v", err)
	}
}

// A file replaced by a symlink to a secret after Resolve must not leak a
// byte: neither a symlink to outside the root (os.Root refuses) nor one to
// a file inside it (Open sees the descriptor points elsewhere).
func TestOpen_SwapAfterValidation(t *testing.T) {
	s, root, outside := newTestSandbox(t, Config{IncludeDefaultDenies: true})
	for _, target := range []string{filepath.Join(outside, "secret.txt"), filepath.Join(root, ".ssh", "id_rsa")} {
		mustWrite(t, filepath.Join(root, "victim.txt"), "ok")
		p, err := s.Resolve("victim.txt")
		if err != nil {
			t.Fatal(err)
		}
		os.Remove(filepath.Join(root, "victim.txt"))
		if err := os.Symlink(target, filepath.Join(root, "victim.txt")); err != nil {
			t.Fatal(err)
		}
		f, err := p.Open()
		if err == nil {
			b, _ := io.ReadAll(f)
			f.Close()
			t.Fatalf("swap to %s: Open succeeded and read %q", target, b)
		}
		if rf, err := p.OpenFile(); err == nil {
			b := make([]byte, 64)
			n, _ := rf.ReadAt(b, 0)
			rf.Close()
			t.Fatalf("swap to %s: OpenFile succeeded and read %q", target, b[:n])
		} else if !errors.Is(err, ErrDenied) {
			t.Errorf("swap to %s: OpenFile error %v is not a denial", target, err)
		}
		os.Remove(filepath.Join(root, "victim.txt"))
	}
	// A parent directory swapped for a symlink to outside.
	mustWrite(t, filepath.Join(root, "dir", "f.txt"), "ok")
	p, err := s.Resolve("dir/f.txt")
	if err != nil {
		t.Fatal(err)
	}
	os.RemoveAll(filepath.Join(root, "dir"))
	mustWrite(t, filepath.Join(outside, "f.txt"), "SECRET")
	if err := os.Symlink(outside, filepath.Join(root, "dir")); err != nil {
		t.Fatal(err)
	}
	if f, err := p.Open(); err == nil {
		b, _ := io.ReadAll(f)
		f.Close()
		t.Fatalf("parent swap: read %q", b)
	}
	if rf, err := p.OpenFile(); err == nil {
		rf.Close()
		t.Fatal("parent swap: OpenFile succeeded")
	}
	if _, err := s.WriteFileAtomic(p, []byte("x"), false); err == nil {
		t.Fatal("write through a swapped parent succeeded")
	}
	if b, _ := os.ReadFile(filepath.Join(outside, "f.txt")); string(b) != "SECRET" {
		t.Fatalf("outside file changed: %q", b)
	}
}

func TestWriteFileAtomic(t *testing.T) {
	s, root, _ := newTestSandbox(t, Config{})
	if err := os.Chmod(filepath.Join(root, "a.txt"), 0o600); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name       string
		path       string
		createDirs bool
		created    bool
		wantErr    bool
	}{
		{"overwrite keeps mode", "a.txt", false, false, false},
		{"new file", "new.txt", false, true, false},
		{"new dirs", "n1/n2/f.txt", true, true, false},
		{"missing parent", "nope/f.txt", false, false, true},
		{"target is a directory", "sub", false, false, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p, err := s.Resolve(tt.path)
			if err != nil {
				t.Fatal(err)
			}
			created, err := s.WriteFileAtomic(p, []byte("new content"), tt.createDirs)
			if (err != nil) != tt.wantErr {
				t.Fatalf("err = %v, wantErr %v", err, tt.wantErr)
			}
			if err == nil {
				b, _ := os.ReadFile(filepath.Join(root, tt.path))
				if string(b) != "new content" || created != tt.created {
					t.Fatalf("content %q created %v", b, created)
				}
			}
		})
	}
	st, _ := os.Stat(filepath.Join(root, "a.txt"))
	if st.Mode().Perm() != 0o600 {
		t.Errorf("mode %v, want 0600 kept", st.Mode().Perm())
	}
	if err := os.Symlink(filepath.Join(root, "a.txt"), filepath.Join(root, "alias")); err != nil {
		t.Fatal(err)
	}
	p, _ := s.Resolve("alias") // canonical: a.txt itself
	if p.Rel != "a.txt" {
		t.Fatalf("alias resolved to %q", p.Rel)
	}
	// No temporary files are left behind, after success or failure.
	filepath.Walk(root, func(path string, _ os.FileInfo, _ error) error {
		if strings.Contains(path, ".toolhost-") {
			t.Errorf("temporary file left: %s", path)
		}
		return nil
	})
}

func FuzzResolve(f *testing.F) {
	for _, s := range []string{"a.txt", "../x", "/etc", "sub/../a", ".ssh/id_rsa", "link/x", "a//b", "./a", "~", "a\x00"} {
		f.Add(s)
	}
	root := f.TempDir()
	outside := f.TempDir()
	os.MkdirAll(filepath.Join(root, "sub"), 0o755)
	os.Symlink(outside, filepath.Join(root, "link"))
	s, err := New(Config{Roots: []string{root}, IncludeDefaultDenies: true, AllowAbsolute: true})
	if err != nil {
		f.Fatal(err)
	}
	canon, _ := filepath.EvalSymlinks(root)
	f.Fuzz(func(t *testing.T, p string) {
		got, err := s.Resolve(p)
		if err != nil {
			return
		}
		if !within(got.Abs, canon) {
			t.Fatalf("Resolve(%q) = %s, outside %s", p, got.Abs, canon)
		}
		if strings.Contains("/"+got.Rel+"/", "/../") {
			t.Fatalf("Resolve(%q) has Rel %q", p, got.Rel)
		}
		if _, denied := s.Denied(got.Abs); denied {
			t.Fatalf("Resolve(%q) returned denied path %s", p, got.Abs)
		}
	})
}

func BenchmarkResolve(b *testing.B) {
	root := b.TempDir()
	if err := os.MkdirAll(filepath.Join(root, "a", "b"), 0o755); err != nil {
		b.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(root, "a", "b", "c.txt"), []byte("x"), 0o644); err != nil {
		b.Fatal(err)
	}
	s, err := New(Config{Roots: []string{root}, IncludeDefaultDenies: true})
	if err != nil {
		b.Fatal(err)
	}
	for b.Loop() {
		if _, err := s.Resolve("a/b/c.txt"); err != nil {
			b.Fatal(err)
		}
	}
}

// A FIFO inside the root must not block a reader forever.
func TestOpenFileFIFODoesNotBlock(t *testing.T) {
	s, root, _ := newTestSandbox(t, Config{})
	if err := syscall.Mkfifo(filepath.Join(root, "pipe"), 0o644); err != nil {
		t.Skip("mkfifo:", err)
	}
	p, err := s.Resolve("pipe")
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() {
		f, err := p.OpenFile()
		if err == nil {
			st, _ := f.Stat()
			if st.Regular() {
				err = errors.New("FIFO reported as a regular file")
			}
			f.Close()
		}
		done <- err
	}()
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("opening a FIFO blocked")
	}
}
