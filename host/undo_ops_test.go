package host_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/toolhost/toolhost/host"
	"github.com/toolhost/toolhost/internal/testtree"
)

// delete_file of a tree, with its modes, an empty directory and a link,
// then undo: every entry is back byte for byte with its mode; move_file
// then undo: back where it was, and the directories the move made are
// gone again; create_directory then undo: the directories it made are
// removed.
func TestUndoDeleteMoveMkdir(t *testing.T) {
	h, root := undoHost(t, map[string]string{"tree/a.txt": "alpha\n", "tree/sub/b.bin": "\x00\x01\xff", "keep.txt": "k"}, nil)
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(os.MkdirAll(filepath.Join(root, "tree/empty"), 0o755))
	must(os.Chmod(filepath.Join(root, "tree/empty"), 0o700))
	must(os.Chmod(filepath.Join(root, "tree/sub"), 0o750))
	must(os.Chmod(filepath.Join(root, "tree/sub/b.bin"), 0o600))
	must(os.Symlink("../keep.txt", filepath.Join(root, "tree/sub/link")))
	before := testtree.Snapshot(t, root)

	runBatch(t, h, "batch_del", call("del", "delete_file", `{"path": "tree", "recursive": true}`))
	if _, err := os.Lstat(filepath.Join(root, "tree")); err == nil {
		t.Fatal("tree is still there after delete_file")
	}
	if _, err := h.Undo(context.Background(), "del", host.UndoOptions{}); err != nil {
		t.Fatal(err)
	}
	testtree.Same(t, "after undo of delete_file", testtree.Snapshot(t, root), before)

	runBatch(t, h, "batch_mv", call("mv", "move_file", `{"source": "tree", "destination": "x/y/moved"}`))
	if _, err := os.Lstat(filepath.Join(root, "x/y/moved/sub/b.bin")); err != nil {
		t.Fatalf("the tree was not moved: %v", err)
	}
	rep, err := h.Undo(context.Background(), "mv", host.UndoOptions{})
	if err != nil {
		t.Fatal(err)
	}
	testtree.Same(t, "after undo of move_file", testtree.Snapshot(t, root), before)
	if len(rep.Files) == 0 {
		t.Errorf("undo report lists no files: %+v", rep)
	}

	runBatch(t, h, "batch_mk", call("mk", "create_directory", `{"path": "m/n"}`))
	if fi, err := os.Stat(filepath.Join(root, "m/n")); err != nil || !fi.IsDir() {
		t.Fatalf("m/n: %v", err)
	}
	if _, err := h.Undo(context.Background(), "mk", host.UndoOptions{}); err != nil {
		t.Fatal(err)
	}
	testtree.Same(t, "after undo of create_directory", testtree.Snapshot(t, root), before)
}

// Undo refuses, changing nothing, to remove a directory a call made when
// something was put in it since.
func TestUndoMkdirKeepsWhatWasPutThere(t *testing.T) {
	h, root := undoHost(t, nil, nil)
	runBatch(t, h, "batch_mk", call("mk", "create_directory", `{"path": "m"}`))
	if err := os.WriteFile(filepath.Join(root, "m/later.txt"), []byte("later"), 0o644); err != nil {
		t.Fatal(err)
	}
	_, err := h.Undo(context.Background(), "mk", host.UndoOptions{})
	if err == nil || !strings.Contains(err.Error(), "later.txt") {
		t.Fatalf("undo = %v, want a refusal naming later.txt", err)
	}
	if b, err := os.ReadFile(filepath.Join(root, "m/later.txt")); err != nil || string(b) != "later" {
		t.Errorf("m/later.txt after a refused undo: %q, %v", b, err)
	}
}
