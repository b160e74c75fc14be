//go:build linux

package sandbox

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// A second root bind-mounted from the same file system: the two share a
// device number, so a move between them is staged as a rename, and the
// kernel refuses that rename (EXDEV) at commit. The commit then copies,
// as across file systems. Needs the right to mount (skipped without).

// bindDirs makes a root with a tree and a second root that is a bind
// mount of another directory of the same file system.
func bindDirs(t *testing.T) (root, second, recovery string) {
	t.Helper()
	root, recovery = canonTempDir(t), filepath.Join(canonTempDir(t), "txn")
	must(t, os.MkdirAll(recovery, 0o700))
	backing := canonTempDir(t)
	second = filepath.Join(canonTempDir(t), "bound")
	must(t, os.Mkdir(second, 0o755))
	if err := syscall.Mount(backing, second, "", syscall.MS_BIND, ""); err != nil {
		t.Skipf("cannot bind-mount here (%v); the copy after EXDEV at commit is not tested", err)
	}
	t.Cleanup(func() { syscall.Unmount(second, syscall.MNT_DETACH) })
	mustWrite(t, filepath.Join(root, "tree/a.txt"), "A")
	mustWrite(t, filepath.Join(root, "tree/sub/b.txt"), "B")
	must(t, os.Symlink("a.txt", filepath.Join(root, "tree/l")))
	mustWrite(t, filepath.Join(root, "keep.txt"), "K")
	mustWrite(t, filepath.Join(second, "old/x.txt"), "OLD")
	return root, second, recovery
}

func bindSandbox(t *testing.T, root, second, recovery string) *Sandbox {
	t.Helper()
	s, err := New(Config{Roots: []string{root, second}, RecoveryDir: recovery, AllowAbsolute: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// bindStage stages the move of tree over the second root's old, and a
// write after it, so that a failure can come after the move.
func bindStage(t *testing.T, s *Sandbox, root, second string) *Txn {
	t.Helper()
	txn := s.Begin()
	t.Cleanup(func() { txn.Close() })
	must(t, txn.StageMove(entry(t, s, filepath.Join(root, "tree")), entry(t, s, filepath.Join(second, "old")), true, false))
	_, err := txn.Stage(entry(t, s, filepath.Join(root, "keep.txt")), []byte("new K"), false)
	must(t, err)
	return txn
}

func bindSnap(t *testing.T, root, second string) map[string]string {
	return snapshotRoots(t, map[string]string{"R1": root, "R2": second})
}

// The move commits by copying; a failure at each of its steps, and
// after it, leaves both roots as they were.
func TestTxn_MoveCopiesAfterEXDEV(t *testing.T) {
	root, second, recovery := bindDirs(t)
	s := bindSandbox(t, root, second, recovery)
	var steps []string
	s.testHookStep = func(i int, step string) error {
		steps = append(steps, fmt.Sprintf("%d:%s", i, step))
		return nil
	}
	before := bindSnap(t, root, second)
	must(t, bindStage(t, s, root, second).Commit())
	after := bindSnap(t, root, second)
	want := moved(before, "R1/tree", "R2/old")
	want["R1/keep.txt"] = `file -rw-r--r-- "new K"`
	if d := diffSnapshots(after, want); d != "" {
		t.Fatalf("after the move:%s", d)
	}
	if !strings.Contains(strings.Join(steps, " "), "0:copy") {
		t.Fatalf("the move never copied (steps %v): the bind mount did not make the rename fail", steps)
	}
	for _, fail := range steps {
		t.Run("fail at "+fail, func(t *testing.T) {
			root, second, recovery := bindDirs(t)
			s := bindSandbox(t, root, second, recovery)
			before := bindSnap(t, root, second)
			injected := errors.New("injected")
			s.testHookStep = func(i int, step string) error {
				if fmt.Sprintf("%d:%s", i, step) == fail {
					return injected
				}
				return nil
			}
			if err := bindStage(t, s, root, second).Commit(); !errors.Is(err, injected) {
				t.Fatalf("Commit = %v, want the injected failure", err)
			}
			if d := diffSnapshots(bindSnap(t, root, second), before); d != "" {
				t.Errorf("after the failure:%s", d)
			}
			noTempFiles(t, root, second)
		})
	}
}

const bindChildEnv = "TOOLHOST_TEST_TXN_BIND_CHILD"

// The child half of TestRecover_KilledMidEXDEVCopy.
func TestRecoverBind_Child(t *testing.T) {
	spec := os.Getenv(bindChildEnv)
	if spec == "" {
		t.Skip("run by TestRecover_KilledMidEXDEVCopy in a child process")
	}
	parts := strings.Split(spec, "|")
	dirs := strings.Split(parts[0], ",")
	s := bindSandbox(t, dirs[0], dirs[1], parts[1])
	seen := map[string]int{}
	s.testHookStep = func(i int, step string) error {
		ev := fmt.Sprintf("%d:%s", i, step)
		seen[ev]++
		if fmt.Sprintf("%s#%d", ev, seen[ev]) == parts[2] {
			fmt.Println("ready")
			os.Stdout.Sync()
			time.Sleep(time.Minute)
			os.Exit(3)
		}
		return nil
	}
	s.testHookAfterRenames = func() {
		if parts[2] == "renamed" {
			fmt.Println("ready")
			os.Stdout.Sync()
			time.Sleep(time.Minute)
		}
	}
	err := bindStage(t, s, dirs[0], dirs[1]).Commit()
	t.Fatalf("the commit ended (%v) before %s", err, parts[2])
}

// Killed at each step of a move that copies at commit (while it copies,
// once the copy is complete, once it is in place, after every rename),
// the next start leaves the old tree or, only after every rename, the
// new one.
func TestRecover_KilledMidEXDEVCopy(t *testing.T) {
	root, second, recovery := bindDirs(t)
	s := bindSandbox(t, root, second, recovery)
	var points []string
	seen := map[string]int{}
	s.testHookStep = func(i int, step string) error {
		ev := fmt.Sprintf("%d:%s", i, step)
		seen[ev]++
		points = append(points, fmt.Sprintf("%s#%d", ev, seen[ev]))
		return nil
	}
	before := bindSnap(t, root, second)
	must(t, bindStage(t, s, root, second).Commit())
	after := bindSnap(t, root, second)
	points = append(points, "renamed")
	for _, point := range points {
		t.Run(point, func(t *testing.T) {
			root, second, recovery := bindDirs(t)
			killChildAt(t, "TestRecoverBind_Child", bindChildEnv, root+","+second, recovery, point)
			s := bindSandbox(t, root, second, recovery)
			recs, err := s.Recover()
			if err != nil || len(recs) != 1 {
				t.Fatalf("Recover = %+v, %v", recs, err)
			}
			want := before
			if point == "renamed" {
				want = after
			}
			if d := diffSnapshots(bindSnap(t, root, second), want); d != "" {
				t.Errorf("after recovery:%s", d)
			}
			noTempFiles(t, root, second)
		})
	}
}
