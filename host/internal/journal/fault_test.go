package journal

import (
	"context"
	"io"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// The fault test of "Done when": a journal that cannot be
// written (a read-only directory) fails Open or BeginBatch, so no call
// runs, with an error naming the file and saying why. Root ignores
// permissions, so as root the child runs as nobody.
func TestReadOnlyDirectory(t *testing.T) {
	for _, tc := range []struct {
		name     string
		existing bool // the journal exists, made before the directory was made read-only
	}{
		{"new journal", false},
		{"existing journal", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			base, err := os.MkdirTemp("", "journal-ro-")
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { os.Chmod(filepath.Join(base, "ro"), 0o755); os.RemoveAll(base) })
			if err := os.Chmod(base, 0o755); err != nil { // nobody must reach it
				t.Fatal(err)
			}
			dir := filepath.Join(base, "ro")
			if err := os.Mkdir(dir, 0o755); err != nil {
				t.Fatal(err)
			}
			path := filepath.Join(dir, "journal.db")
			if tc.existing {
				j := openJournal(t, path, Options{})
				j.Close()
				os.Chmod(path, 0o644)
			}
			if err := os.Chmod(dir, 0o555); err != nil {
				t.Fatal(err)
			}
			cmd := childCommand(t, "open-begin", path)
			if os.Geteuid() == 0 {
				cmd.Path = copyBinary(t, base)
				cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 65534, Gid: 65534}}
			}
			if err := cmd.Run(); err != nil {
				t.Fatalf("child: %v\n%s", err, cmd.Stderr)
			}
			out := cmd.Stdout.(interface{ String() string }).String()
			t.Logf("child: %s", out)
			for _, want := range []string{path, "cannot write it", "nothing was run", dir} {
				if !strings.Contains(out, want) {
					t.Errorf("child said %q, want it to say %q", out, want)
				}
			}
		})
	}
}

// copyBinary copies the test binary where another user can run it.
func copyBinary(t *testing.T, dir string) string {
	t.Helper()
	src, err := os.Open(os.Args[0])
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	dst := filepath.Join(dir, "journal.test")
	f, err := os.OpenFile(dst, os.O_CREATE|os.O_WRONLY, 0o755)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := io.Copy(f, src); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	return dst
}

// The fault test of "Done when": the disk refuses the journal's
// write (a file size limit, as a full disk would): BeginBatch fails, so no
// call runs, with an error that says why, and the batch is not recorded.
func TestDiskRefusesWrite(t *testing.T) {
	path := filepath.Join(t.TempDir(), "journal.db")
	openJournal(t, path, Options{}).Close()
	cmd := childCommand(t, "fsize", path, "65536")
	if err := cmd.Run(); err != nil {
		t.Fatalf("child: %v\n%s", err, cmd.Stderr)
	}
	out := cmd.Stdout.(interface{ String() string }).String()
	t.Logf("child: %s", out)
	if !strings.HasPrefix(out, "begin:") || !strings.Contains(out, path) || !strings.Contains(out, "nothing was run") {
		t.Errorf("child said %q, want BeginBatch to fail naming %s and saying nothing was run", out, path)
	}
	j := openJournal(t, path, Options{})
	if got, err := j.ListBatches(context.Background(), Filter{}); err != nil || len(got) != 0 {
		t.Errorf("after the refused write the journal lists %+v, %v; want nothing", got, err)
	}
}
