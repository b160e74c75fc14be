//go:build unix

package sandbox

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"
)

// A FIFO inside the root must not block a reader forever.
func TestOpen_FIFODoesNotBlock(t *testing.T) {
	f := newFixture(t, Config{})
	if err := syscall.Mkfifo(filepath.Join(f.root, "pipe"), 0o644); err != nil {
		t.Skip("mkfifo:", err)
	}
	p := wantResolved(t, f.s, "pipe", "pipe")
	done := make(chan error, 2)
	go func() {
		fh, err := p.OpenFile()
		if err == nil {
			st, _ := fh.Stat()
			if st.Regular() {
				err = errors.New("FIFO reported as a regular file")
			}
			fh.Close()
		}
		done <- err
	}()
	go func() {
		fh, err := p.Open()
		if err == nil {
			fh.Close()
		}
		done <- err
	}()
	for range 2 {
		select {
		case err := <-done:
			if err != nil {
				t.Fatal(err)
			}
		case <-time.After(5 * time.Second):
			t.Fatal("opening a FIFO blocked")
		}
	}
}

// New files get 0644 whatever the umask, as the brief for toolhost's
// writes says; existing files keep theirs.
func TestWriteFileAtomic_NewFileModeIgnoresUmask(t *testing.T) {
	f := newFixture(t, Config{})
	old := syscall.Umask(0o077)
	defer syscall.Umask(old)
	p := wantResolved(t, f.s, "fresh.txt", "fresh.txt")
	if _, err := f.s.WriteFileAtomic(p, []byte("x"), false); err != nil {
		t.Fatal(err)
	}
	if st, _ := os.Stat(p.Abs); st.Mode().Perm() != 0o644 {
		t.Errorf("mode %v, want 0644", st.Mode().Perm())
	}
}

// Writing into a read-only directory fails cleanly. Root ignores the
// permission, so this only runs as another user; TestWriteFileAtomic_
// LateFailureCleansUp covers a failure root cannot bypass.
func TestWriteFileAtomic_ReadOnlyDirectory(t *testing.T) {
	if os.Geteuid() == 0 {
		t.Skip("root ignores directory permissions")
	}
	f := newFixture(t, Config{})
	dir := filepath.Join(f.root, "sub")
	if err := os.Chmod(dir, 0o555); err != nil {
		t.Fatal(err)
	}
	defer os.Chmod(dir, 0o755)
	p := wantResolved(t, f.s, "sub/b.txt", "sub/b.txt")
	if _, err := f.s.WriteFileAtomic(p, []byte("new"), false); !errors.Is(err, fs.ErrPermission) {
		t.Fatalf("err = %v, want permission denied", err)
	}
	if got, _ := os.ReadFile(p.Abs); string(got) != "B" {
		t.Errorf("target changed: %q", got)
	}
	noTempFiles(t, f.root)
}

// FR-VAL-05's SHOULD: system credential files are denied when a root
// contains them. Only reads metadata under /etc.
func TestResolve_T_SBX_03_SystemCredentials(t *testing.T) {
	s, err := New(Config{Roots: []string{"/etc"}, IncludeDefaultDenies: true})
	if err != nil {
		t.Skip("no /etc:", err)
	}
	defer s.Close()
	for _, p := range []string{"shadow", "gshadow", "shadow-", "sudoers", "sudoers.d/local", "master.passwd"} {
		t.Run(p, func(t *testing.T) { wantDenied(t, s, p, DeniedPatternMatched) })
	}
	if _, err := s.Resolve("hostname"); err != nil {
		t.Errorf("an ordinary file under /etc is denied: %v", err)
	}
}
