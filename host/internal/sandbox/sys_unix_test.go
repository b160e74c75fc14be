//go:build unix

package sandbox

import (
	"errors"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
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

// umaskEnv tells the test binary, run again by
// TestTxn_ModeFollowsUmask, the umask its shell set.
const umaskEnv = "TOOLHOST_SANDBOX_TEST_UMASK"

// A file a write creates gets 0666 less the umask, as
// any program's new file would (it got 0644 under umask 077); a file it
// replaces keeps its mode exactly, wider or narrower than the umask
// allows. The umask is the process's own, so the test runs itself again
// under a shell that set known ones, and once under whatever it has.
func TestTxn_ModeFollowsUmask(t *testing.T) {
	want := os.Getenv(umaskEnv)
	if want == "" {
		for _, umask := range []string{"077", "027", "002"} {
			t.Run("umask "+umask, func(t *testing.T) {
				cmd := exec.Command("sh", "-c", "umask "+umask+`; exec "$0" "$@"`, os.Args[0],
					"-test.run=^TestTxn_ModeFollowsUmask$", "-test.count=1", "-test.v")
				cmd.Env = append(os.Environ(), umaskEnv+"="+umask)
				out, err := cmd.CombinedOutput()
				if err != nil || !strings.Contains(string(out), "--- PASS: TestTxn_ModeFollowsUmask") {
					t.Fatalf("under umask %s: %v\n%s", umask, err, out)
				}
			})
		}
	}
	umask, known := procUmask(t)
	if want != "" {
		set, err := strconv.ParseUint(want, 8, 32)
		if err != nil {
			t.Fatal(err)
		}
		if known && umask != fs.FileMode(set) {
			t.Fatalf("the kernel says umask %04o, the shell set %s", umask, want)
		}
		umask, known = fs.FileMode(set), true
	}
	if !known {
		t.Skip("the process's umask cannot be read here without changing it")
	}
	f := newFixture(t, Config{})
	if err := os.Chmod(filepath.Join(f.root, "a.txt"), 0o640); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(filepath.Join(f.root, "sub", "b.txt"), 0o606); err != nil {
		t.Fatal(err)
	}
	p := wantResolved(t, f.s, "fresh.txt", "fresh.txt")
	if _, err := f.s.WriteFileAtomic(p, []byte("x"), false); err != nil {
		t.Fatal(err)
	}
	txn := f.s.Begin()
	defer txn.Close()
	if err := txn.StageNew(wantResolved(t, f.s, "new/dir/n.txt", "new/dir/n.txt"), []byte("n"), true); err != nil {
		t.Fatal(err)
	}
	for _, rel := range []string{"a.txt", "sub/b.txt"} {
		if _, err := txn.Stage(wantResolved(t, f.s, rel, rel), []byte("new"), false); err != nil {
			t.Fatal(err)
		}
	}
	if err := txn.Commit(); err != nil {
		t.Fatal(err)
	}
	for rel, mode := range map[string]fs.FileMode{
		"fresh.txt": 0o666 &^ umask, "new/dir/n.txt": 0o666 &^ umask, "a.txt": 0o640, "sub/b.txt": 0o606,
	} {
		if st, err := os.Stat(filepath.Join(f.root, rel)); err != nil || st.Mode().Perm() != mode {
			t.Errorf("under umask %04o %s has mode %v (%v), want %v", umask, rel, st.Mode().Perm(), err, mode)
		}
	}
}

// procUmask reads the process's umask from /proc/self/status: reading it
// with umask(2) means setting it, for every thread of the process.
func procUmask(t *testing.T) (umask fs.FileMode, ok bool) {
	t.Helper()
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0, false
	}
	for line := range strings.Lines(string(b)) {
		if v, found := strings.CutPrefix(line, "Umask:"); found {
			n, err := strconv.ParseUint(strings.TrimSpace(v), 8, 32)
			if err != nil {
				t.Fatalf("/proc/self/status: %q: %v", line, err)
			}
			return fs.FileMode(n), true
		}
	}
	return 0, false
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
