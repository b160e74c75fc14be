//go:build linux

package confine

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/toolhost/toolhost/host/internal/confine/spec"
)

// These tests run real confined commands: the test binary is the
// launcher (TestMain runs launcher.Main when started with
// spec.LauncherArg), and the policies are written by hand, as Build would
// write them.

// testSystemDirs are the host's directories every test command reads.
var testSystemDirs = []string{"/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32", "/etc"}

// helperPath is where the test binary is mounted inside the command's
// root, to run the in-sandbox helpers (TestHelperInside).
const helperPath = "/opt/confine.test"

// testPolicy is a workspace-write policy for the root work: the system
// directories read-only, work writable, a private /tmp, and the test
// binary at helperPath.
func testPolicy(t testing.TB, work string) *Policy {
	t.Helper()
	p := &Policy{Mode: ModeWorkspaceWrite, Network: NetworkOff, Dir: work,
		Env:    []string{"PATH=/usr/bin:/bin", "HOME=" + work, "TMPDIR=/tmp"},
		Limits: Limits{OpenFiles: 1024, FileSizeBytes: 1 << 30}}
	for _, d := range testSystemDirs {
		if _, err := os.Lstat(d); err == nil {
			p.Mounts = append(p.Mounts, Mount{Kind: MountRead, Source: d, Target: d})
			p.Readable = append(p.Readable, d)
		}
	}
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	p.Mounts = append(p.Mounts,
		Mount{Kind: MountRead, Source: exe, Target: helperPath},
		Mount{Kind: MountTmpfs, Target: "/tmp"},
		Mount{Kind: MountWrite, Source: work, Target: work})
	p.Readable = append(p.Readable, helperPath)
	p.Writable = append(p.Writable, "/tmp", "/dev/shm", work)
	return p
}

type result struct {
	stdout, stderr string
	code           int
	signal         string
	applied        Applied
	err            error // from Started
}

// launched is a confined command that was started.
type launched struct {
	cmd            *exec.Cmd
	launch         *Launch
	stdout, stderr syncBuffer
}

// start starts command under p the way proc does, and returns once
// Started returned.
func start(t testing.TB, p *Policy, command string) (*launched, error) {
	t.Helper()
	return startInCgroup(t, p, nil, command)
}

// startInCgroup is start with the launcher in cgroup cg (nil: none).
func startInCgroup(t testing.TB, p *Policy, cg *Cgroup, command string) (*launched, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	return startWith(ctx, t, p, cg, command)
}

// startWith is startInCgroup with Started bounded by ctx.
func startWith(ctx context.Context, t testing.TB, p *Policy, cg *Cgroup, command string) (*launched, error) {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	l := &launched{launch: NewLaunch(p, exe, cg)}
	l.cmd = exec.Command("/bin/sh", "-c", command)
	l.cmd.Dir = p.Dir
	l.cmd.Stdout, l.cmd.Stderr = &l.stdout, &l.stderr
	l.cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	if err := l.launch.Prepare(l.cmd); err != nil {
		t.Fatalf("Prepare: %v", err)
	}
	// The parent-death signal fires when the thread that started the
	// launcher exits: keep it for the test's length.
	runtime.LockOSThread()
	t.Cleanup(runtime.UnlockOSThread)
	if err := l.cmd.Start(); err != nil {
		t.Fatalf("start the launcher: %v", err)
	}
	t.Cleanup(func() {
		l.cmd.Process.Kill()
		l.launch.Close()
	})
	return l, l.launch.Started(ctx, l.cmd.Process.Pid)
}

// wait waits, at most 20 s, for the launcher to exit.
func (l *launched) wait(t testing.TB) result {
	t.Helper()
	done := make(chan error, 1)
	go func() { done <- l.cmd.Wait() }()
	select {
	case <-done:
	case <-time.After(20 * time.Second):
		l.cmd.Process.Kill()
		<-done
		t.Fatalf("the confined command did not end within 20 s; stderr: %s", l.stderr.String())
	}
	ws := l.cmd.ProcessState.Sys().(syscall.WaitStatus)
	code, sig := ws.ExitStatus(), ""
	if ws.Signaled() {
		code, sig = -1, ws.Signal().String()
	}
	r := result{stdout: l.stdout.String(), stderr: l.stderr.String(), applied: l.launch.Applied()}
	r.code, r.signal = l.launch.Exit(code, sig)
	return r
}

