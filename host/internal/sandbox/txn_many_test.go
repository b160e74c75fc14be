package sandbox

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"testing"
)

// stageMany stages n new files spread over dirs directories in turn, so
// consecutive files never share a directory, and returns their paths
// relative to the root.
func stageMany(t testing.TB, s *Sandbox, txn *Txn, n, dirs int) []string {
	t.Helper()
	rels := make([]string, n)
	for i := range n {
		rels[i] = fmt.Sprintf("many/d%03d/f%04d.txt", i%dirs, i)
		p, err := s.Resolve(rels[i])
		if err != nil {
			t.Fatal(err)
		}
		if _, err := txn.Stage(p, []byte(rels[i]), true); err != nil {
			t.Fatalf("Stage(%s): %v", rels[i], err)
		}
	}
	return rels
}

// openFiles counts the process's open descriptors, or skips where the
// system cannot say.
func openFiles(t testing.TB) int {
	t.Helper()
	if runtime.GOOS != "linux" {
		t.Skip("counting open descriptors needs /proc/self/fd")
	}
	entries, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Skip("no /proc/self/fd:", err)
	}
	return len(entries)
}

// A transaction holds a bounded number of descriptors,
// whatever the number of files or directories it stages (it held two per
// file until Commit, so 400 files failed under ulimit -n 512).
func TestTxn_BoundedDescriptors(t *testing.T) {
	const n, dirs = 400, 100
	const slack = 24 // the cached directories, the intent record, the runtime's own
	for _, recovery := range []bool{false, true} {
		t.Run(fmt.Sprintf("recovery=%v", recovery), func(t *testing.T) {
			cfg := Config{}
			if recovery {
				cfg.RecoveryDir = t.TempDir()
			}
			f := newFixture(t, cfg)
			before := openFiles(t)
			txn := f.s.Begin()
			defer txn.Close()
			rels := stageMany(t, f.s, txn, n, dirs)
			if got := openFiles(t) - before; got > slack {
				t.Errorf("%d files staged hold %d more descriptors, want at most %d", n, got, slack)
			}
			most := 0
			f.s.testHookBeforeRename = func(int) error {
				most = max(most, openFiles(t)-before)
				return nil
			}
			if err := txn.Commit(); err != nil {
				t.Fatal(err)
			}
			if most > slack {
				t.Errorf("committing %d files held up to %d more descriptors, want at most %d", n, most, slack)
			}
			if got := openFiles(t) - before; got > 0 {
				t.Errorf("%d descriptors more after the commit than before it", got)
			}
			want := map[string]string{}
			for _, rel := range rels {
				want[rel] = rel
			}
			wantContents(t, f.root, want)
			noTempFiles(t, f.root)
		})
	}
}

// With the parent directories closed between staging
// and commit, a parent swapped after staging (for a symlink, or for
// another directory) makes the commit fail and roll back; the rename is
// never redirected, and the first file, already renamed, is restored.
func TestTxn_ParentSwappedAfterStage(t *testing.T) {
	for _, tt := range []struct {
		name string
		swap func(t *testing.T, f fixture, dir string)
	}{
		{"symlink outside", func(t *testing.T, f fixture, dir string) {
			mustRename(t, dir, dir+".moved")
			mustSymlink(t, f.outside, dir)
		}},
		{"symlink inside", func(t *testing.T, f fixture, dir string) {
			mustRename(t, dir, dir+".moved")
			mustSymlink(t, "a", dir)
		}},
		{"another directory", func(t *testing.T, f fixture, dir string) {
			mustRename(t, dir, dir+".moved")
			if err := os.Mkdir(dir, 0o755); err != nil {
				t.Fatal(err)
			}
		}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			f := newFixture(t, Config{RecoveryDir: t.TempDir()})
			txn := f.s.Begin()
			defer txn.Close()
			for _, rel := range []string{"a.txt", "sub/b.txt", "sub/new.txt"} {
				if _, err := txn.Stage(wantResolved(t, f.s, rel, rel), []byte("PWNED"), false); err != nil {
					t.Fatal(err)
				}
			}
			tt.swap(t, f, filepath.Join(f.root, "sub"))
			var de *DenialError
			if err := txn.Commit(); !errors.As(err, &de) || !de.swapped {
				t.Fatalf("Commit after the parent was swapped = %v, want a swap denial", err)
			}
			txn.Close()
			wantContents(t, f.root, map[string]string{"a.txt": "A", "sub.moved/b.txt": "B", "sub.moved/new.txt": "", "sub/b.txt": "", "sub/new.txt": ""})
			wantContents(t, f.outside, map[string]string{"secret.txt": "SECRET", "b.txt": "", "new.txt": ""})
			// The temporary files moved away with their directory, where
			// the transaction no longer looks; anywhere else none is left.
			os.RemoveAll(filepath.Join(f.root, "sub.moved"))
			noTempFiles(t, f.root, f.outside)
		})
	}
}

func mustRename(t *testing.T, from, to string) {
	t.Helper()
	if err := os.Rename(from, to); err != nil {
		t.Fatal(err)
	}
}

// BenchmarkTxn_400Files stages and commits 400 new files in 100
// directories, as apply_patch does with a patch of that many files.
func BenchmarkTxn_400Files(b *testing.B) {
	f := newFixture(b, Config{RecoveryDir: b.TempDir()})
	for i := 0; b.Loop(); i++ {
		b.StopTimer()
		os.RemoveAll(filepath.Join(f.root, "many"))
		b.StartTimer()
		txn := f.s.Begin()
		stageMany(b, f.s, txn, 400, 100)
		if err := txn.Commit(); err != nil {
			b.Fatal(err)
		}
	}
}
