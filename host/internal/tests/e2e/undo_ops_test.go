package e2e

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/toolhost/toolhost/internal/testtree"
)

// Through the binary: delete_file of a tree (files of several modes,
// binary content, an empty directory, a link), then `toolhost undo`:
// every entry is back byte for byte with its mode. move_file of the tree
// into directories it creates, then undo: back where it was, and the
// directories the move made are gone.
func TestUndoDeleteAndMoveThroughTheBinary(t *testing.T) {
	w := newWorkspace(t)
	w.file(t, "tree/a.txt", "alpha\r\nbeta")
	w.file(t, "tree/sub/b.bin", "\x00\x01\xfe\xff")
	w.file(t, "keep.txt", "k")
	w.chmod(t, "tree/a.txt", 0o640)
	w.chmod(t, "tree/sub/b.bin", 0o600)
	if err := os.Mkdir(filepath.Join(w.dir, "tree/empty"), 0o700); err != nil {
		t.Fatal(err)
	}
	w.chmod(t, "tree/empty", 0o700)
	w.chmod(t, "tree/sub", 0o750)
	if err := os.Symlink("../../keep.txt", filepath.Join(w.dir, "tree/sub/link")); err != nil {
		t.Fatal(err)
	}
	before := testtree.Snapshot(t, w.dir)

	w.mustCall(t, "delete_file", `{"path": "tree", "recursive": true}`, "--id", "del", "--allow", "delete_file")
	if _, err := os.Lstat(filepath.Join(w.dir, "tree")); err == nil {
		t.Fatal("tree is still there after delete_file")
	}
	// The history says what each entry was: a directory with its mode,
	// a link, a file.
	out, stderr, code := w.run(t, "journal", "show", "del")
	if code != 0 || !strings.Contains(out, "directory, mode 0750 -> did not exist") || !strings.Contains(out, "symbolic link (14 bytes of target) -> did not exist") {
		t.Errorf("toolhost journal show del: exit %d\n%s%s", code, out, stderr)
	}
	rep := w.undo(t, "del")
	if len(rep.Files) != 6 {
		t.Errorf("undo of the deletion restored %+v, want the six entries of the tree", rep.Files)
	}
	testtree.Same(t, "after undo of delete_file", testtree.Snapshot(t, w.dir), before)

	w.mustCall(t, "move_file", `{"source": "tree", "destination": "x/y/moved"}`, "--id", "mv", "--allow", "move_file")
	if _, err := os.Lstat(filepath.Join(w.dir, "x/y/moved/sub/b.bin")); err != nil {
		t.Fatalf("the tree was not moved: %v", err)
	}
	w.undo(t, "mv")
	testtree.Same(t, "after undo of move_file", testtree.Snapshot(t, w.dir), before)
}

// create_directory only adds, and the host holds it to that: it runs
// without a prompt (no terminal here to ask on), whether the directory
// is new or there already, while delete_file is always asked about.
func TestCreateDirectoryIsNeverAskedAbout(t *testing.T) {
	w := newWorkspace(t)
	for _, want := range []string{"created: a/b", "exists: a/b (already a directory; nothing changed)"} {
		r, stderr, code := w.call(t, "create_directory", `{"path": "a/b"}`)
		if code != 0 || !r.OK || r.Content != want {
			t.Fatalf("create_directory a/b: exit %d, %+v, want %q\n%s", code, r, want, stderr)
		}
	}
	r, _, code := w.call(t, "delete_file", `{"path": "a", "recursive": true}`)
	if code != 1 || r.OK || r.Error == nil || !strings.Contains(r.Error.Message, "delete_file requires approval") {
		t.Fatalf("delete_file without --allow and no terminal: exit %d, %+v; want it refused for want of an approval", code, r)
	}
	if fi, err := os.Stat(filepath.Join(w.dir, "a/b")); err != nil || !fi.IsDir() {
		t.Errorf("a/b after a refused delete: %v", err)
	}
}
