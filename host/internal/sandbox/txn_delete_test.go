//go:build unix

package sandbox

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// deleteFixture stages, in one transaction, the removal of a.txt, new
// content for sub/b.txt given mode 0600, and sub/new.txt created with
// mode 0640: what an undo does.
func deleteFixture(t *testing.T, s *Sandbox) *Txn {
	t.Helper()
	txn := s.Begin()
	t.Cleanup(func() { txn.Close() })
	a, err := s.Resolve("a.txt")
	if err != nil {
		t.Fatal(err)
	}
	if err := txn.StageDelete(a); err != nil {
		t.Fatalf("StageDelete(a.txt): %v", err)
	}
	for _, tc := range []struct {
		rel     string
		mode    fs.FileMode
		created bool
	}{{"sub/b.txt", 0o600, false}, {"sub/new.txt", 0o640, true}} {
		p, err := s.Resolve(tc.rel)
		if err != nil {
			t.Fatal(err)
		}
		created, err := txn.StageMode(p, []byte("new "+tc.rel), tc.mode, false)
		if err != nil || created != tc.created {
			t.Fatalf("StageMode(%s) = %v, %v; want created %v", tc.rel, created, err, tc.created)
		}
	}
	return txn
}

func wantMode(t *testing.T, path string, want fs.FileMode) {
	t.Helper()
	fi, err := os.Stat(path)
	if err != nil || fi.Mode().Perm() != want {
		t.Errorf("%s: mode %v (%v), want %v", path, fi.Mode().Perm(), err, want)
	}
}

// A staged removal commits with the other files,
// StageMode gives exactly the mode asked for (whatever the umask), and
// nothing is left behind.
func TestTxn_StageDeleteCommits(t *testing.T) {
	for _, recovery := range []bool{false, true} {
		t.Run(fmt.Sprintf("recovery=%v", recovery), func(t *testing.T) {
			cfg := Config{}
			if recovery {
				cfg.RecoveryDir = t.TempDir()
			}
			f := newFixture(t, cfg)
			txn := deleteFixture(t, f.s)
			if err := txn.Commit(); err != nil {
				t.Fatal(err)
			}
			wantContents(t, f.root, map[string]string{"a.txt": "", "sub/b.txt": "new sub/b.txt", "sub/new.txt": "new sub/new.txt"})
			wantMode(t, filepath.Join(f.root, "sub/b.txt"), 0o600)
			wantMode(t, filepath.Join(f.root, "sub/new.txt"), 0o640)
			noTempFiles(t, f.root)
			if recovery {
				if left, _ := os.ReadDir(cfg.RecoveryDir); len(left) != 0 {
					t.Errorf("recovery directory still holds %v", left)
				}
			}
		})
	}
}

// A failure after the removal puts the removed file
// back, with its content and mode: all or nothing.
func TestTxn_StageDeleteRollsBack(t *testing.T) {
	f := newFixture(t, Config{})
	if err := os.Chmod(filepath.Join(f.root, "a.txt"), 0o604); err != nil {
		t.Fatal(err)
	}
	txn := deleteFixture(t, f.s)
	f.s.testHookBeforeRename = func(i int) error {
		if i == 2 {
			return errors.New("injected failure")
		}
		return nil
	}
	if err := txn.Commit(); err == nil || !strings.Contains(err.Error(), "injected failure") {
		t.Fatalf("Commit = %v, want the injected failure", err)
	}
	wantContents(t, f.root, map[string]string{"a.txt": "A", "sub/b.txt": "B", "sub/new.txt": ""})
	wantMode(t, filepath.Join(f.root, "a.txt"), 0o604)
	noTempFiles(t, f.root)
}

func TestTxn_StageDeleteRefusals(t *testing.T) {
	f := newFixture(t, Config{})
	txn := f.s.Begin()
	defer txn.Close()
	missing, _ := f.s.Resolve("missing.txt")
	if err := txn.StageDelete(missing); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("StageDelete(missing.txt) = %v, want ErrNotExist", err)
	}
	dir, _ := f.s.Resolve("sub")
	if err := txn.StageDelete(dir); !errors.Is(err, ErrNotRegular) {
		t.Errorf("StageDelete(sub) = %v, want ErrNotRegular", err)
	}
	a, _ := f.s.Resolve("a.txt")
	if err := txn.StageDelete(a); err != nil {
		t.Fatal(err)
	}
	if err := txn.StageDelete(a); err == nil {
		t.Error("a file staged for removal twice was accepted")
	}
	if err := txn.Close(); err != nil {
		t.Fatal(err)
	}
	wantContents(t, f.root, map[string]string{"a.txt": "A"})
}

