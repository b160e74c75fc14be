package sandbox

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"unicode/utf8"
)

// txnFixture stages new content for a.txt, sub/new.txt (created) and
// sub/b.txt, in that order, with a.txt made 0600 to check modes survive.
func txnFixture(t *testing.T) (fixture, *Txn) {
	t.Helper()
	f := newFixture(t, Config{})
	if err := os.Chmod(filepath.Join(f.root, "a.txt"), 0o600); err != nil {
		t.Fatal(err)
	}
	txn := f.s.Begin()
	t.Cleanup(func() { txn.Close() })
	for _, tc := range []struct {
		rel     string
		created bool
	}{{"a.txt", false}, {"sub/new.txt", true}, {"sub/b.txt", false}} {
		created, err := txn.Stage(wantResolved(t, f.s, tc.rel, tc.rel), []byte("new "+tc.rel), false)
		if err != nil {
			t.Fatalf("Stage(%s): %v", tc.rel, err)
		}
		if created != tc.created {
			t.Errorf("Stage(%s) created = %v, want %v", tc.rel, created, tc.created)
		}
	}
	return f, txn
}

// wantContents checks every file of the fixture against want ("" means
// the file must not exist).
func wantContents(t *testing.T, root string, want map[string]string) {
	t.Helper()
	for rel, content := range want {
		got, err := os.ReadFile(filepath.Join(root, rel))
		switch {
		case content == "" && !errors.Is(err, fs.ErrNotExist):
			t.Errorf("%s exists (%q, %v), want it absent", rel, got, err)
		case content != "" && (err != nil || string(got) != content):
			t.Errorf("%s = %q (%v), want %q", rel, got, err, content)
		}
	}
}

func TestTxn_Commit(t *testing.T) {
	f, txn := txnFixture(t)
	if err := txn.Commit(); err != nil {
		t.Fatal(err)
	}
	wantContents(t, f.root, map[string]string{"a.txt": "new a.txt", "sub/new.txt": "new sub/new.txt", "sub/b.txt": "new sub/b.txt"})
	if fi, _ := os.Stat(filepath.Join(f.root, "a.txt")); fi.Mode().Perm() != 0o600 {
		t.Errorf("a.txt mode = %v, want 0600 kept", fi.Mode().Perm())
	}
	noTempFiles(t, f.root)
}

// T-PATCH-01 (FR-TOOL-PATCH-01a): a failure while committing any file,
// including the last, leaves every file as it was and nothing behind.
func TestTxn_T_PATCH_01_FailureRollsBack(t *testing.T) {
	old := map[string]string{"a.txt": "A", "sub/new.txt": "", "sub/b.txt": "B"}
	for failAt := range 3 {
		t.Run([]string{"first", "created", "last"}[failAt], func(t *testing.T) {
			f, txn := txnFixture(t)
			injected := errors.New("injected I/O error")
			f.s.testHookBeforeRename = func(i int) error {
				if i == failAt {
					return injected
				}
				return nil
			}
			if err := txn.Commit(); !errors.Is(err, injected) {
				t.Fatalf("Commit error = %v, want the injected one", err)
			}
			wantContents(t, f.root, old)
			if fi, _ := os.Stat(filepath.Join(f.root, "a.txt")); fi.Mode().Perm() != 0o600 {
				t.Errorf("a.txt mode = %v after rollback, want 0600", fi.Mode().Perm())
			}
			noTempFiles(t, f.root)
		})
	}
}

// A real I/O failure on the last file: its target turned into a directory
// after staging, so the rename fails even for root.
func TestTxn_T_PATCH_01_RealRenameFailure(t *testing.T) {
	f, txn := txnFixture(t)
	last := filepath.Join(f.root, "sub", "b.txt")
	f.s.testHookBeforeRename = func(i int) error {
		if i == 2 {
			os.Remove(last)
			mustWrite(t, filepath.Join(last, "keep"), "K")
		}
		return nil
	}
	err := txn.Commit()
	if err == nil || !strings.Contains(err.Error(), "commit sub/b.txt") {
		t.Fatalf("Commit error = %v, want one naming sub/b.txt", err)
	}
	wantContents(t, f.root, map[string]string{"a.txt": "A", "sub/new.txt": "", "sub/b.txt/keep": "K"})
	noTempFiles(t, f.root)
}

// If restoring fails too, the old content survives in a backup the error
// names: a failed commit never loses data.
func TestTxn_RollbackFailureKeepsBackup(t *testing.T) {
	f, txn := txnFixture(t)
	first := filepath.Join(f.root, "a.txt")
	f.s.testHookBeforeRename = func(i int) error {
		if i == 2 {
			// Make a.txt's restore fail: a directory cannot be renamed over.
			os.Remove(first)
			mustWrite(t, filepath.Join(first, "x"), "X")
			return errors.New("injected")
		}
		return nil
	}
	err := txn.Commit()
	var rb *RollbackError
	if !errors.As(err, &rb) {
		t.Fatalf("Commit error = %v, want a *RollbackError", err)
	}
	backup, ok := rb.Unrestored[first]
	if !ok || backup == "" {
		t.Fatalf("Unrestored = %v, want a backup for %s", rb.Unrestored, first)
	}
	if got, err := os.ReadFile(backup); err != nil || string(got) != "A" {
		t.Errorf("backup %s = %q, %v; want the old content", backup, got, err)
	}
	if !strings.Contains(err.Error(), backup) {
		t.Errorf("error %q does not name the backup", err)
	}
	wantContents(t, f.root, map[string]string{"sub/new.txt": "", "sub/b.txt": "B"})
}