// run runs command confined by p to its end.
func run(t testing.TB, p *Policy, command string) result {
	t.Helper()
	l, err := start(t, p, command)
	if err != nil {
		r := l.wait(t)
		r.err = err
		return r
	}
	return l.wait(t)
}

// mustRun runs command and fails the test unless the launch succeeded.
func mustRun(t testing.TB, p *Policy, command string) result {
	t.Helper()
	r := run(t, p, command)
	if r.err != nil {
		t.Fatalf("Started: %v (stderr %q)", r.err, r.stderr)
	}
	return r
}

// A confined command runs, its output comes back, and
// what confined it is reported.
func TestLaunchRunsCommand(t *testing.T) {
	work := canonicalTempDir(t)
	r := mustRun(t, testPolicy(t, work), `echo hello; echo oops >&2; pwd`)
	if r.stdout != "hello\n"+work+"\n" || r.stderr != "oops\n" || r.code != 0 || r.signal != "" {
		t.Fatalf("got stdout %q stderr %q exit %d %q, want hello, the working directory, oops, 0", r.stdout, r.stderr, r.code, r.signal)
	}
	a := r.applied
	if strings.Join(a.Namespaces, ",") != "user,mount,pid,ipc,uts,net" || !a.NoNewPrivs || !a.Seccomp || a.LandlockABI < 1 || a.Mode != ModeWorkspaceWrite {
		t.Fatalf("Applied = %+v, want every namespace, no_new_privs, seccomp and Landlock", a)
	}
}

// The command runs with no capability, not even in the
// user namespace it is root of, and the kernel's tunables in its /proc are
// read-only: a toolhost run as root must not lend the command its power
// over netfilter, mounts or sysctls.
func TestLaunchDropsCapabilities(t *testing.T) {
	work := canonicalTempDir(t)
	r := mustRun(t, testPolicy(t, work), `grep -E '^Cap(Inh|Prm|Eff|Bnd|Amb)' /proc/self/status; grep ' /proc/sys ' /proc/self/mounts`)
	lines := strings.Split(strings.TrimSpace(r.stdout), "\n")
	if r.code != 0 || len(lines) != 6 {
		t.Fatalf("exit %d, stdout %q, stderr %q", r.code, r.stdout, r.stderr)
	}
	for _, l := range lines[:5] {
		if f := strings.Fields(l); f[1] != "0000000000000000" {
			t.Errorf("%s: want no capability", l)
		}
	}
	if !strings.Contains(lines[5], " ro,") {
		t.Errorf("/proc/sys is mounted %q, want read-only", lines[5])
	}
}

// The launcher exits with the shell's status, and a
// shell killed by a signal is reported as that signal.
func TestLaunchExitStatus(t *testing.T) {
	work := canonicalTempDir(t)
	p := testPolicy(t, work)
	for _, tc := range []struct {
		command string
		code    int
		signal  string
	}{
		{"true", 0, ""},
		{"exit 3", 3, ""},
		{"kill -TERM $$", -1, "terminated"},
		{"kill -KILL $$", -1, "killed"},
	} {
		t.Run(tc.command, func(t *testing.T) {
			r := mustRun(t, p, tc.command)
			if r.code != tc.code || r.signal != tc.signal {
				t.Fatalf("exit %d %q, want %d %q (stderr %q)", r.code, r.signal, tc.code, tc.signal, r.stderr)
			}
		})
	}
}

// The command runs in its cgroup in every
// hierarchy the cgroup has, though the host never moves the launcher (it
// is cloned into the v2 cgroup, and its thread that forks the shell moves
// itself into the v1 ones, which is 20 us where moving a process takes an
// RCU grace period, 10 to 15 ms), and the cgroup's pids limit holds.
func TestLaunchEntersCgroup(t *testing.T) {
	name := fmt.Sprintf("launch-%d", time.Now().UnixNano())
	cg, err := NewCgroup(name, Limits{Pids: 16, MemoryBytes: 256 << 20})
	if err != nil {
		t.Fatalf("this machine has no writable cgroup (toolhost sandbox doctor): %v", err)
	}
	work := canonicalTempDir(t)
	l, err := startInCgroup(t, testPolicy(t, work), cg, `cat /proc/self/cgroup; for i in $(seq 40); do sleep 1 & done; wait; echo forked`)
	if err != nil {
		t.Fatalf("Started: %v", err)
	}
	r := l.wait(t)
	suffix := fmt.Sprintf("/toolhost-%d/%s", os.Getpid(), name)
	in := 0
	for line := range strings.Lines(r.stdout) {
		if strings.HasSuffix(strings.TrimSpace(line), suffix) {
			in++
		}
	}
	if want := len(cg.dirs); in != want {
		t.Errorf("the command is in its cgroup in %d hierarchies, want %d:\n%s", in, want, r.stdout)
	}
	if slices.Contains(cg.Controllers(), "pids") && !strings.Contains(r.stderr, "fork") && !strings.Contains(r.stderr, "Resource temporarily unavailable") && !strings.Contains(r.stderr, "Cannot") {
		t.Errorf("40 background sleeps ran under pids.max 16; stdout %q stderr %q", r.stdout, r.stderr)
	}
}

