//go:build unix

package sandbox

import (
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
)

// snapshot describes every entry under root: a file by its mode and
// content, a link by its target, a directory by its mode.
func snapshot(t *testing.T, root string) map[string]string {
	t.Helper()
	out := map[string]string{}
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, p)
		fi, err := os.Lstat(p)
		if err != nil {
			return err
		}
		switch {
		case rel == ".":
		case fi.Mode()&fs.ModeSymlink != 0:
			target, _ := os.Readlink(p)
			out[rel] = "link -> " + target
		case fi.IsDir():
			out[rel] = fmt.Sprintf("dir %v", fi.Mode().Perm())
		default:
			b, _ := os.ReadFile(p)
			out[rel] = fmt.Sprintf("file %v %q", fi.Mode().Perm(), b)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// diffSnapshots says how got differs from want, "" when it does not.
func diffSnapshots(got, want map[string]string) string {
	var b strings.Builder
	for _, k := range slices.Sorted(maps.Keys(want)) {
		if got[k] != want[k] {
			fmt.Fprintf(&b, "\n  %s: %q, want %q", k, got[k], want[k])
		}
	}
	for _, k := range slices.Sorted(maps.Keys(got)) {
		if _, ok := want[k]; !ok {
			fmt.Fprintf(&b, "\n  %s: %q, want nothing", k, got[k])
		}
	}
	return b.String()
}

// opsTree is the tree the tests of removals and moves start from: files
// of several modes, a nested directory, a link inside, a link out of the
// root and a link to the recovery directory.
func opsTree(t *testing.T, root, outside, recovery string) {
	t.Helper()
	for name, content := range map[string]string{
		"a.txt": "A", "b.txt": "B", "dir/x.txt": "X", "dir/sub/y.txt": "Y", "dir/sub/z.sh": "Z",
		"other/o.txt": "O",
	} {
		mustWrite(t, filepath.Join(root, name), content)
	}
	must(t, os.Chmod(filepath.Join(root, "dir/sub/z.sh"), 0o751))
	must(t, os.Chmod(filepath.Join(root, "dir/sub"), 0o750))
	must(t, os.Symlink("a.txt", filepath.Join(root, "in-link")))
	must(t, os.Symlink(filepath.Join(outside, "secret.txt"), filepath.Join(root, "out-link")))
	must(t, os.Symlink(recovery, filepath.Join(root, "state-link")))
	must(t, os.Symlink("../a.txt", filepath.Join(root, "dir/sub/rel-link")))
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// opsFixture makes the tree in a new root and a sandbox on it (and on
// extra roots) with a recovery directory outside the root.
func opsFixture(t *testing.T, extraRoots ...string) (s *Sandbox, root, outside, recovery string) {
	t.Helper()
	root, outside = canonTempDir(t), canonTempDir(t)
	recovery = filepath.Join(canonTempDir(t), "txn")
	must(t, os.MkdirAll(recovery, 0o700))
	mustWrite(t, filepath.Join(outside, "secret.txt"), "SECRET")
	opsTree(t, root, outside, recovery)
	s, err := New(Config{Roots: append([]string{root}, extraRoots...), RecoveryDir: recovery, AllowAbsolute: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s, root, outside, recovery
}

// entry resolves name as the entry it names: a final symbolic link is
// the link itself (its parent resolved, then Child), as a removal or a
// move takes it.
func entry(t *testing.T, s *Sandbox, name string) Path {
	t.Helper()
	dir, base := filepath.Split(name)
	if dir == "" {
		dir = "."
	}
	parent, err := s.Resolve(dir)
	if err != nil {
		t.Fatal(err)
	}
	p := parent.Child(base)
	if fi, err := p.Lstat(); err == nil && fi.Mode()&fs.ModeSymlink != 0 {
		return p
	}
	p, err = s.Resolve(name)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// StageRemove removes a file, a link (the link only, wherever it points:
// inside, out of the root, at the recovery directory) or a tree, and
// refuses a directory without recursive and what is not there.
func TestTxn_StageRemove(t *testing.T) {
	tests := []struct {
		name      string
		recursive bool
		gone      []string // entries that must be gone
		wantErr   error
	}{
		{name: "a.txt", gone: []string{"a.txt"}},
		{name: "in-link", gone: []string{"in-link"}},
		{name: "out-link", gone: []string{"out-link"}},
		{name: "state-link", gone: []string{"state-link"}},
		{name: "dir/sub/rel-link", gone: []string{"dir/sub/rel-link"}},
		{name: "dir", recursive: true, gone: []string{"dir", "dir/x.txt", "dir/sub", "dir/sub/y.txt", "dir/sub/z.sh", "dir/sub/rel-link"}},
		{name: "dir/sub", recursive: true, gone: []string{"dir/sub", "dir/sub/y.txt", "dir/sub/z.sh", "dir/sub/rel-link"}},
		{name: "dir", wantErr: ErrIsDirectory},
		{name: "missing.txt", wantErr: fs.ErrNotExist},
	}
	for _, tt := range tests {
		t.Run(fmt.Sprintf("%s recursive=%v", tt.name, tt.recursive), func(t *testing.T) {
			s, root, outside, recovery := opsFixture(t)
			before := snapshot(t, root)
			txn := s.Begin()
			defer txn.Close()
			err := txn.StageRemove(entry(t, s, tt.name), tt.recursive)
			if tt.wantErr != nil {
				if !errors.Is(err, tt.wantErr) {
					t.Fatalf("StageRemove = %v, want %v", err, tt.wantErr)
				}
				txn.Close()
				if d := diffSnapshots(snapshot(t, root), before); d != "" {
					t.Errorf("a refused removal changed the tree:%s", d)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if d := diffSnapshots(snapshot(t, root), before); d != "" {
				t.Errorf("staging changed the tree:%s", d)
			}
			if err := txn.Commit(); err != nil {
				t.Fatal(err)
			}
			want := maps.Clone(before)
			for _, g := range tt.gone {
				delete(want, g)
			}
			if d := diffSnapshots(snapshot(t, root), want); d != "" {
				t.Errorf("after the commit:%s", d)
			}
			wantContents(t, outside, map[string]string{"secret.txt": "SECRET"})
			if fi, err := os.Stat(recovery); err != nil || !fi.IsDir() {
				t.Errorf("recovery directory: %v", err)
			}
			if left, _ := os.ReadDir(recovery); len(left) != 0 {
				t.Errorf("recovery directory still holds %v", left)
			}
		})
	}
}

// StageDelete, which undo uses, still refuses anything but a regular
// file, a link included.
func TestTxn_StageDeleteRefusesLinksAndDirectories(t *testing.T) {
	s, _, _, _ := opsFixture(t)
	for _, name := range []string{"in-link", "dir"} {
		txn := s.Begin()
		if err := txn.StageDelete(entry(t, s, name)); !errors.Is(err, ErrNotRegular) {
			t.Errorf("StageDelete(%s) = %v, want ErrNotRegular", name, err)
		}
		txn.Close()
	}
}

// StageMkdir makes missing directories, says whether it made p, refuses
// a file in the way, and a Txn that does not commit removes what it made
// while it is empty.
func TestTxn_StageMkdir(t *testing.T) {
	tests := []struct {
		name    string
		commit  bool
		created bool
		made    []string
		wantErr error
	}{
		{name: "new", commit: true, created: true, made: []string{"new"}},
		{name: "n1/n2/n3", commit: true, created: true, made: []string{"n1", "n1/n2", "n1/n2/n3"}},
		{name: "dir/new", commit: true, created: true, made: []string{"dir/new"}},
		{name: "dir/sub", commit: true},
		{name: "n1/n2/n3", commit: false, created: true},
		{name: "a.txt", wantErr: ErrNotDirectory},
		{name: "a.txt/x", wantErr: ErrNotDirectory},
	}
	for _, tt := range tests {
		t.Run(fmt.Sprintf("%s commit=%v", tt.name, tt.commit), func(t *testing.T) {
			s, root, _, _ := opsFixture(t)
			before := snapshot(t, root)
			p, err := s.Resolve(tt.name)
			if err != nil {
				t.Fatal(err)
			}
			txn := s.Begin()
			created, err := txn.StageMkdir(p)
			if tt.wantErr != nil || err != nil {
				if !errors.Is(err, tt.wantErr) {
					t.Fatalf("StageMkdir = %v, want %v", err, tt.wantErr)
				}
				txn.Close()
				if d := diffSnapshots(snapshot(t, root), before); d != "" {
					t.Errorf("a refused mkdir changed the tree:%s", d)
				}
				return
			}
			if created != tt.created {
				t.Errorf("created = %v, want %v", created, tt.created)
			}
			want := maps.Clone(before)
			if tt.commit {
				if err := txn.Commit(); err != nil {
					t.Fatal(err)
				}
				for _, m := range tt.made {
					want[m] = fmt.Sprintf("dir %v", fs.FileMode(0o777&^umask()))
				}
			} else {
				txn.Close()
			}
			if d := diffSnapshots(snapshot(t, root), want); d != "" {
				t.Errorf("after the transaction:%s", d)
			}
		})
	}
}

func umask() fs.FileMode {
	m := syscall.Umask(0)
	syscall.Umask(m)
	return fs.FileMode(m)
}

// shmRoot returns a new directory on another file system than dir, or
// skips the test saying why there is none.
func shmRoot(t *testing.T, dir string) string {
	t.Helper()
	var a, b syscall.Stat_t
	if err := syscall.Stat("/dev/shm", &a); err != nil {
		t.Skipf("no /dev/shm for a second file system: %v", err)
	}
	if err := syscall.Stat(dir, &b); err != nil {
		t.Fatal(err)
	}
	if a.Dev == b.Dev {
		t.Skip("/dev/shm is on the same file system as the test's temporary directory; no second file system to move across")
	}
	d, err := os.MkdirTemp("/dev/shm", "toolhost-txn-")
	if err != nil {
		t.Skipf("cannot create a directory in /dev/shm: %v", err)
	}
	t.Cleanup(func() { os.RemoveAll(d) })
	canon, err := filepath.EvalSymlinks(d)
	if err != nil {
		t.Fatal(err)
	}
	return canon
}

// snapshotRoots is snapshot of several roots, each entry prefixed by
// its root's key.
func snapshotRoots(t *testing.T, roots map[string]string) map[string]string {
	t.Helper()
	out := map[string]string{}
	for key, dir := range roots {
		for rel, v := range snapshot(t, dir) {
			out[key+"/"+rel] = v
		}
	}
	return out
}

// moved is want after moving src (and everything under it) to dst,
// replacing whatever dst was.
func moved(want map[string]string, src, dst string) map[string]string {
	under := func(k, top string) bool { return k == top || strings.HasPrefix(k, top+"/") }
	out := map[string]string{}
	for k, v := range want {
		if !under(k, src) && !under(k, dst) {
			out[k] = v
		}
	}
	for k, v := range want {
		if under(k, src) {
			out[dst+strings.TrimPrefix(k, src)] = v
		}
	}
	return out
}

// StageMove moves a file, a link (as a link) or a tree, within a
// directory, to another, to another root on the same file system and to
// one on another file system (a copy keeping modes and links), over an
// existing destination only with overwrite, and refuses moving a
// directory into itself or over what contains it.
func TestTxn_StageMove(t *testing.T) {
	tests := []struct {
		src, dst   string // "R1/..." the main root, "R2/..." the second
		overwrite  bool
		createDirs bool
		wantErr    error // nil: success
		errText    string
	}{
		{src: "R1/a.txt", dst: "R1/a2.txt"},
		{src: "R1/a.txt", dst: "R1/other/a.txt"},
		{src: "R1/dir", dst: "R1/other/dir2"},
		{src: "R1/out-link", dst: "R1/other/out-link"},
		{src: "R1/state-link", dst: "R1/other/state-link"},
		{src: "R1/a.txt", dst: "R1/b.txt", overwrite: true},
		{src: "R1/dir/sub", dst: "R1/other", overwrite: true},
		{src: "R1/a.txt", dst: "R1/new/deep/a.txt", createDirs: true},
		{src: "R1/a.txt", dst: "R1/b.txt", wantErr: fs.ErrExist},
		{src: "R1/a.txt", dst: "R1/nodir/a.txt", wantErr: fs.ErrNotExist},
		{src: "R1/missing", dst: "R1/m2", wantErr: fs.ErrNotExist},
		{src: "R1/dir", dst: "R1/dir/sub/dir", errText: "into itself"},
		{src: "R1/dir", dst: "R1/dir", errText: "into itself"},
		{src: "R1/dir/sub", dst: "R1/dir", overwrite: true, errText: "contains"},
		{src: "R1/a.txt", dst: "R2/a.txt"},
		{src: "R1/dir", dst: "R2/dir"},
		{src: "R1/out-link", dst: "R2/out-link"},
		{src: "R1/a.txt", dst: "R2/o.txt", overwrite: true},
		{src: "R1/dir", dst: "R2/sub/dir", createDirs: true},
	}
	for _, fsKind := range []string{"same-fs", "other-fs"} {
		for _, tt := range tests {
			if fsKind == "other-fs" && !strings.HasPrefix(tt.dst, "R2/") {
				continue
			}
			t.Run(fmt.Sprintf("%s %s to %s overwrite=%v", fsKind, tt.src, tt.dst, tt.overwrite), func(t *testing.T) {
				second := canonTempDir(t)
				if fsKind == "other-fs" {
					second = shmRoot(t, second)
				}
				mustWrite(t, filepath.Join(second, "o.txt"), "R2 O")
				s, root, outside, recovery := opsFixture(t, second)
				roots := map[string]string{"R1": root, "R2": second}
				abs := func(name string) string {
					key, rel, _ := strings.Cut(name, "/")
					return filepath.Join(roots[key], rel)
				}
				before := snapshotRoots(t, roots)
				fi, err := os.Lstat(filepath.Join(root, "a.txt"))
				if err != nil {
					t.Fatal(err)
				}
				mtimeA := fi.ModTime()
				txn := s.Begin()
				defer txn.Close()
				err = txn.StageMove(entry(t, s, abs(tt.src)), entry(t, s, abs(tt.dst)), tt.overwrite, tt.createDirs)
				if err == nil {
					err = txn.Commit()
				}
				if tt.wantErr != nil || tt.errText != "" {
					if err == nil || (tt.wantErr != nil && !errors.Is(err, tt.wantErr)) || !strings.Contains(err.Error(), tt.errText) {
						t.Fatalf("move = %v, want %v %q", err, tt.wantErr, tt.errText)
					}
					txn.Close()
					if d := diffSnapshots(snapshotRoots(t, roots), before); d != "" {
						t.Errorf("a refused move changed the tree:%s", d)
					}
					return
				}
				if err != nil {
					t.Fatal(err)
				}
				want := moved(before, tt.src, tt.dst)
				if tt.createDirs {
					for d := filepath.Dir(tt.dst); before[d] == "" && strings.Contains(d, "/"); d = filepath.Dir(d) {
						want[d] = fmt.Sprintf("dir %v", fs.FileMode(0o777&^umask()))
					}
				}
				if d := diffSnapshots(snapshotRoots(t, roots), want); d != "" {
					t.Errorf("after the move:%s", d)
				}
				wantContents(t, outside, map[string]string{"secret.txt": "SECRET"})
				if left, _ := os.ReadDir(recovery); len(left) != 0 {
					t.Errorf("recovery directory still holds %v", left)
				}
				if fsKind == "other-fs" && tt.src == "R1/a.txt" {
					// A copy keeps the modification time too.
					if fi, err := os.Lstat(abs(tt.dst)); err != nil || !fi.ModTime().Equal(mtimeA) {
						t.Errorf("%s: modification time %v (%v), want a.txt's %v", tt.dst, fi.ModTime(), err, mtimeA)
					}
				}
			})
		}
	}
}

// A tree is neither removed nor moved when it holds what no tool may
// write (git's internals, toolhost's configuration, a denied file,
// toolhost's state, another root), nor moved where an entry would
// become such a path; a parent directory swapped for a symlink between
// staging and commit is refused and changes nothing.
func TestTxn_TreeAndSwapRefusals(t *testing.T) {
	tests := []struct {
		name  string
		setup func(t *testing.T, root, second, recovery string)
		stage func(txn *Txn, s *Sandbox, root string) error
		// swap runs between staging and commit; nil: staging must fail.
		swap func(t *testing.T, root, outside string)
	}{
		{name: "remove a tree holding .git", setup: func(t *testing.T, root, _, _ string) {
			mustWrite(t, filepath.Join(root, "dir/repo/.git/config"), "[core]")
		}, stage: func(txn *Txn, s *Sandbox, root string) error {
			return txn.StageRemove(entry(t, s, filepath.Join(root, "dir")), true)
		}},
		{name: "move a tree holding toolhost.toml", setup: func(t *testing.T, root, _, _ string) {
			mustWrite(t, filepath.Join(root, "dir/toolhost.toml"), "x")
		}, stage: func(txn *Txn, s *Sandbox, root string) error {
			return txn.StageMove(entry(t, s, filepath.Join(root, "dir")), entry(t, s, filepath.Join(root, "moved")), false, false)
		}},
		{name: "remove a tree holding a denied file", setup: func(t *testing.T, root, _, _ string) {
			mustWrite(t, filepath.Join(root, "dir/.ssh/id_rsa"), "KEY")
		}, stage: func(txn *Txn, s *Sandbox, root string) error {
			return txn.StageRemove(entry(t, s, filepath.Join(root, "dir")), true)
		}},
		{name: "move a tree to where an entry becomes read-only", setup: func(t *testing.T, root, _, _ string) {
			must(t, os.MkdirAll(filepath.Join(root, "locked"), 0o755))
		}, stage: func(txn *Txn, s *Sandbox, root string) error {
			// "locked/dir" is writable; "locked/dir/x.txt" is not.
			return txn.StageMove(entry(t, s, filepath.Join(root, "dir")), entry(t, s, filepath.Join(root, "locked/dir")), false, false)
		}},
		{name: "remove a tree holding another root", stage: func(txn *Txn, s *Sandbox, root string) error {
			return txn.StageRemove(entry(t, s, filepath.Join(root, "dir")), true)
		}},
		{name: "remove, parent swapped for a link", stage: func(txn *Txn, s *Sandbox, root string) error {
			return txn.StageRemove(entry(t, s, filepath.Join(root, "dir/x.txt")), false)
		}, swap: swapDirForLink("dir")},
		{name: "move, source parent swapped for a link", stage: func(txn *Txn, s *Sandbox, root string) error {
			return txn.StageMove(entry(t, s, filepath.Join(root, "dir/x.txt")), entry(t, s, filepath.Join(root, "other/x.txt")), false, false)
		}, swap: swapDirForLink("dir")},
		{name: "move, destination parent swapped for a link", stage: func(txn *Txn, s *Sandbox, root string) error {
			return txn.StageMove(entry(t, s, filepath.Join(root, "a.txt")), entry(t, s, filepath.Join(root, "other/a.txt")), false, false)
		}, swap: swapDirForLink("other")},
		{name: "remove a tree, its parent swapped for a link", stage: func(txn *Txn, s *Sandbox, root string) error {
			return txn.StageRemove(entry(t, s, filepath.Join(root, "dir/sub")), true)
		}, swap: swapDirForLink("dir")},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			root, outside := canonTempDir(t), canonTempDir(t)
			recovery := filepath.Join(canonTempDir(t), "txn")
			must(t, os.MkdirAll(recovery, 0o700))
			opsTree(t, root, outside, recovery)
			// A second root inside the first, and a copy of the tree
			// outside for the swaps to lead to.
			second := filepath.Join(root, "dir", "inner-root")
			roots := []string{root}
			if tt.name == "remove a tree holding another root" {
				must(t, os.MkdirAll(second, 0o755))
				roots = append(roots, second)
			}
			if tt.setup != nil {
				tt.setup(t, root, second, recovery)
			}
			mustWrite(t, filepath.Join(outside, "dir/x.txt"), "OUTSIDE X")
			must(t, os.MkdirAll(filepath.Join(outside, "dir/sub"), 0o755))
			must(t, os.MkdirAll(filepath.Join(outside, "other"), 0o755))
			s, err := New(Config{Roots: roots, RecoveryDir: recovery, AllowAbsolute: true, IncludeDefaultDenies: true, ReadOnlyPatterns: []string{"locked/**/*.txt"}})
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			txn := s.Begin()
			defer txn.Close()
			err = tt.stage(txn, s, root)
			if tt.swap == nil {
				if !errors.Is(err, ErrDenied) {
					t.Fatalf("staging = %v, want a denial", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			outsideBefore := snapshot(t, outside)
			tt.swap(t, root, outside)
			before := snapshot(t, root)
			if err := txn.Commit(); !errors.Is(err, ErrDenied) {
				t.Fatalf("Commit after the swap = %v, want a denial", err)
			}
			if d := diffSnapshots(snapshot(t, root), before); d != "" {
				t.Errorf("the refused commit changed the root:%s", d)
			}
			if d := diffSnapshots(snapshot(t, outside), outsideBefore); d != "" {
				t.Errorf("the refused commit changed the directory outside:%s", d)
			}
		})
	}
}

// swapDirForLink moves the directory rel of the root aside and puts a
// link to the same name outside in its place.
func swapDirForLink(rel string) func(t *testing.T, root, outside string) {
	return func(t *testing.T, root, outside string) {
		t.Helper()
		must(t, os.Rename(filepath.Join(root, rel), filepath.Join(root, rel+"-aside")))
		must(t, os.Symlink(filepath.Join(outside, rel), filepath.Join(root, rel)))
	}
}

// A tree with directories the owner may not write or read is removed
// whole, with no backup left behind.
func TestTxn_StageRemoveReadOnlyTree(t *testing.T) {
	s, root, _, _ := opsFixture(t)
	mustWrite(t, filepath.Join(root, "ro/locked/f.txt"), "F")
	mustWrite(t, filepath.Join(root, "ro/hidden/g.txt"), "G")
	must(t, os.Chmod(filepath.Join(root, "ro/locked"), 0o555))
	must(t, os.Chmod(filepath.Join(root, "ro/hidden"), 0o300))
	t.Cleanup(func() {
		os.Chmod(filepath.Join(root, "ro/locked"), 0o755)
		os.Chmod(filepath.Join(root, "ro/hidden"), 0o755)
	})
	if os.Geteuid() == 0 {
		t.Skip("root ignores directory permissions")
	}
	txn := s.Begin()
	defer txn.Close()
	// checkTree cannot list ro/hidden: the removal is refused rather
	// than take entries nobody checked.
	if err := txn.StageRemove(entry(t, s, "ro"), true); !errors.Is(err, fs.ErrPermission) {
		t.Fatalf("StageRemove of a tree with an unreadable directory = %v, want a permission error", err)
	}
	must(t, os.Chmod(filepath.Join(root, "ro/hidden"), 0o755))
	txn = s.Begin()
	defer txn.Close()
	must(t, txn.StageRemove(entry(t, s, "ro"), true))
	must(t, txn.Commit())
	if _, err := os.Lstat(filepath.Join(root, "ro")); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("ro: %v, want it gone", err)
	}
	noTempFiles(t, root)
}

// A move over a destination that vanished or appeared between staging
// and commit is refused, and nothing moves: the destination was checked
// as it was when staged.
func TestTxn_StageMoveDestinationChanged(t *testing.T) {
	for _, tc := range []struct {
		name      string
		dst       string
		overwrite bool
		change    func(root string) error
	}{
		{"vanished", "b.txt", true, func(root string) error { return os.Remove(filepath.Join(root, "b.txt")) }},
		{"appeared", "new.txt", false, func(root string) error { return os.WriteFile(filepath.Join(root, "new.txt"), []byte("theirs"), 0o644) }},
		{"appeared, overwrite", "new.txt", true, func(root string) error { return os.WriteFile(filepath.Join(root, "new.txt"), []byte("theirs"), 0o644) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, root, _, recovery := opsFixture(t)
			txn := s.Begin()
			defer txn.Close()
			must(t, txn.StageMove(entry(t, s, "a.txt"), entry(t, s, tc.dst), tc.overwrite, false))
			must(t, tc.change(root))
			before := snapshot(t, root)
			if err := txn.Commit(); err == nil {
				t.Fatal("Commit succeeded")
			}
			if d := diffSnapshots(snapshot(t, root), before); d != "" {
				t.Errorf("the refused move changed the tree:%s", d)
			}
			if left, _ := os.ReadDir(recovery); len(left) != 0 {
				t.Errorf("recovery directory still holds %v", left)
			}
		})
	}
}

// A tree with a file system mounted inside is neither removed nor moved:
// that would empty the mounted file system. Needs the right to mount
// (skipped without).
func TestTxn_TreeWithMountPointRefused(t *testing.T) {
	s, root, _, _ := opsFixture(t)
	mnt := filepath.Join(root, "dir", "mnt")
	must(t, os.Mkdir(mnt, 0o755))
	if err := syscall.Mount("none", mnt, "tmpfs", 0, "size=1m"); err != nil {
		t.Skipf("cannot mount a tmpfs here (%v); the refusal is not tested", err)
	}
	t.Cleanup(func() { syscall.Unmount(mnt, syscall.MNT_DETACH) })
	mustWrite(t, filepath.Join(mnt, "theirs.txt"), "mounted")
	for _, stage := range []func(*Txn) error{
		func(txn *Txn) error { return txn.StageRemove(entry(t, s, "dir"), true) },
		func(txn *Txn) error { return txn.StageMove(entry(t, s, "dir"), entry(t, s, "other/dir"), false, false) },
	} {
		txn := s.Begin()
		err := stage(txn)
		txn.Close()
		if !errors.Is(err, ErrDenied) || !strings.Contains(err.Error(), "mounted") {
			t.Errorf("staging = %v, want a denial naming the mount", err)
		}
	}
	wantContents(t, mnt, map[string]string{"theirs.txt": "mounted"})
}

// benchTree writes n small files under dir/rel, 100 to a directory.
func benchTree(b *testing.B, dir, rel string, n int) {
	b.Helper()
	for i := range n {
		p := filepath.Join(dir, rel, fmt.Sprintf("d%03d", i/100), fmt.Sprintf("f%04d.txt", i))
		if i%100 == 0 {
			if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
				b.Fatal(err)
			}
		}
		if err := os.WriteFile(p, []byte("0123456789abcdef"), 0o644); err != nil {
			b.Fatal(err)
		}
	}
}

// Removing and moving a tree of 1,000 files, with a recovery record:
// the walk that checks every entry, the rename, and removing the
// backup; a move to another file system copies it.
func BenchmarkTxn_Tree1000(b *testing.B) {
	for _, kind := range []string{"remove", "move", "move-other-fs"} {
		b.Run(kind, func(b *testing.B) {
			root := canonTempDir(b)
			second := canonTempDir(b)
			if kind == "move-other-fs" {
				d, err := os.MkdirTemp("/dev/shm", "toolhost-bench-")
				if err != nil {
					b.Skip("no /dev/shm")
				}
				b.Cleanup(func() { os.RemoveAll(d) })
				second = d
			}
			s, err := New(Config{Roots: []string{root, second}, RecoveryDir: filepath.Join(canonTempDir(b), "txn"), AllowAbsolute: true})
			if err != nil {
				b.Fatal(err)
			}
			defer s.Close()
			for i := 0; i < b.N; i++ {
				b.StopTimer()
				os.RemoveAll(filepath.Join(second, "t"))
				benchTree(b, root, "t", 1000)
				src, _ := s.Resolve("t")
				dst, _ := s.Resolve(filepath.Join(second, "t"))
				b.StartTimer()
				txn := s.Begin()
				if kind == "remove" {
					err = txn.StageRemove(src, true)
				} else {
					err = txn.StageMove(src, dst, false, false)
				}
				if err == nil {
					err = txn.Commit()
				}
				txn.Close()
				if err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// A copy to another file system keeps owners and group where the
// process may give them (as root), the setgid bit included.
func TestTxn_StageMoveOtherFSKeepsOwners(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("only root may give a file another owner")
	}
	second := shmRoot(t, canonTempDir(t))
	s, root, _, _ := opsFixture(t, second)
	for _, rel := range []string{"dir", "dir/x.txt", "dir/sub/z.sh"} {
		must(t, os.Lchown(filepath.Join(root, rel), 1234, 2345))
	}
	must(t, os.Lchown(filepath.Join(root, "dir/sub/rel-link"), 1234, 2345))
	must(t, os.Chmod(filepath.Join(root, "dir/sub/z.sh"), 0o751|fs.ModeSetgid))
	txn := s.Begin()
	defer txn.Close()
	must(t, txn.StageMove(entry(t, s, filepath.Join(root, "dir")), entry(t, s, filepath.Join(second, "dir")), false, false))
	must(t, txn.Commit())
	for _, rel := range []string{"dir", "dir/x.txt", "dir/sub/z.sh", "dir/sub/rel-link"} {
		fi, err := os.Lstat(filepath.Join(second, rel))
		if err != nil {
			t.Fatal(err)
		}
		if uid, gid, _ := ownerOf(fi); uid != 1234 || gid != 2345 {
			t.Errorf("%s: owner %d:%d, want 1234:2345", rel, uid, gid)
		}
	}
	if fi, _ := os.Lstat(filepath.Join(second, "dir/sub/z.sh")); fi.Mode() != 0o751|fs.ModeSetgid {
		t.Errorf("z.sh mode %v, want setgid and 0751", fi.Mode())
	}
}