func TestTxn_StageRefusals(t *testing.T) {
	f := newFixture(t, Config{})
	mustWrite(t, filepath.Join(f.root, "plain"), "P")
	txn := f.s.Begin()
	defer txn.Close()
	a := wantResolved(t, f.s, "a.txt", "a.txt")
	if _, err := txn.Stage(a, []byte("x"), false); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		path string
		want string
	}{
		{"same file twice", "./a.txt", "staged twice"},
		{"directory", "sub", ErrNotRegular.Error()},
		{"parent is a file", "plain/x", "plain"},
		{"missing parent", "nodir/x", "no such file"},
	}
	for _, tt := range tests {
		p, err := f.s.Resolve(tt.path)
		if err == nil {
			_, err = txn.Stage(p, []byte("x"), tt.name == "parent is a file")
		}
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%s: Stage(%q) error = %v, want %q", tt.name, tt.path, err, tt.want)
		}
	}
	txn.Close()
	wantContents(t, f.root, map[string]string{"a.txt": "A", "plain": "P"})
	noTempFiles(t, f.root)
}

// A file that appears between staging and commit is not overwritten.
func TestTxn_CreatedFileAppeared(t *testing.T) {
	f := newFixture(t, Config{})
	txn := f.s.Begin()
	defer txn.Close()
	if _, err := txn.Stage(wantResolved(t, f.s, "a.txt", "a.txt"), []byte("x"), false); err != nil {
		t.Fatal(err)
	}
	p, err := f.s.Resolve("fresh.txt")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := txn.Stage(p, []byte("mine"), false); err != nil {
		t.Fatal(err)
	}
	mustWrite(t, filepath.Join(f.root, "fresh.txt"), "theirs")
	if err := txn.Commit(); !errors.Is(err, fs.ErrExist) {
		t.Fatalf("Commit error = %v, want ErrExist", err)
	}
	wantContents(t, f.root, map[string]string{"a.txt": "A", "fresh.txt": "theirs"})
	noTempFiles(t, f.root)
}

// Read-only patterns: readable, never writable, whatever writes. (A directory of its own: .git is protected at any depth whatever the patterns, .)
func TestReadOnlyPatterns(t *testing.T) {
	f := newFixture(t, Config{ReadOnlyPatterns: []string{"gen/**"}})
	mustWrite(t, filepath.Join(f.root, "gen", "config"), "[core]")
	tests := []struct {
		path     string
		readOnly bool
	}{
		{"gen/config", true},
		{"gen/new-file", true},
		{"sub/gen/config", false},
		{"a.txt", false},
	}
	for _, tt := range tests {
		p, err := f.s.Resolve(tt.path)
		if err != nil {
			t.Fatalf("Resolve(%q): %v (read-only paths stay readable)", tt.path, err)
		}
		if _, ro := f.s.ReadOnly(p); ro != tt.readOnly {
			t.Errorf("ReadOnly(%q) = %v, want %v", tt.path, ro, tt.readOnly)
		}
		_, err = f.s.WriteFileAtomic(p, []byte("x"), true)
		var de *DenialError
		if got := errors.As(err, &de) && de.Reason == ReadOnly; got != tt.readOnly {
			t.Errorf("write %q: error %v, want read-only denial %v", tt.path, err, tt.readOnly)
		}
	}
	wantContents(t, f.root, map[string]string{"gen/config": "[core]", "gen/new-file": ""})
	if _, err := New(Config{Roots: []string{f.root}, ReadOnlyPatterns: []string{"[bad"}}); err == nil {
		t.Error("a bad read-only pattern was accepted")
	}
}

// StageNew (a write approved as a creation): an existing
// target is refused before anything is written, and one that appears
// before the commit is kept, whoever made it.
func TestTxn_StageNew(t *testing.T) {
	f := newFixture(t, Config{})
	txn := f.s.Begin()
	defer txn.Close()
	if err := txn.StageNew(wantResolved(t, f.s, "a.txt", "a.txt"), []byte("x"), false); !errors.Is(err, fs.ErrExist) {
		t.Fatalf("StageNew of an existing file = %v, want ErrExist", err)
	}
	noTempFiles(t, f.root)
	p, err := f.s.Resolve("fresh.txt")
	if err != nil {
		t.Fatal(err)
	}
	if err := txn.StageNew(p, []byte("mine"), false); err != nil {
		t.Fatal(err)
	}
	mustWrite(t, filepath.Join(f.root, "fresh.txt"), "theirs")
	if err := txn.Commit(); !errors.Is(err, fs.ErrExist) {
		t.Fatalf("Commit = %v, want ErrExist", err)
	}
	wantContents(t, f.root, map[string]string{"a.txt": "A", "fresh.txt": "theirs"})
	noTempFiles(t, f.root)
}

// Leftover names say what they are and whose they are,
// and stay within the usual 255-byte limit.
func TestLeftoverName(t *testing.T) {
	long := strings.Repeat("é", 150)
	for _, tt := range []struct{ kind, base, want string }{
		{tmpKind, "main.go", ".toolhost-tmp-0123456789abcdef-main.go"},
		{bakKind, "main.go", ".toolhost-bak-0123456789abcdef-main.go"},
	} {
		if got := leftoverName(tt.kind, "0123456789abcdef", tt.base); got != tt.want {
			t.Errorf("leftoverName(%s, %s) = %q, want %q", tt.kind, tt.base, got, tt.want)
		}
	}
	if got := leftoverName(tmpKind, newStageID(), long); len(got) > 255 || !utf8.ValidString(got) {
		t.Errorf("leftover name of a long base is %d bytes (valid UTF-8: %v)", len(got), utf8.ValidString(got))
	}
}