// The launcher forwards a termination signal to the
// shell, which may handle it.
func TestLaunchForwardsSignals(t *testing.T) {
	work := canonicalTempDir(t)
	l, err := start(t, testPolicy(t, work), `trap 'echo got TERM; exit 7' TERM; echo ready; while :; do sleep 0.05; done`)
	if err != nil {
		t.Fatalf("Started: %v", err)
	}
	waitFor(t, func() bool { return strings.Contains(l.stdout.String(), "ready") }, "the command to start")
	l.cmd.Process.Signal(syscall.SIGTERM)
	r := l.wait(t)
	if r.code != 7 || !strings.Contains(r.stdout, "got TERM") {
		t.Fatalf("exit %d, stdout %q; want the shell's trap to run and exit 7", r.code, r.stdout)
	}
}

// Only what the policy mounts exists, a read-only mount
// cannot be written, and a hidden path cannot be read.
func TestLaunchFilesystem(t *testing.T) {
	work := canonicalTempDir(t)
	outside := canonicalTempDir(t)
	if err := os.WriteFile(filepath.Join(outside, "secret"), []byte("outside-secret"), 0o644); err != nil {
		t.Fatal(err)
	}
	ro := canonicalTempDir(t)
	if err := os.WriteFile(filepath.Join(ro, "f"), []byte("read-only"), 0o644); err != nil {
		t.Fatal(err)
	}
	hiddenDir := filepath.Join(work, "hidden")
	if err := os.Mkdir(hiddenDir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(hiddenDir, "key"), []byte("hidden-dir-secret"), 0o644); err != nil {
		t.Fatal(err)
	}
	hiddenFile := filepath.Join(work, "token")
	if err := os.WriteFile(hiddenFile, []byte("hidden-file-secret"), 0o644); err != nil {
		t.Fatal(err)
	}
	p := testPolicy(t, work)
	p.Mounts = append(p.Mounts, Mount{Kind: MountRead, Source: ro, Target: ro},
		Mount{Kind: MountHide, Target: hiddenDir}, Mount{Kind: MountHide, Target: hiddenFile},
		Mount{Kind: MountHide, Target: filepath.Join(work, "absent")})
	p.Readable = append(p.Readable, ro)
	for _, tc := range []struct {
		name, command, want string
	}{
		{"outside", "cat " + filepath.Join(outside, "secret"), "No such file"},
		{"read-only", "echo x > " + filepath.Join(ro, "f"), "Read-only file system"},
		{"read-only new file", "touch " + filepath.Join(ro, "new"), "Read-only file system"},
		{"hidden dir", "cat " + filepath.Join(hiddenDir, "key"), "Permission denied"},
		{"hidden file", "cat " + hiddenFile, "Permission denied"},
		{"root", "mkdir /x", "Read-only file system"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := mustRun(t, p, tc.command)
			if r.code == 0 || !strings.Contains(r.stderr, tc.want) || strings.Contains(r.stdout+r.stderr, "-secret") {
				t.Fatalf("exit %d, stdout %q, stderr %q; want it to fail with %q", r.code, r.stdout, r.stderr, tc.want)
			}
		})
	}
	if b, _ := os.ReadFile(filepath.Join(ro, "f")); string(b) != "read-only" {
		t.Fatalf("the read-only file now holds %q", b)
	}
	if _, err := os.Stat(filepath.Join(ro, "new")); err == nil {
		t.Fatal("a file was made in the read-only mount")
	}
	if _, err := os.Stat(filepath.Join(work, "absent")); err == nil {
		t.Fatal("hiding a path that does not exist made it")
	}
	// The writable root and the private /tmp are writable, and /tmp is
	// not the host's.
	r := mustRun(t, p, `echo w > written && echo t > /tmp/private-marker && cat written /tmp/private-marker`)
	if r.code != 0 || r.stdout != "w\nt\n" {
		t.Fatalf("write in the root and /tmp: exit %d, stdout %q, stderr %q", r.code, r.stdout, r.stderr)
	}
	if _, err := os.Stat("/tmp/private-marker"); err == nil {
		t.Fatal("the command's /tmp is the host's")
	}
}

