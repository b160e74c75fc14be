package hostile_test

import (
	"os"
	"path/filepath"
	"runtime"
	"testing"

	"github.com/toolhost/toolhost/internal/testenv"
)

// TestStageCrashKeepsPackedRefs: a command runs git pack-refs (git gc
// does too), which removes the loose refs from the real refs/ and writes
// the packed-refs that holds them in the git directory's stage; toolhost
// is then killed (SIGKILL) before the call ends. The branches must not be
// lost: the next toolhost applies the stage the killed one left.
func TestStageCrashKeepsPackedRefs(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("run_command's confinement is Linux only")
	}
	testenv.LookPath(t, "git", "apt-get install git (as root)")
	bin := toolhostBinary(t)
	home, root := t.TempDir(), t.TempDir()
	gdlRepo(t, home, root)
	gdlGit(t, home, root, "branch", "feature")
	head := gdlGit(t, home, root, "rev-parse", "feature")

	c := gdlStart(t, bin, home, root, gdlIdentity+"git pack-refs --all"+gdlHold)
	gdlAwait(t, c, root)
	if err := c.cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	c.cmd.Wait()
	mustWrite(t, filepath.Join(root, ".gdl-release"), "")
	if _, err := os.Lstat(filepath.Join(root, ".git", "refs", "heads", "feature")); err == nil {
		t.Skip("git pack-refs left the loose ref in place; nothing to recover")
	}

	// The next call, of a new toolhost, finds the killed one's stage.
	next := gdlStart(t, bin, home, root, "true")
	next.wait(t)
	if got, err := gdlTry(home, root, "rev-parse", "--verify", "-q", "feature"); err != nil || got != head {
		t.Errorf("branch feature after the killed call and another: %q, %v; want %q (its packed-refs was lost with the stage)", got, err, head)
	}
	if out, err := gdlTry(home, root, "fsck", "--no-progress"); err != nil {
		t.Errorf("git fsck: %v\n%s", err, out)
	}
}
