//go:build linux

package confine

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/toolhost/toolhost/host/internal/proc"
)

// A warm launcher mounts ahead what the latest command of its kind had
// mounted. The command keeps those mounts only when its own policy
// begins with them, made from the same files: another root, or a root
// moved aside and made anew under its name, gets a root made for it, in
// which the old one is nowhere. The tmp made ahead is the command's own
// and goes with it; those of launchers never used go with the pool.
func TestWarmMountsAhead(t *testing.T) {
	work := filepath.Join(canonicalTempDir(t), "work")
	other := filepath.Join(canonicalTempDir(t), "other")
	for _, d := range []string{work, other} {
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	c, s := testConfiner(t, canonicalTempDir(t), Limits{OpenFiles: 1024, FileSizeBytes: 1 << 30})
	c.PoolLaunchers("")
	warmUp(t, c)
	n := 0
	callNow := func(root, command string) (string, string, int, int) {
		t.Helper()
		n++
		r := premountCall(t, c, s, fmt.Sprintf("ahead_%d", n), root, command)
		return r.out, r.tmp, r.premounted, r.mounts
	}
	call := func(root, command string) (string, string, int, int) {
		t.Helper()
		freshLauncher(t, c)
		return callNow(root, command)
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
	// must not see it, nor its name in the tmp, where the launcher made
	// its mount point (work lies under /tmp).
	out, _, pre, _ = call(other, "cat "+work+"/f 2>/dev/null || echo work unseen; pwd; find /tmp /var/tmp -name "+filepath.Base(work))
	if out != "work unseen\n"+other+"\n" || pre != 0 {
		t.Fatalf("another root: output %q, %d mounts kept; want work unseen, the other root, none kept", out, pre)
	}

	// other, moved aside and made anew: the launcher mounted the old
	// directory ahead, under the name the policy gives the new one.
	freshLauncher(t, c)
	if err := os.Rename(other, other+".old"); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(other, 0o755); err != nil {
		t.Fatal(err)
	}
	out, _, pre, mounts = callNow(other, "echo new > written")
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

// freshLauncher discards the launchers waiting in c's pool and waits
// for one started after: one that mounted ahead what the latest command
// had (the pool keeps more than one waiting, some started before it).
func freshLauncher(t *testing.T, c *Confiner) {
	t.Helper()
	for range 4 {
		w := c.pool.take(true)
		if w == nil {
			break
		}
		w.discard()
	}
	warmUp(t, c)
}

// premountConfiner is testConfiner with hidden and protected files, its
// launchers pooled and one waiting.
func premountConfiner(t *testing.T, work string, hidden, protected []string) (*Confiner, Settings) {
	t.Helper()
	c, s := testConfiner(t, work, Limits{OpenFiles: 1024, FileSizeBytes: 1 << 30})
	s.Hidden, s.Protected = hidden, protected
	c.settings = s
	c.PoolLaunchers("")
	warmUp(t, c)
	return c, s
}

// premountRun is what premountCall saw of a command: its output, its
// tmp, how many of its policy's mounts were made ahead, and how many
// the policy has.
type premountRun struct {
	out, tmp           string
	premounted, mounts int
}

// premountCall runs command in root in a warm launcher.
func premountCall(t *testing.T, c *Confiner, s Settings, id, root, command string) premountRun {
	t.Helper()
	r, err := c.Prepare(context.Background(), Call{ID: id, Roots: []string{root}, Dir: root, Environ: s.Environ})
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
	return premountRun{string(res.Stdout) + string(res.Stderr), r.TmpDir(), r.Applied().Premounted, len(r.policy.Mounts)}
}

// A mount made ahead sits on the file its target named then. The host's
// tools replace files under the same name (a secret rotated by renaming
// a new file over it, as git credential-store and passwd do; a hard
// link swapped in), which detaches that mount in the launcher's
// namespace: the command must then get its root made anew, and the file
// stays hidden or read-only as its policy says.
func TestWarmMountsAheadRechecked(t *testing.T) {
	for _, tc := range []struct {
		name    string
		command string
		change  func(t *testing.T, file string)
		want    func(out, file string) error
	}{
		{
			name:    "hidden file renamed over",
			command: "cat secret 2>&1; true",
			change: func(t *testing.T, file string) {
				mustWrite(t, file+".lock", "NEW-SECRET\n")
				if err := os.Rename(file+".lock", file); err != nil {
					t.Fatal(err)
				}
			},
			want: func(out, file string) error {
				if strings.Contains(out, "SECRET") {
					return fmt.Errorf("the command read the hidden file: %q", out)
				}
				return nil
			},
		},
		{
			name:    "protected file's hard link swapped",
			command: "echo pwned >> secret 2>&1; true",
			change: func(t *testing.T, file string) {
				if err := os.Rename(file, file+".old"); err != nil {
					t.Fatal(err)
				}
				if err := os.Link(file+".old", file); err != nil {
					t.Fatal(err)
				}
				if err := os.Remove(file + ".old"); err != nil {
					t.Fatal(err)
				}
			},
			want: func(out, file string) error {
				if b, _ := os.ReadFile(file); strings.Contains(string(b), "pwned") {
					return fmt.Errorf("the command wrote the read-only file: %q", b)
				}
				return nil
			},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			work := canonicalTempDir(t)
			file := filepath.Join(work, "secret")
			mustWrite(t, file, "old secret\n")
			var hidden, protected []string
			if strings.HasPrefix(tc.name, "hidden") {
				hidden = []string{file}
			} else {
				protected = []string{file}
			}
			c, s := premountConfiner(t, work, hidden, protected)
			defer c.Close()
			premountCall(t, c, s, "first", work, "true")
			freshLauncher(t, c)
			if r := premountCall(t, c, s, "unchanged", work, tc.command); r.premounted == 0 || tc.want(r.out, file) != nil {
				t.Fatalf("unchanged: %d mounts kept, %v", r.premounted, tc.want(r.out, file))
			}
			freshLauncher(t, c)
			tc.change(t, file)
			r := premountCall(t, c, s, "changed", work, tc.command)
			if err := tc.want(r.out, file); err != nil {
				t.Error(err)
			}
			if r.premounted != 0 {
				t.Errorf("%d mounts made ahead kept; want the root made anew", r.premounted)
			}
		})
	}
}

// A call that fails before its command leaves nothing of the tmp made
// for it ahead, though its launcher made mount points in it (a root
// under /tmp).
func TestWarmAheadTmpGoesOnError(t *testing.T) {
	for _, tc := range []struct {
		name  string
		spoil func(t *testing.T, s Settings, c *Call)
	}{
		{"working directory outside the roots", func(t *testing.T, s Settings, c *Call) { c.Dir = "/nonexistent-outside" }},
		{"cache not a directory", func(t *testing.T, s Settings, c *Call) {
			cache := filepath.Join(s.StateDir, "sandbox", "cache")
			if err := os.RemoveAll(cache); err != nil {
				t.Fatal(err)
			}
			mustWrite(t, cache, "")
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			work := canonicalTempDir(t)
			c, s := premountConfiner(t, work, nil, nil)
			premountCall(t, c, s, "first", work, "true")
			freshLauncher(t, c)
			call := Call{ID: "failing", Roots: []string{work}, Dir: work, Environ: s.Environ}
			tc.spoil(t, s, &call)
			if _, err := c.Prepare(context.Background(), call); err == nil {
				t.Fatal("Prepare succeeded")
			}
			c.Close()
			if left, _ := filepath.Glob(filepath.Join(s.StateDir, "sandbox", "tmp", "*")); len(left) > 0 {
				t.Errorf("tmps left after the failed call and Close: %v", left)
			}
		})
	}
}

// What a launcher mounts ahead is the latest command's mounts with its
// tmp swapped for the launcher's, up to the first of the call's own.
func TestSwapTmp(t *testing.T) {
	ms := []Mount{
		{Kind: MountRead, Source: "/usr", Target: "/usr"},
		{Kind: MountWrite, Source: "/s/tmp/call-1", Target: "/tmp"},
		{Kind: MountWrite, Source: "/s/tmp/call-1/sub", Target: "/x"},
		{Kind: MountWrite, Source: "/s/tmp/call-10", Target: "/y"},
		{Kind: MountRead, Source: "/s/proxy/p1.sock", Target: proxyTarget},
		{Kind: MountRead, Source: "/w", Target: "/w"},
	}
	got := swapTmp(ms, "/s/tmp/call-1", "/s/tmp/ahead")
	want := []Mount{
		{Kind: MountRead, Source: "/usr", Target: "/usr"},
		{Kind: MountWrite, Source: "/s/tmp/ahead", Target: "/tmp"},
		{Kind: MountWrite, Source: "/s/tmp/ahead/sub", Target: "/x"},
		{Kind: MountWrite, Source: "/s/tmp/call-10", Target: "/y"},
	}
	if !slices.Equal(got, want) {
		t.Errorf("swapTmp = %v\nwant %v", got, want)
	}
	staged := []Mount{ms[0], {Kind: MountStage, Source: "/w/.git", Target: "/w/.git", Stage: "/s/st"}, ms[5]}
	if got := swapTmp(staged, "/s/tmp/call-1", "/s/tmp/ahead"); !slices.Equal(got, ms[:1]) {
		t.Errorf("swapTmp with a staged mount = %v, want %v", got, ms[:1])
	}
}

// A launcher that never answers the mounts asked of it ahead, or dies
// before, is an error of its start, not the host's end.
func TestMountAheadUnanswered(t *testing.T) {
	for _, tc := range []string{"silent", "gone"} {
		t.Run(tc, func(t *testing.T) {
			pair, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_SEQPACKET|unix.SOCK_CLOEXEC, 0)
			if err != nil {
				t.Fatal(err)
			}
			defer unix.Close(pair[0])
			tv := unix.NsecToTimeval(int64(200 * time.Millisecond))
			if err := unix.SetsockoptTimeval(pair[0], unix.SOL_SOCKET, unix.SO_RCVTIMEO, &tv); err != nil {
				t.Fatal(err)
			}
			if tc == "gone" {
				unix.Close(pair[1])
			} else {
				defer unix.Close(pair[1])
			}
			w := &warmLauncher{sock: pair[0]}
			if err := w.mountAhead([]byte(`{"premount":true}`)); err == nil {
				t.Error("mountAhead succeeded without an answer")
			}
		})
	}
}

// A command whose warm launcher died before taking it runs the cold way
// in the tmp made for it, emptied of what that launcher made in it
// ahead: the mount points of another call's root under /tmp.
func TestWarmAheadTmpEmptiedForColdPath(t *testing.T) {
	work := filepath.Join(canonicalTempDir(t), "work")
	other := filepath.Join(canonicalTempDir(t), "other")
	for _, d := range []string{work, other} {
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	c, s := premountConfiner(t, canonicalTempDir(t), nil, nil)
	defer c.Close()
	premountCall(t, c, s, "first", work, "true")
	freshLauncher(t, c)
	r, err := c.Prepare(context.Background(), Call{ID: "cold", Roots: []string{other}, Dir: other, Environ: s.Environ})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	w := r.launch.warm
	if w == nil || !strings.Contains(r.TmpDir(), "-ahead-") {
		t.Fatalf("the call took no warm launcher with a tmp made ahead (tmp %s)", r.TmpDir())
	}
	w.kill()
	waitFor(t, func() bool { return !w.alive() }, "the warm launcher's end")
	res, err := proc.Run(context.Background(), proc.Spec{Command: "find /tmp /var/tmp -name work", Dir: other, Launcher: r.Launch(), Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatalf("Run: %v, stderr %q", err, res.Stderr)
	}
	if r.Launch().Prestarted() {
		t.Fatal("the command ran in the dead warm launcher")
	}
	if len(res.Stdout) > 0 {
		t.Errorf("the cold command's tmp holds the mount points made ahead for another root:\n%s", res.Stdout)
	}
}
