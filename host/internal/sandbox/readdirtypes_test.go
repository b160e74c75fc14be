package sandbox

import (
	"os"
	"path/filepath"
	"runtime"
	"syscall"
	"testing"
)

// ReadDirTypes lists a directory sorted, with each entry's type, and
// refuses a directory that is a symbolic link, as every open does.
func TestReadDirTypes(t *testing.T) {
	root, outside := t.TempDir(), t.TempDir()
	for _, name := range []string{"b.txt", "a.txt"} {
		if err := os.WriteFile(filepath.Join(root, "d", name), nil, 0o644); err != nil {
			if err := os.MkdirAll(filepath.Join(root, "d"), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(root, "d", name), nil, 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
	if err := os.Mkdir(filepath.Join(root, "d", "sub"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(outside, filepath.Join(root, "d", "out")); err != nil {
		t.Fatal(err)
	}
	sb, err := New(Config{Roots: []string{root}})
	if err != nil {
		t.Fatal(err)
	}
	defer sb.Close()
	d, err := sb.Resolve("d")
	if err != nil {
		t.Fatal(err)
	}
	entries, err := d.ReadDirTypes()
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, e := range entries {
		got = append(got, e.Name()+":"+e.Type().String())
	}
	want := []string{"a.txt:----------", "b.txt:----------", "out:L---------", "sub:d---------"}
	if len(got) != len(want) {
		t.Fatalf("entries %v, want %v", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("entries %v, want %v", got, want)
		}
	}
	if _, err := d.Child("out").ReadDirTypes(); err == nil {
		t.Fatal("listed a directory through a symbolic link leading out of the root")
	}
}

// ReadDirLstat describes every entry as Child(name).Lstat does: a
// symbolic link as itself, never what it leads to (here a directory
// outside the root, and a large file), each one's size, mode and time.
func TestReadDirLstat(t *testing.T) {
	root, outside := t.TempDir(), t.TempDir()
	d := filepath.Join(root, "d")
	if err := os.MkdirAll(filepath.Join(d, "sub"), 0o750); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(d, "a.txt"), []byte("hello"), 0o640); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(outside, "big"), make([]byte, 1<<16), 0o644); err != nil {
		t.Fatal(err)
	}
	for name, target := range map[string]string{"out": outside, "big": filepath.Join(outside, "big"), "dangling": "nowhere"} {
		if err := os.Symlink(target, filepath.Join(d, name)); err != nil {
			t.Fatal(err)
		}
	}
	if err := syscall.Mkfifo(filepath.Join(d, "fifo"), 0o600); err != nil {
		t.Fatal(err)
	}
	sb, err := New(Config{Roots: []string{root}})
	if err != nil {
		t.Fatal(err)
	}
	defer sb.Close()
	p, err := sb.Resolve("d")
	if err != nil {
		t.Fatal(err)
	}
	entries, err := p.ReadDirLstat()
	if err != nil {
		t.Fatal(err)
	}
	if len(entries) != 6 {
		t.Fatalf("%d entries, want 6", len(entries))
	}
	for _, e := range entries {
		got, err := e.Info()
		if err != nil {
			t.Fatalf("%s: %v", e.Name(), err)
		}
		want, err := p.Child(e.Name()).Lstat()
		if err != nil {
			t.Fatalf("%s: %v", e.Name(), err)
		}
		if got.Name() != want.Name() || got.Mode() != want.Mode() || got.Size() != want.Size() || !got.ModTime().Equal(want.ModTime()) || got.IsDir() != want.IsDir() {
			t.Errorf("%s: described as %v %d %v, Lstat says %v %d %v", e.Name(), got.Mode(), got.Size(), got.ModTime(), want.Mode(), want.Size(), want.ModTime())
		}
		if _, ok := e.(DescribedEntry); !ok && runtime.GOOS == "linux" {
			t.Errorf("%s: no Lstat, so a search would describe it again", e.Name())
		}
	}
}