// A source that is a symlink (/bin -> usr/bin on merged
// systems) appears as the same symlink; one that passes through a symlink
// is refused, so a command cannot redirect a later mount by replacing a
// directory of its root with a link.
func TestLaunchSymlinkSources(t *testing.T) {
	work := canonicalTempDir(t)
	real := filepath.Join(work, "real")
	if err := os.MkdirAll(filepath.Join(real, "sub"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("real", filepath.Join(work, "link")); err != nil {
		t.Fatal(err)
	}
	p := testPolicy(t, work)
	other := canonicalTempDir(t)
	p.Mounts = append(p.Mounts, Mount{Kind: MountRead, Source: filepath.Join(work, "link"), Target: filepath.Join(other, "l")})
	r := mustRun(t, p, "readlink "+filepath.Join(other, "l"))
	if r.code != 0 || r.stdout != "real\n" {
		t.Fatalf("readlink: exit %d, stdout %q, stderr %q; want the symlink made again", r.code, r.stdout, r.stderr)
	}
	through := filepath.Join(work, "link", "sub")
	p = testPolicy(t, work)
	p.Mounts = append(p.Mounts, Mount{Kind: MountRead, Source: through, Target: filepath.Join(other, "s")})
	r = run(t, p, "true")
	if r.err == nil || !strings.Contains(r.err.Error(), through) || !strings.Contains(r.err.Error(), "symlink") {
		t.Fatalf("Started = %v, want an error naming %s and the symlink", r.err, through)
	}
}

// A launch that cannot be confined as asked (a mount
// source that does not exist) is an error naming the path, and the
// command does not run.
func TestLaunchErrorNamesPath(t *testing.T) {
	work := canonicalTempDir(t)
	missing := filepath.Join(work, "no-such-dir")
	p := testPolicy(t, work)
	p.Mounts = append(p.Mounts, Mount{Kind: MountRead, Source: missing, Target: "/opt/x"})
	r := run(t, p, "touch ran")
	if r.err == nil || !strings.Contains(r.err.Error(), missing) || !strings.Contains(r.err.Error(), "did not run") {
		t.Fatalf("Started = %v, want an error naming %s that says the command did not run", r.err, missing)
	}
	if _, err := os.Stat(filepath.Join(work, "ran")); err == nil {
		t.Fatal("the command ran although its launch failed")
	}
	if r.code != spec.ExitLaunchFailed {
		t.Fatalf("launcher exit %d, want %d", r.code, spec.ExitLaunchFailed)
	}
}

// Every tmpfs of the command's root has a
// size, so without a cgroup a command cannot fill RAM through $HOME's
// scratch or /dev/shm (a tmpfs grows to half of RAM by default): a
// writable one is Limits.MemoryBytes when set (at most 1 GiB), the ones
// that hold only mount points (the root, /dev) 1 MiB.
func TestLaunchTmpfsSizes(t *testing.T) {
	work := canonicalTempDir(t)
	p := testPolicy(t, work)
	p.Mounts = append(p.Mounts, Mount{Kind: MountTmpfs, Target: "/scratch"})
	p.Writable = append(p.Writable, "/scratch")
	p.Limits.MemoryBytes = 8 << 20
	r := mustRun(t, p, `for d in /dev/shm /scratch; do head -c 16777216 /dev/zero > $d/fill 2>/dev/null; echo "$d $? $(wc -c < $d/fill)"; done
while read -r _ at fs opts _; do if [ "$fs" = tmpfs ]; then echo "$at $opts"; fi; done < /proc/self/mounts`)
	if r.code != 0 {
		t.Fatalf("exit %d, stderr %q", r.code, r.stderr)
	}
	for _, want := range []string{"/dev/shm 1 8388608\n", "/scratch 1 8388608\n"} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("stdout %q\nwant %q: a write of 16 MiB into an 8 MiB tmpfs stops at its size", r.stdout, want)
		}
	}
	sizes := map[string]string{}
	for _, line := range strings.Split(r.stdout, "\n") {
		at, opts, ok := strings.Cut(line, " ")
		if !ok || !strings.HasPrefix(at, "/") || strings.Contains(opts, " ") {
			continue
		}
		for _, o := range strings.Split(opts, ",") {
			if v, ok := strings.CutPrefix(o, "size="); ok {
				sizes[at] = v
			}
		}
	}
	for at, want := range map[string]string{"/": "1024k", "/dev": "1024k", "/dev/shm": "8192k", "/scratch": "8192k", "/tmp": "8192k"} {
		if sizes[at] != want {
			t.Errorf("tmpfs %s: size %q, want %q (mounts %v)", at, sizes[at], want, sizes)
		}
	}

	p.Limits.MemoryBytes = 0
	r = mustRun(t, p, `grep ' /dev/shm ' /proc/self/mounts`)
	if !strings.Contains(r.stdout, "size=1048576k") {
		t.Errorf("without a memory limit /dev/shm is %q, want 1 GiB (size=1048576k)", r.stdout)
	}
}

