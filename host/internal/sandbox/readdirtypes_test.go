package sandbox

import (
	"os"
	"path/filepath"
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
