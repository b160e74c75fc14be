//go:build linux

package hostile_test

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/toolhost/toolhost/internal/testplugin"
	"github.com/toolhost/toolhost/internal/testtree"
)

// The real binary, killed with SIGKILL in the middle of delete_file and
// move_file, leaves nothing that its next start does not put right: the
// tree removed or back where it was, whole, never half in each place,
// and no .toolhost-* leftover.

// txnCrashWorld is a workspace, a second root (on another file system
// when /dev/shm is one), and the binary's state and home.
type txnCrashWorld struct {
	bin, dir, second, state, home, cfg string
	otherFS                            bool
}

func txnCrashNew(t *testing.T) *txnCrashWorld {
	t.Helper()
	w := &txnCrashWorld{bin: toolhostBinary(t), home: t.TempDir()}
	w.dir = txnCrashCanon(t, t.TempDir())
	w.second = txnCrashCanon(t, t.TempDir())
	var a, b syscall.Stat_t
	if syscall.Stat("/dev/shm", &a) == nil && syscall.Stat(w.dir, &b) == nil && a.Dev != b.Dev {
		if d, err := os.MkdirTemp("/dev/shm", "toolhost-crash-"); err == nil {
			t.Cleanup(func() { os.RemoveAll(d) })
			w.second, w.otherFS = txnCrashCanon(t, d), true
		}
	}
	w.state = filepath.Join(w.home, "state")
	w.cfg = filepath.Join(w.home, "operator.toml")
	if err := os.WriteFile(w.cfg, []byte("[tools.sandbox]\nallow_absolute = true\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	return w
}

func txnCrashCanon(t *testing.T, dir string) string {
	t.Helper()
	c, err := filepath.EvalSymlinks(dir)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// tree writes a tree of n small files under rel, in directories of 100.
func (w *txnCrashWorld) tree(t *testing.T, rel string, n int) {
	t.Helper()
	for i := range n {
		p := filepath.Join(w.dir, rel, fmt.Sprintf("d%03d", i/100), fmt.Sprintf("f%04d.txt", i))
		if i%100 == 0 {
			if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
				t.Fatal(err)
			}
		}
		if err := os.WriteFile(p, []byte(fmt.Sprintf("file %d\n", i)), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Symlink("d000/f0000.txt", filepath.Join(w.dir, rel, "link")); err != nil {
		t.Fatal(err)
	}
}

func (w *txnCrashWorld) command(t *testing.T, tool, args string) *exec.Cmd {
	t.Helper()
	cmd := exec.Command(w.bin, "--state-dir", w.state, "--config", w.cfg, "--root", w.dir, "--root", w.second,
		"--plugins", realPlugins(t), "call", tool, "--args", args, "--allow", tool)
	cmd.Dir = w.dir
	cmd.Env = append(os.Environ(), "HOME="+w.home, "XDG_CONFIG_HOME="+filepath.Join(w.home, ".config"),
		"XDG_STATE_HOME="+filepath.Join(w.home, ".state"), "TOOLHOST_CACHE_DIR="+testplugin.CacheDir(t))
	return cmd
}

// killWhen runs the call and SIGKILLs it as soon as a .toolhost-* entry
// appears in one of dirs, that is while its commit is under way. It
// reports whether the kill came before the call ended.
func (w *txnCrashWorld) killWhen(t *testing.T, tool, args string, dirs ...string) bool {
	t.Helper()
	cmd := w.command(t, tool, args)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	deadline := time.After(3 * time.Minute)
	for {
		select {
		case err := <-done:
			t.Logf("the call ended before a leftover was seen (%v): %s", err, out.String())
			return false
		case <-deadline:
			cmd.Process.Kill()
			<-done
			t.Fatalf("the call neither ended nor began its commit: %s", out.String())
		default:
		}
		for _, d := range dirs {
			if txnCrashLeftovers(d) > 0 {
				cmd.Process.Signal(syscall.SIGKILL)
				<-done
				n := 0
				for _, d := range dirs {
					n += txnCrashLeftovers(d)
				}
				records, _ := os.ReadDir(filepath.Join(w.state, "txn"))
				t.Logf("killed with %d leftovers and %d recovery records", n, len(records))
				return true
			}
		}
		time.Sleep(200 * time.Microsecond)
	}
}

// txnCrashLeftovers counts the .toolhost-* entries directly in dir.
func txnCrashLeftovers(dir string) int {
	entries, _ := os.ReadDir(dir)
	n := 0
	for _, e := range entries {
		if strings.HasPrefix(e.Name(), ".toolhost-") {
			n++
		}
	}
	return n
}

// restart runs the binary again (a read-only call), which recovers
// before any tool runs.
func (w *txnCrashWorld) restart(t *testing.T) {
	t.Helper()
	cmd := w.command(t, "list_directory", `{"path": "."}`)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("toolhost after the crash: %v\n%s", err, out)
	}
}

func (w *txnCrashWorld) noRecords(t *testing.T) {
	t.Helper()
	entries, _ := os.ReadDir(filepath.Join(w.state, "txn"))
	if len(entries) != 0 {
		t.Errorf("recovery records left after the restart: %v", entries)
	}
}

// delete_file of a tree of 4,000 files, killed while the removed tree's
// backup is being deleted (its commit had renamed it away): the next
// start finishes the removal, leaving no backup.
func TestTxnCrashDeleteTreeKilled(t *testing.T) {
	w := txnCrashNew(t)
	w.tree(t, "big", 4000)
	if err := os.WriteFile(filepath.Join(w.dir, "keep.txt"), []byte("keep\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if !w.killWhen(t, "delete_file", `{"path": "big", "recursive": true}`, w.dir) {
		t.Skip("the removal finished before it could be killed mid-commit; nothing to recover")
	}
	if _, err := os.Lstat(filepath.Join(w.dir, "big")); err == nil {
		t.Log("killed before the rename: the tree is still there")
	}
	w.restart(t)
	got := testtree.Snapshot(t, w.dir)
	if _, ok := got["big"]; ok {
		// Killed before the commit began: then the whole tree stays.
		if len(got) != 4000+40+2+1 {
			t.Errorf("the tree is back with %d entries, want all of it", len(got))
		}
	}
	if txnCrashLeftovers(w.dir) != 0 {
		t.Errorf("leftovers after the restart: %v", got)
	}
	if got["keep.txt"] != "file -rw-r--r-- keep\n" {
		t.Errorf("keep.txt = %q", got["keep.txt"])
	}
	w.noRecords(t)
}

// move_file of a tree of 4,000 files to the second root, killed while it
// is copied there (another file system) or renamed: the next start puts
// the tree back whole where it was, or leaves it whole where it went.
func TestTxnCrashMoveTreeKilled(t *testing.T) {
	w := txnCrashNew(t)
	if !w.otherFS {
		t.Log("/dev/shm is not another file system here: the move is a rename, killed around it")
	}
	w.tree(t, "big", 4000)
	before := testtree.Snapshot(t, filepath.Join(w.dir, "big"))
	dst := filepath.Join(w.second, "moved")
	args := fmt.Sprintf(`{"source": "big", "destination": %q}`, dst)
	if !w.killWhen(t, "move_file", args, w.dir, w.second) {
		t.Skip("the move finished before it could be killed mid-commit; nothing to recover")
	}
	w.restart(t)
	t.Logf("the source has %d entries, the destination %d", len(testtree.Snapshot(t, filepath.Join(w.dir, "big"))), len(testtree.Snapshot(t, dst)))
	src := testtree.Snapshot(t, filepath.Join(w.dir, "big"))
	moved := testtree.Snapshot(t, dst)
	switch {
	case len(src) > 0 && len(moved) > 0:
		t.Fatalf("after the restart the tree is in both places: %d entries at the source, %d at the destination", len(src), len(moved))
	case len(src) > 0:
		testtree.Same(t, "the source", src, before)
	default:
		testtree.Same(t, "the destination", moved, before)
	}
	if n := txnCrashLeftovers(w.dir) + txnCrashLeftovers(w.second); n != 0 {
		t.Errorf("%d leftovers after the restart", n)
	}
	w.noRecords(t)
}