// A mount the kernel refuses because the
// namespace holds fs.mount-max mounts (ENOSPC) says so, with the limit,
// how far the policy got, and what to do, not "no space left on device".
func TestLaunchMountMaxNamed(t *testing.T) {
	b, err := os.ReadFile("/proc/sys/fs/mount-max")
	if err != nil {
		t.Fatal(err)
	}
	limit, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil {
		t.Fatal(err)
	}
	if limit > 200000 {
		t.Skipf("fs.mount-max is %d here: a policy past it would take too long to mount", limit)
	}
	work := canonicalTempDir(t)
	file := filepath.Join(work, "f")
	if err := os.WriteFile(file, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	p := testPolicy(t, work)
	for i := range limit + 10 {
		p.Mounts = append(p.Mounts, Mount{Kind: MountRead, Source: file, Target: fmt.Sprintf("/m/%d", i)})
	}
	r := run(t, p, "touch ran")
	for _, want := range []string{"did not run", "fs.mount-max = " + strconv.Itoa(limit), "sysctl -w fs.mount-max", "of the policy's " + strconv.Itoa(len(p.Mounts))} {
		if r.err == nil || !strings.Contains(r.err.Error(), want) {
			t.Fatalf("Started = %v\nwant an error that says %q", r.err, want)
		}
	}
	if _, err := os.Stat(filepath.Join(work, "ran")); err == nil {
		t.Fatal("the command ran although its launch failed")
	}
}

// A call given up on while its launcher is still making the policy's
// mounts ends Started at once, and the command never runs: the call's
// end reaches the pipes Started is done with, not a field it clears.
func TestLaunchGivenUpOnWhileConfining(t *testing.T) {
	work := canonicalTempDir(t)
	file := filepath.Join(work, "f")
	if err := os.WriteFile(file, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	p := testPolicy(t, work)
	for i := range 20000 {
		p.Mounts = append(p.Mounts, Mount{Kind: MountRead, Source: file, Target: fmt.Sprintf("/m/%d", i)})
	}
	for _, after := range []time.Duration{0, 10 * time.Millisecond, 100 * time.Millisecond, 300 * time.Millisecond} {
		ctx, cancel := context.WithCancel(context.Background())
		time.AfterFunc(after, cancel)
		l, err := startWith(ctx, t, p, nil, "touch ran")
		if err == nil || !strings.Contains(err.Error(), "did not run") {
			t.Errorf("Started given up on after %v = %v, want the command not run", after, err)
		}
		// As proc does when Started fails: its session goes, the
		// launcher still making mounts with it.
		syscall.Kill(-l.cmd.Process.Pid, syscall.SIGKILL)
		l.wait(t)
		cancel()
	}
	if _, err := os.Stat(filepath.Join(work, "ran")); err == nil {
		t.Fatal("a command whose call was given up on while it was confined ran")
	}
}

// A launch message larger than the launcher
// reads (a policy of a root flooded with nested repositories, or a huge
// command) is refused before the launcher starts, with the size, the
// policy's mount count and what to do, not the launcher's bare "larger
// than 16777216 bytes".
func TestLaunchMessageTooLarge(t *testing.T) {
	work := canonicalTempDir(t)
	p := testPolicy(t, work)
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	l := NewLaunch(p, exe, nil)
	defer l.Close()
	err = l.Prepare(exec.Command("/bin/sh", "-c", "true #"+strings.Repeat("x", spec.MaxLaunchMsg)))
	for _, want := range []string{"did not run", "more than the launcher reads", fmt.Sprintf("lists %d mounts", len(p.Mounts)), "nested in the roots"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Fatalf("Prepare = %v, want an error that says %q", err, want)
		}
	}
}

// /proc is the PID namespace's own: the launcher is
// pid 1, and no host process shows.
func TestLaunchProcIsNamespaced(t *testing.T) {
	work := canonicalTempDir(t)
	r := mustRun(t, testPolicy(t, work), `ls /proc`)
	var pids []string
	for _, name := range strings.Fields(r.stdout) {
		if _, err := strconv.Atoi(name); err == nil {
			pids = append(pids, name)
		}
	}
	// The launcher, the shell and ls; the launcher's threads take pids
	// but are not listed.
	if r.code != 0 || len(pids) == 0 || len(pids) > 5 || pids[0] != "1" || slices.Contains(pids, strconv.Itoa(os.Getpid())) {
		t.Fatalf("exit %d, stderr %q: the command's /proc lists %v; want pid 1 and the command's own few, not the host's %d", r.code, r.stderr, pids, os.Getpid())
	}
}

// Nothing a command starts outlives it: a background
// child, one that left the session, and a double fork.
func TestLaunchLeavesNothingBehind(t *testing.T) {
	work := canonicalTempDir(t)
	p := testPolicy(t, work)
	for _, tc := range []struct{ name, command string }{
		{"background", "sleep %s &"},
		{"setsid", "setsid sleep %s &"},
		{"double fork", "(sh -c 'sleep %s &' &)"},
		{"nohup", "nohup sleep %s >/dev/null 2>&1 &"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			marker := uniqueSleep()
			r := mustRun(t, p, fmt.Sprintf(tc.command, marker)+"\nsleep 0.3")
			if r.code != 0 {
				t.Fatalf("exit %d, stderr %q", r.code, r.stderr)
			}
			waitFor(t, func() bool { return len(processesWith(marker)) == 0 }, "the command's processes to be gone")
		})
	}
}

