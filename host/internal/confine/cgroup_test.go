//go:build linux

package confine

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/toolhost/toolhost/internal/testenv"
)

// needCgroups skips, saying why, where this machine gives toolhost no
// cgroup with controllers (they are optional: commands then get rlimits
// only, as the doctor says).
func needCgroups(t *testing.T, controllers ...string) {
	t.Helper()
	mounts, err := readMountinfo()
	if err != nil {
		t.Fatal(err)
	}
	have := probeCgroups(mounts).Controllers()
	for _, k := range controllers {
		if !slices.Contains(have, k) {
			t.Skipf("no writable cgroup with the %s controller here (have %v): toolhost sandbox doctor says how to get one", k, have)
		}
	}
}

// startGated starts sh -c script, held at a read of stdin until it is in
// cg, as the launcher is held until the host added it. It returns the
// command and a function reading its stderr.
func startGated(t *testing.T, cg *Cgroup, script string) (*exec.Cmd, func() string) {
	t.Helper()
	cmd := exec.Command("/bin/sh", "-c", "read go; "+script)
	// A file, not a pipe: processes left behind keep a pipe open, and Wait
	// would wait for them.
	stderr, err := os.Create(filepath.Join(t.TempDir(), "stderr"))
	if err != nil {
		t.Fatal(err)
	}
	defer stderr.Close()
	cmd.Stderr = stderr
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	if err := cg.Add(cmd.Process.Pid); err != nil {
		t.Fatal(err)
	}
	if _, err := io.WriteString(stdin, "go\n"); err != nil {
		t.Fatal(err)
	}
	stdin.Close()
	name := stderr.Name()
	return cmd, func() string {
		data, _ := os.ReadFile(name)
		return string(data)
	}
}

// dirOf is cg's directory holding controller k (the v2 one for "").
func dirOf(t *testing.T, cg *Cgroup, k string) string {
	t.Helper()
	for _, d := range cg.dirs {
		if k == "" && d.v2 || k != "" && fileExists(filepath.Join(d.path, k+".max")) || k == "memory" && fileExists(filepath.Join(d.path, "memory.limit_in_bytes")) {
			return d.path
		}
	}
	t.Fatalf("no cgroup directory for %q in %+v", k, cg.dirs)
	return ""
}

func fileExists(path string) bool {
	_, err := os.Stat(path)
	return err == nil
}

// alive reports whether pid is a process that has not exited.
func alive(pid int) bool {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return false
	}
	// The state follows the command name in parentheses: Z is a zombie.
	s := string(data)
	i := strings.LastIndexByte(s, ')')
	return i < 0 || i+2 >= len(s) || s[i+2] != 'Z'
}

