//go:build linux

package confine

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/toolhost/toolhost/host/internal/proc"
)

// A warm launcher mounts ahead what the latest command of its kind had
// mounted. The command keeps those mounts only when its own policy
// begins with them, made from the same files: another root, or a root
// moved aside and made anew under its name, gets a root made for it, in
// which the old one is nowhere. The tmp made ahead is the command's own
// and goes with it; those of launchers never used go with the pool.
func TestWarmMountsAhead(t *testing.T) {
	work := canonicalTempDir(t)
	other := canonicalTempDir(t)
	c, s := testConfiner(t, work, Limits{OpenFiles: 1024, FileSizeBytes: 1 << 30})
	c.PoolLaunchers("")
	warmUp(t, c)
	n := 0
	// call runs command in root, in a warm launcher, and returns its
	// output, its tmp and how many mounts were made ahead of the
	// policy's.
	call := func(root, command string) (out, tmp string, premounted, mounts int) {
		t.Helper()
		warmUp(t, c)
		n++
		r, err := c.Prepare(context.Background(), Call{ID: fmt.Sprintf("ahead_%d", n), Roots: []string{root}, Dir: root, Environ: s.Environ})
		if err != nil {
			t.Fatal(err)
		}
		defer r.Close()
		res, err := proc.Run(context.Background(), proc.Spec{Command: command, Dir: root, Launcher: r.Launch(), Logger: slog.New(slog.DiscardHandler)})
		if err != nil {
			t.Fatalf("Run: %v, stderr %q", err, res.Stderr)
		}
		if !r.Launch().Prestarted() {
			t.Fatal("the command did not run in a warm launcher")
		}
		return string(res.Stdout) + string(res.Stderr), r.TmpDir(), r.Applied().Premounted, len(r.policy.Mounts)
	}

	// The first launcher started before any command: nothing ahead.
	if out, _, pre, _ := call(work, "echo one > /tmp/f && echo one > f && cat f"); out != "one\n" || pre != 0 {
		t.Fatalf("first call: output %q, %d mounts made ahead, want one and 0", out, pre)
	}
	out, tmp, pre, mounts := call(work, "cat /tmp/f 2>/dev/null || echo fresh tmp; cat f; echo two > /tmp/g")
	if out != "fresh tmp\none\n" || pre != mounts || mounts == 0 {
		t.Fatalf("same root: output %q, %d of %d mounts made ahead; want a fresh tmp, the root's file, and all", out, pre, mounts)
	}
	if !strings.Contains(filepath.Base(tmp), "-ahead-") {
		t.Errorf("the command's tmp %s is not the one made ahead", tmp)
	}

	// Another root: the launcher mounted work ahead, and the command
	// must not see it (work is also $HOME, an empty tmpfs inside).
	out, _, pre, _ = call(other, "cat "+work+"/f 2>/dev/null || echo work unseen; pwd")
	if out != "work unseen\n"+other+"\n" || pre != 0 {
		t.Fatalf("another root: output %q, %d mounts kept; want work unseen, the other root, none kept", out, pre)
	}

	// other, moved aside and made anew: the launcher mounted the old
	// directory ahead, under the name the policy gives the new one.
	warmUp(t, c)
	if err := os.Rename(other, other+".old"); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(other, 0o755); err != nil {
		t.Fatal(err)
	}
	out, _, pre, mounts = call(other, "echo new > written")
	if out != "" || pre == mounts {
		t.Fatalf("root made anew: output %q, %d of %d mounts kept; want the root's mount made again", out, pre, mounts)
	}
	if _, err := os.Stat(filepath.Join(other, "written")); err != nil {
		t.Errorf("the command's file is not in the root made anew: %v", err)
	}
	if _, err := os.Stat(filepath.Join(other+".old", "written")); err == nil {
		t.Error("the command wrote into the root moved aside")
	}

	c.Close()
	left, _ := filepath.Glob(filepath.Join(s.StateDir, "sandbox", "tmp", "*"))
	if len(left) > 0 {
		t.Errorf("tmps left after the Confiner closed: %v", left)
	}
}