// Killing the launcher kills everything it started.
func TestLaunchKilledKillsAll(t *testing.T) {
	work := canonicalTempDir(t)
	marker := uniqueSleep()
	l, err := start(t, testPolicy(t, work), fmt.Sprintf("setsid sleep %s & sleep %s & sleep %s", marker, marker, marker))
	if err != nil {
		t.Fatalf("Started: %v", err)
	}
	// The shell's own command line holds the marker too.
	waitFor(t, func() bool { return len(processesWith(marker)) >= 3 }, "the command's three sleeps to start")
	l.cmd.Process.Signal(syscall.SIGKILL)
	r := l.wait(t)
	if r.signal != "killed" {
		t.Fatalf("exit %d %q, want killed", r.code, r.signal)
	}
	waitFor(t, func() bool { return len(processesWith(marker)) == 0 }, "the command's processes to be gone")
}

// With network off the command has its own loopback, up, and cannot
// reach a listener on the host's, in a launcher started for it as in a
// warm one, which brought the loopback up while it waited.
func TestLaunchNetworkOff(t *testing.T) {
	ln, err := net.Listen("tcp4", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	accepted := make(chan struct{}, 1)
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			accepted <- struct{}{}
			c.Close()
		}
	}()
	work := canonicalTempDir(t)
	for _, warm := range []bool{false, true} {
		t.Run(fmt.Sprintf("warm=%v", warm), func(t *testing.T) {
			p := testPolicy(t, work)
			p.Env = append(p.Env, "CONFINE_HELPER=net", "CONFINE_ADDR="+ln.Addr().String())
			stdout, stderr, code := runHelperInside(t, p, warm)
			if code != 0 || !strings.Contains(stdout, "lo up; own listener reached; host refused") {
				t.Fatalf("exit %d, stdout %q, stderr %q", code, stdout, stderr)
			}
			select {
			case <-accepted:
				t.Fatal("the host's listener accepted a connection from the confined command")
			case <-time.After(100 * time.Millisecond):
			}
		})
	}
}