// waitGone waits until none of pids is alive, up to a generous bound.
func waitGone(t *testing.T, pids []int) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for {
		left := slices.DeleteFunc(slices.Clone(pids), func(pid int) bool { return !alive(pid) })
		if len(left) == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("processes %v still alive after the cgroup closed", left)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// A bounded fork burst stops at pids_max. The shell
// tries to start 100 sleeps in the background; with pids.max 20 at most
// 20 processes exist, the shell's fork fails, and Close kills every
// sleep that did start, though the shell that started them is gone.
func TestCgroupPidsMaxStopsForkBurst(t *testing.T) {
	needCgroups(t, "pids")
	cg, err := NewCgroup("burst", Limits{Pids: 20})
	if err != nil {
		t.Fatal(err)
	}
	defer cg.Close()
	if got := cg.Controllers(); !slices.Equal(got, []string{"pids"}) {
		t.Errorf("Controllers() = %v, want [pids]", got)
	}
	cmd, stderr := startGated(t, cg, `i=0; while [ $i -lt 100 ]; do sleep 600 & i=$((i+1)); done; echo started $i`)
	out := make(chan error, 1)
	go func() { out <- cmd.Wait() }()
	select {
	case <-out:
	case <-time.After(30 * time.Second):
		t.Fatal("the fork burst's shell did not finish")
	}
	if !strings.Contains(stderr(), "fork") {
		t.Errorf("the shell's fork did not fail at the limit; stderr: %q", stderr())
	}
	pids := readPids(dirOf(t, cg, "pids"))
	if len(pids) == 0 || len(pids) > 20 {
		t.Errorf("%d processes in the cgroup after the burst, want 1..20", len(pids))
	}
	dirs := slices.Collect(func(yield func(string) bool) {
		for _, d := range cg.dirs {
			yield(d.path)
		}
	})
	if err := cg.Close(); err != nil {
		t.Fatal(err)
	}
	waitGone(t, pids)
	for _, d := range dirs {
		if fileExists(d) {
			t.Errorf("cgroup %s still exists after Close", d)
		}
	}
}

// A memory hog is stopped by its limit, and OOMKilled
// says so (the hint the model gets rests on it). 512 MiB touched page by
// page under a 64 MiB limit.
func TestCgroupMemoryLimitKillsHog(t *testing.T) {
	needCgroups(t, "memory")
	python := testenv.LookPath(t, "python3", "apt-get install python3 (as root)") // to make the memory hog
	cg, err := NewCgroup("hog", Limits{MemoryBytes: 64 << 20})
	if err != nil {
		t.Fatal(err)
	}
	defer cg.Close()
	if got := cg.Controllers(); !slices.Equal(got, []string{"memory"}) {
		t.Errorf("Controllers() = %v, want [memory]", got)
	}
	cmd, stderr := startGated(t, cg, "exec "+python+` -c 'b = bytearray(512 << 20); b[::4096] = b"x" * (len(b) // 4096); print("survived")'`)
	err = cmd.Wait()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.Sys().(syscall.WaitStatus).Signal() != syscall.SIGKILL {
		t.Fatalf("the hog ended with %v, want killed by SIGKILL; stderr: %s", err, stderr())
	}
	if !cg.OOMKilled() {
		t.Error("OOMKilled() = false after the hog was killed at its limit")
	}
	if err := cg.Close(); err != nil {
		t.Fatal(err)
	}
	if !cg.OOMKilled() {
		t.Error("OOMKilled() = false after Close")
	}
}

// Nothing a command starts outlives Close, whether it
// left the process group (setsid), was orphaned by a double fork or
// ignores SIGTERM; the cgroup's directories are gone after, and a second
// Close is harmless. No limits: a cgroup only to kill by.
func TestCgroupCloseKillsEverything(t *testing.T) {
	needCgroups(t)
	cg, err := NewCgroup("escape", Limits{})
	if err != nil {
		t.Skipf("no cgroup here: %v", err)
	}
	defer cg.Close()
	if got := cg.Controllers(); len(got) != 0 {
		t.Errorf("Controllers() = %v without limits, want none", got)
	}
	cmd, _ := startGated(t, cg, `setsid sleep 600 & (sh -c 'trap "" TERM; sleep 600' &) ; nohup sleep 600 >/dev/null 2>&1 & echo ok`)
	if err := cmd.Wait(); err != nil {
		t.Fatal(err)
	}
	var pids []int
	for range 100 {
		if pids = readPids(cg.dirs[0].path); len(pids) >= 4 {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	if len(pids) < 4 {
		t.Fatalf("%d processes in the cgroup, want the 4 the command left behind", len(pids))
	}
	start := time.Now()
	if err := cg.Close(); err != nil {
		t.Fatal(err)
	}
	t.Logf("Close took %s for %d processes", time.Since(start), len(pids))
	waitGone(t, pids)
	for _, d := range cg.dirs {
		if fileExists(d.path) {
			t.Errorf("cgroup %s still exists after Close", d.path)
		}
	}
	if err := cg.Close(); err != nil {
		t.Errorf("second Close: %v", err)
	}
}

// Directories of toolhost processes that are gone are removed when a new
// one is made, if empty; one of a live process, or holding a process, is
// left alone.
func TestCgroupRemovesStaleDirectories(t *testing.T) {
	needCgroups(t)
	mounts, err := readMountinfo()
	if err != nil {
		t.Fatal(err)
	}
	lay := findCgroups(mounts)
	own := cmp(lay.unified, lay.memory, lay.pids)
	dead := exec.Command("true")
	if err := dead.Run(); err != nil {
		t.Fatal(err)
	}
	stale := filepath.Join(own, "toolhost-"+strconv.Itoa(dead.Process.Pid))
	live := filepath.Join(own, "toolhost-1")
	for _, d := range []string{filepath.Join(stale, "call-1"), filepath.Join(live, "call-1")} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	t.Cleanup(func() {
		for _, d := range []string{stale, live} {
			os.Remove(filepath.Join(d, "call-1"))
			os.Remove(d)
		}
	})
	// The test's own directory must be new for the sweep to run.
	os.Remove(filepath.Join(own, "toolhost-"+strconv.Itoa(os.Getpid())))
	cg, err := NewCgroup("sweep", Limits{})
	if err != nil {
		t.Fatal(err)
	}
	defer cg.Close()
	if fileExists(stale) {
		t.Errorf("%s of a process that is gone was not removed", stale)
	}
	if !fileExists(live) {
		t.Errorf("%s of a live process was removed", live)
	}
}

func cmp(s ...string) string {
	for _, v := range s {
		if v != "" {
			return v
		}
	}
	return ""
}

// A name that is not one path element is refused: it would make the
// cgroup elsewhere.
func TestCgroupRefusesBadNames(t *testing.T) {
	for _, name := range []string{"", ".", "..", "a/b", "../x", "a\x00b"} {
		if cg, err := NewCgroup(name, Limits{}); err == nil {
			cg.Close()
			t.Errorf("NewCgroup(%q) made a cgroup", name)
		}
	}
}

// Two commands' cgroups live side by side; closing one leaves the other
// and the parent they share.
func TestCgroupConcurrentCommands(t *testing.T) {
	needCgroups(t)
	a, err := NewCgroup("a", Limits{})
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	b, err := NewCgroup("b", Limits{})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	if _, err := NewCgroup("a", Limits{}); err == nil || !strings.Contains(err.Error(), "in use") {
		t.Errorf("a second cgroup named a: %v, want an error saying the name is in use", err)
	}
	cmd := exec.CommandContext(context.Background(), "sleep", "600")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { cmd.Process.Kill(); cmd.Wait() }()
	if err := b.Add(cmd.Process.Pid); err != nil {
		t.Fatal(err)
	}
	if err := a.Close(); err != nil {
		t.Fatal(err)
	}
	if !alive(cmd.Process.Pid) {
		t.Fatal("closing a killed b's process")
	}
	if err := unix.Kill(cmd.Process.Pid, 0); err != nil {
		t.Fatal(err)
	}
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}
	cmd.Wait()
}

// A cgroup path is found under the mount of its hierarchy even when the
// mount shows only a subtree (a container's cgroup namespace or a bind),
// and never outside it; a v1 hierarchy must carry the controller.
func TestCgroupDirOf(t *testing.T) {
	top := t.TempDir()
	sub := t.TempDir()
	for _, d := range []string{filepath.Join(top, "user.slice", "a b.scope"), filepath.Join(sub, "x")} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	mounts := []mountEntry{
		{root: "/", point: top, fsType: "cgroup2", superOpts: []string{"rw"}},
		{root: "/ns/sub", point: sub, fsType: "cgroup", superOpts: []string{"rw", "pids"}},
	}
	tests := []struct {
		fsType, controller, path string
		dir                      string
		top                      bool
	}{
		{"cgroup2", "", "/", top, true},
		{"cgroup2", "", "/user.slice/a b.scope", filepath.Join(top, "user.slice", "a b.scope"), false},
		{"cgroup2", "", "/user.slice/missing", "", false},
		{"cgroup", "pids", "/ns/sub/x", filepath.Join(sub, "x"), false},
		{"cgroup", "pids", "/ns/other", "", false},
		{"cgroup", "memory", "/ns/sub/x", "", false},
	}
	for _, tt := range tests {
		dir, isTop := cgroupDirOf(mounts, tt.fsType, tt.controller, tt.path)
		if dir != tt.dir || isTop != tt.top {
			t.Errorf("cgroupDirOf(%s %s %s) = %q, %v; want %q, %v", tt.fsType, tt.controller, tt.path, dir, isTop, tt.dir, tt.top)
		}
	}
	if got := unescapeMount(`/sys/fs/cgroup/a\040b\134c`); got != `/sys/fs/cgroup/a b\c` {
		t.Errorf("unescapeMount = %q", got)
	}
}