// The child half of TestRecover_KilledMidDelete: it stages
// deleteFixture's files and waits at the kill point for the SIGKILL.
const deleteChildEnv = "TOOLHOST_TEST_TXN_DELETE_CHILD"

func TestRecoverDelete_Child(t *testing.T) {
	s := childSandbox(t, deleteChildEnv, "TestRecover_KilledMidDelete")
	txn := deleteFixture(t, s)
	if err := txn.Commit(); err != nil {
		t.Fatal(err)
	}
	t.Fatal("the commit finished; the kill point was never reached")
}

// A process killed at any point of a commit that removes
// a file leaves nothing Recover does not put right: before the removal
// nothing changed; after it and before the last rename the removed file
// is back and the others as they were; after every rename the commit
// stands and the removed file's backup is gone.
func TestRecover_KilledMidDelete(t *testing.T) {
	old := map[string]string{"a.txt": "A", "sub/b.txt": "B", "sub/new.txt": ""}
	committed := map[string]string{"a.txt": "", "sub/b.txt": "new sub/b.txt", "sub/new.txt": "new sub/new.txt"}
	tests := []struct {
		point     string
		want      map[string]string
		completed bool
		restored  []string
	}{
		{"rename:0", old, false, nil},                            // nothing renamed yet
		{"rename:1", old, false, []string{"a.txt"}},              // a.txt removed (renamed to its backup)
		{"rename:2", old, false, []string{"a.txt", "sub/b.txt"}}, // and sub/b.txt replaced
		{"renamed:0", committed, true, nil},                      // every step done, backups still there
	}
	for _, tt := range tests {
		t.Run(tt.point, func(t *testing.T) {
			f := newFixture(t, Config{})
			if err := os.Chmod(filepath.Join(f.root, "a.txt"), 0o604); err != nil {
				t.Fatal(err)
			}
			recovery := filepath.Join(t.TempDir(), "txn")
			if err := os.Mkdir(recovery, 0o700); err != nil {
				t.Fatal(err)
			}
			killDeleteChildAt(t, f.root, recovery, tt.point)

			s, err := New(Config{Roots: []string{f.root}, RecoveryDir: recovery})
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			recs, err := s.Recover()
			if err != nil || len(recs) != 1 {
				t.Fatalf("Recover = %+v, %v; want one record replayed", recs, err)
			}
			r := recs[0]
			if r.Completed != tt.completed || !sameFiles(f.root, r.Restored, tt.restored) || len(r.Kept) != 0 {
				t.Errorf("Recovered = %+v, want completed %v, restored %v", r, tt.completed, tt.restored)
			}
			wantContents(t, f.root, tt.want)
			if !tt.completed {
				wantMode(t, filepath.Join(f.root, "a.txt"), 0o604)
			}
			noTempFiles(t, f.root)
			if left, _ := os.ReadDir(recovery); len(left) != 0 {
				t.Errorf("recovery directory still holds %v", left)
			}
		})
	}
}

// A file created again where an interrupted commit had removed one is
// kept, and the removed content stays in the backup Recover names.
func TestRecover_DeleteRecreatedIsKept(t *testing.T) {
	f := newFixture(t, Config{})
	recovery := filepath.Join(t.TempDir(), "txn")
	if err := os.Mkdir(recovery, 0o700); err != nil {
		t.Fatal(err)
	}
	killDeleteChildAt(t, f.root, recovery, "rename:1")
	mustWrite(t, filepath.Join(f.root, "a.txt"), "someone else's")
	s, err := New(Config{Roots: []string{f.root}, RecoveryDir: recovery})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	recs, err := s.Recover()
	if err != nil || len(recs) != 1 {
		t.Fatalf("Recover = %+v, %v", recs, err)
	}
	if len(recs[0].Kept) != 1 || !strings.Contains(recs[0].Kept[0], "a.txt was removed") {
		t.Fatalf("Kept = %q, want a.txt named", recs[0].Kept)
	}
	wantContents(t, f.root, map[string]string{"a.txt": "someone else's", "sub/b.txt": "B"})
	if leftovers(t, f.root) != 1 {
		t.Errorf("the removed content's backup is gone")
	}
}

// killDeleteChildAt runs TestRecoverDelete_Child until it reaches point,
// then SIGKILLs it.
func killDeleteChildAt(t *testing.T, root, recovery, point string) {
	t.Helper()
	killChildAt(t, "TestRecoverDelete_Child", deleteChildEnv, root, recovery, point)
}