// runHelperInside runs TestHelperInside under p, in a warm launcher or
// one started for it, and returns its output and exit status.
func runHelperInside(t *testing.T, p *Policy, warm bool) (stdout, stderr string, code int) {
	t.Helper()
	command := helperPath + " -test.run=^TestHelperInside$"
	if !warm {
		r := mustRun(t, p, command)
		return r.stdout, r.stderr, r.code
	}
	res, l, err := runWarm(t, p, takeWarm(t, testPool(t, p.Network != NetworkOn), p.Network != NetworkOn), nil, command, 20*time.Second)
	if err != nil || !l.Prestarted() {
		t.Fatalf("Run: %v, prestarted %v (stderr %q)", err, l.Prestarted(), res.Stderr)
	}
	return string(res.Stdout), string(res.Stderr), res.ExitCode
}

// TestLauncherOutOfReach: the launcher, PID 1 of the command's
// namespace, keeps more than the command has on its threads other than
// the one that forked the shell (no Landlock domain, capabilities in
// its namespaces). Nothing of the command reaches them: no ptrace, no
// reading their memory, no descriptor taken through /proc or a pidfd,
// no view of their root or working directory.
func TestLauncherOutOfReach(t *testing.T) {
	work := canonicalTempDir(t)
	for _, warm := range []bool{false, true} {
		t.Run(fmt.Sprintf("warm=%v", warm), func(t *testing.T) {
			p := testPolicy(t, work)
			p.Env = append(p.Env, "CONFINE_HELPER=launcher")
			stdout, stderr, code := runHelperInside(t, p, warm)
			if code != 0 || !strings.Contains(stdout, "launcher out of reach") {
				t.Fatalf("exit %d, stdout %q, stderr %q", code, stdout, stderr)
			}
		})
	}
}

// With network allowlist, 127.0.0.1:ProxyPort inside
// reaches the proxy's Unix socket.
func TestLaunchRelay(t *testing.T) {
	dir := canonicalTempDir(t)
	sock := filepath.Join(dir, "proxy.sock")
	ln, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				line, _ := bufio.NewReader(c).ReadString('\n')
				fmt.Fprintf(c, "proxy got %s", line)
			}()
		}
	}()
	work := canonicalTempDir(t)
	p := testPolicy(t, work)
	p.Network, p.ProxySocket, p.ProxyPort = NetworkAllowlist, sock, 34567
	p.Mounts = append(p.Mounts, Mount{Kind: MountWrite, Source: sock, Target: sock})
	p.Env = append(p.Env, "CONFINE_HELPER=relay", "CONFINE_ADDR=127.0.0.1:34567")
	r := mustRun(t, p, helperPath+" -test.run=^TestHelperInside$")
	if r.code != 0 || !strings.Contains(r.stdout, "proxy got ping") {
		t.Fatalf("exit %d, stdout %q, stderr %q", r.code, r.stdout, r.stderr)
	}
}

