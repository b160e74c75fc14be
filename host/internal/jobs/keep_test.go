package jobs

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/toolhost/toolhost/abi"
)

func keep(t *testing.T, m *Manager, conv, text string) string {
	t.Helper()
	k, err := m.Keep(conv, "call", "echo")
	if err != nil {
		t.Fatal(err)
	}
	if n, err := k.Write([]byte(text)); n != len(text) || err != nil {
		t.Fatalf("Write = %d, %v", n, err)
	}
	k.SetExit(2, "", "")
	if err := k.Close(); err != nil {
		t.Fatal(err)
	}
	return k.ID()
}

// A kept output is read like an ended job: from an offset, continuing,
// with the exit code recorded; the files are private.
func TestKeptOutput(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "outputs")
	m := newManager(t, Options{Dir: dir})
	id := keep(t, m, "c", "hello\nworld\n")
	if !validOutputID(id) {
		t.Fatalf("id %q", id)
	}
	got := output(t, m, "c", abi.JobRequest{ID: id, MaxBytes: 6})
	if got.Output != "hello\n" || got.NextByte != 6 || got.TotalBytes != 12 || got.Running || got.ExitCode == nil || *got.ExitCode != 2 || got.Command != "echo" {
		t.Errorf("first read = %+v", got)
	}
	if got = output(t, m, "c", abi.JobRequest{ID: id}); got.Output != "world\n" || got.FromByte != 6 {
		t.Errorf("continued read = %+v", got)
	}
	if got = output(t, m, "c", abi.JobRequest{ID: id, SinceByte: at(100)}); got.Output != "" || got.NextByte != 12 {
		t.Errorf("read past the end = %+v", got)
	}
	for path, want := range map[string]os.FileMode{dir: 0o700 | os.ModeDir, filepath.Join(dir, id): 0o600, filepath.Join(dir, id+metaSuffix): 0o600} {
		if fi, err := os.Stat(path); err != nil || fi.Mode() != want {
			t.Errorf("%s: %v, %v; want mode %v", path, fi.Mode(), err, want)
		}
	}
}

// Past the per-output cap the bytes are counted and dropped, and the read
// that reaches the end says so; past the total cap the oldest output goes.
func TestKeptCaps(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "outputs")
	m := newManager(t, Options{Dir: dir, KeepOutputBytes: 10, KeepTotalBytes: 25})
	first := keep(t, m, "c", "0123456789abcdef")
	got := output(t, m, "c", abi.JobRequest{ID: first})
	if !strings.HasPrefix(got.Output, "0123456789\n[toolhost kept only the first 10 bytes") || !strings.Contains(got.Output, "the 6 written after them were not kept") || got.NextByte != 10 || got.TotalBytes != 10 {
		t.Errorf("capped output = %+v", got)
	}
	time.Sleep(20 * time.Millisecond) // distinct modification times
	second := keep(t, m, "c", "0123456789")
	time.Sleep(20 * time.Millisecond)
	third := keep(t, m, "c", "0123456789") // 30 bytes > 25: the first goes
	if _, err := m.Do(context.Background(), "c", abi.JobRequest{Op: abi.JobOutputOp, ID: first}); !errors.Is(err, ErrUnknown) {
		t.Errorf("the oldest output past the total cap = %v; want it removed", err)
	}
	for _, id := range []string{second, third} {
		if got := output(t, m, "c", abi.JobRequest{ID: id, SinceByte: at(0)}); got.Output != "0123456789" {
			t.Errorf("%s = %q", id, got.Output)
		}
	}
}

// PruneOutputs removes what was written before the retention.
func TestPruneOutputs(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "outputs")
	m := newManager(t, Options{Dir: dir})
	old := keep(t, m, "c", "old")
	long := time.Now().Add(-48 * time.Hour)
	for _, p := range []string{filepath.Join(dir, old), filepath.Join(dir, old+metaSuffix)} {
		os.Chtimes(p, long, long)
	}
	recent := keep(t, m, "c", "new")
	n, err := m.PruneOutputs(time.Now().Add(-24 * time.Hour))
	if err != nil || n != 1 {
		t.Fatalf("PruneOutputs = %d, %v; want 1", n, err)
	}
	if _, err := os.Stat(filepath.Join(dir, old)); !errors.Is(err, os.ErrNotExist) {
		t.Error("the old output is left")
	}
	if got := output(t, m, "c", abi.JobRequest{ID: recent}); got.Output != "new" {
		t.Errorf("recent output = %q", got.Output)
	}
}

// Without a directory nothing is kept, and a nil Kept is harmless.
func TestKeepNothing(t *testing.T) {
	m := newManager(t, Options{})
	k, err := m.Keep("c", "call", "echo")
	if k != nil || err != nil {
		t.Fatalf("Keep without a directory = %v, %v", k, err)
	}
	if n, err := k.Write([]byte("x")); n != 1 || err != nil || k.ID() != "" || k.Close() != nil {
		t.Error("a nil Kept is not a no-op")
	}
	var none *Manager
	if k, err := none.Keep("c", "call", "echo"); k != nil || err != nil {
		t.Error("a nil Manager keeps")
	}
}