// TestHelperInside runs inside a confined command (the test binary
// mounted at helperPath) when CONFINE_HELPER says what to check.
func TestHelperInside(t *testing.T) {
	addr := os.Getenv("CONFINE_ADDR")
	switch os.Getenv("CONFINE_HELPER") {
	case "":
		t.Skip("runs inside a confined command only")
	case "net":
		lo, err := net.InterfaceByName("lo")
		if err != nil || lo.Flags&net.FlagUp == 0 {
			t.Fatalf("lo: %+v, %v; want it up", lo, err)
		}
		own, err := net.Listen("tcp4", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		c, err := net.DialTimeout("tcp4", own.Addr().String(), 2*time.Second)
		if err != nil {
			t.Fatalf("dial the namespace's own listener: %v", err)
		}
		c.Close()
		if c, err := net.DialTimeout("tcp4", addr, 2*time.Second); err == nil {
			c.Close()
			t.Fatalf("reached the host's listener %s", addr)
		}
		fmt.Println("lo up; own listener reached; host refused")
	case "launcher":
		if reached := reachLauncher(); len(reached) > 0 {
			t.Fatalf("the command reached its launcher:\n%s", strings.Join(reached, "\n"))
		}
		fmt.Println("launcher out of reach")
	case "relay":
		c, err := net.DialTimeout("tcp4", addr, 2*time.Second)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		c.SetDeadline(time.Now().Add(5 * time.Second))
		fmt.Fprintf(c, "ping\n")
		b, err := io.ReadAll(c)
		if err != nil {
			t.Fatal(err)
		}
		fmt.Print(string(b))
	}
}

// BenchmarkLaunchTrue measures what confinement adds to starting a
// command (target: at most 5 ms): `true` through the launcher with the
// test policy, against /bin/sh -c true started plainly.
func BenchmarkLaunchTrue(b *testing.B) {
	work := canonicalTempDir(b)
	p := testPolicy(b, work)
	b.Run("confined", func(b *testing.B) {
		for b.Loop() {
			if r := mustRun(b, p, "true"); r.code != 0 {
				b.Fatalf("exit %d: %s", r.code, r.stderr)
			}
		}
	})
	b.Run("plain", func(b *testing.B) {
		for b.Loop() {
			cmd := exec.Command("/bin/sh", "-c", "true")
			cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
			if err := cmd.Run(); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// uniqueSleep returns a sleep duration no other process uses, to find
// the command's processes by their command line.
func uniqueSleep() string {
	return fmt.Sprintf("1000.%d%d", os.Getpid(), time.Now().UnixNano()%1e9)
}

// processesWith lists the host's processes whose command line holds
// marker, zombies excepted.
func processesWith(marker string) []int {
	names, _ := filepath.Glob("/proc/[0-9]*/cmdline")
	var pids []int
	for _, name := range names {
		b, err := os.ReadFile(name)
		if err != nil || !bytes.Contains(b, []byte(marker)) {
			continue
		}
		pid, _ := strconv.Atoi(filepath.Base(filepath.Dir(name)))
		if st, err := os.ReadFile(filepath.Join(filepath.Dir(name), "stat")); err == nil {
			if i := bytes.LastIndexByte(st, ')'); i > 0 && len(st) > i+2 && st[i+2] == 'Z' {
				continue
			}
		}
		pids = append(pids, pid)
	}
	return pids
}

// waitFor polls cond for at most 5 s.
func waitFor(t testing.TB, cond func() bool, what string) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("gave up waiting for %s", what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// syncBuffer is a buffer the command's output is copied into by exec's
// goroutine while the test reads it.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// reachLauncher tries, from inside a confined command, each way to the
// launcher's threads (PID 1 and its tasks), and says which worked.
func reachLauncher() []string {
	var reached []string
	// The launcher's threads have the namespace's first ids, below the
	// shell's and this process's.
	var tids []string
	for tid := 1; tid < os.Getpid(); tid++ {
		if _, err := os.Lstat(fmt.Sprintf("/proc/1/task/%d", tid)); err == nil {
			tids = append(tids, strconv.Itoa(tid))
		}
	}
	if len(tids) < 2 {
		// A Go launcher has more than its locked thread: the others are
		// the ones to try.
		return []string{fmt.Sprintf("found the launcher's threads %q only; want more than one to try", tids)}
	}
	open := func(path string, flags int) {
		if fd, err := unix.Open(path, flags|unix.O_CLOEXEC, 0); err == nil {
			unix.Close(fd)
			reached = append(reached, "opened "+path)
		}
	}
	for _, tid := range tids {
		task := "/proc/1/task/" + tid
		if n, err := strconv.Atoi(tid); err == nil {
			if err := unix.PtraceSeize(n); err == nil {
				reached = append(reached, "ptrace seized thread "+tid)
			}
		}
		open(task+"/mem", unix.O_RDONLY)
		open(task+"/environ", unix.O_RDONLY)
		open(task+"/root/", unix.O_RDONLY|unix.O_DIRECTORY)
		open(task+"/cwd/", unix.O_RDONLY|unix.O_DIRECTORY)
		for fd := range 16 {
			open(fmt.Sprintf("%s/fd/%d", task, fd), unix.O_RDONLY)
		}
	}
	open("/proc/1/mem", unix.O_RDONLY)
	buf := make([]byte, 8)
	local := []unix.Iovec{{Base: &buf[0], Len: uint64(len(buf))}}
	remote := []unix.RemoteIovec{{Base: 0x400000, Len: len(buf)}}
	// EFAULT would say the call ran and found nothing at the address.
	if _, err := unix.ProcessVMReadv(1, local, remote, 0); !errors.Is(err, unix.EPERM) {
		reached = append(reached, fmt.Sprintf("process_vm_readv of PID 1: %v, want EPERM", err))
	}
	if pidfd, err := unix.PidfdOpen(1, 0); err == nil {
		for fd := range 16 {
			if got, err := unix.PidfdGetfd(pidfd, fd, 0); err == nil {
				unix.Close(got)
				reached = append(reached, fmt.Sprintf("pidfd_getfd took descriptor %d of PID 1", fd))
			}
		}
		unix.Close(pidfd)
	}
	return reached
}
