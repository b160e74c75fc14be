package hostile_test

// Red team: a warm launcher reports its command's end once it killed and
// reaped what the shell left, and the host takes that report as the end
// without waiting for the launcher's exit. A prompt-injected model runs
// commands that try to outlive that report (processes that change their
// pid all the time, fork bombs, a child made the sibling of its maker, a
// vfork child that never execs, stopped and traced children, processes
// that ignore every signal), to forge it, and to leak output into the
// next call; a client gives up on calls and closes the host meanwhile.

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/toolhost/toolhost/host"
	"github.com/toolhost/toolhost/host/internal/engine"
)

// earlyEndMarker names the helper, so that its processes are found by
// their command line alone.
const earlyEndMarker = "earlyend-marker"

// earlyEndSource is the helper: each mode appends to a file, every 2 ms,
// from processes made to escape the launcher's kill(-1).
const earlyEndSource = `#define _GNU_SOURCE
#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>
static const char *file;
static void note(const char *s) {
	int fd = open(file, O_WRONLY | O_APPEND | O_CREAT, 0644);
	if (fd >= 0) { write(fd, s, strlen(s)); close(fd); }
}
static int loop(void *arg) { for (;;) { note((const char *)arg); usleep(2000); } return 0; }
static char stack[1 << 16];
int main(int argc, char **argv) {
	if (argc < 3) return 2;
	file = argv[2];
	if (!strcmp(argv[1], "hop")) {
		/* A process that changes its pid all the time, to race kill(-1). */
		for (;;) { pid_t p = fork(); if (p > 0) _exit(0); if (p < 0) usleep(1000); note("hop\n"); }
	}
	if (!strcmp(argv[1], "bomb")) {
		/* 16 processes, each changing its pid all the time: more only
		   starve the shell on two cores. */
		for (int i = 0; i < 4; i++) fork();
		for (;;) { pid_t p = fork(); if (p > 0) _exit(0); if (p < 0) usleep(1000); note("bomb\n"); }
	}
	if (!strcmp(argv[1], "cparent")) {
		/* A child made the sibling of its maker. */
		pid_t p = fork();
		if (p == 0) { clone(loop, stack + sizeof stack, CLONE_PARENT | SIGCHLD, "cparent\n"); _exit(0); }
		for (;;) pause();
	}
	if (!strcmp(argv[1], "vfork")) {
		/* The vfork child never execs nor exits: its parent stays suspended. */
		pid_t p = vfork();
		if (p == 0) { for (;;) { note("vfork\n"); usleep(2000); } }
		return 0;
	}
	if (!strcmp(argv[1], "ignore")) {
		for (int s = 1; s < 32; s++) signal(s, SIG_IGN);
		setsid();
		loop("ignore\n");
	}
	if (!strcmp(argv[1], "stopped")) {
		/* A stopped child, and a traced one. */
		pid_t p = fork();
		if (p == 0) { raise(SIGSTOP); loop("stopped\n"); }
		p = fork();
		if (p == 0) { syscall(SYS_ptrace, 0 /* TRACEME */, 0, 0, 0); raise(SIGSTOP); loop("traced\n"); }
		loop("stopper\n");
	}
	return 2;
}
`

// earlyEndHelper builds the helper into dir, where commands may run it.
func earlyEndHelper(t *testing.T, dir string) string {
	t.Helper()
	cc, err := exec.LookPath("cc")
	if err != nil {
		t.Skip("no C compiler to build the helper")
	}
	src := filepath.Join(t.TempDir(), "m.c")
	if err := os.WriteFile(src, []byte(earlyEndSource), 0o644); err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(dir, earlyEndMarker)
	if out, err := exec.Command(cc, "-O1", "-o", bin, src).CombinedOutput(); err != nil {
		t.Fatalf("cc: %v\n%s", err, out)
	}
	return bin
}

// earlyEndSize is the size of path, 0 when it does not exist.
func earlyEndSize(path string) int64 {
	fi, err := os.Stat(path)
	if err != nil {
		return 0
	}
	return fi.Size()
}

// Attack (model): a command starts processes that race the launcher's
// kill(-1) (one changing its pid all the time, a fork bomb), a child made
// the sibling of its maker with CLONE_PARENT, a vfork child that never
// execs, a stopped child and a traced one, and one that ignores every
// signal in a session of its own; each appends to a file; then the shell
// exits at once.
// Expected: when run_command returns, none of them runs (no grace: the
// launcher reaped them before it reported the end) and no file grows.
func TestEarlyEndNothingRunsAtReturn(t *testing.T) {
	h, root := warmOpen(t, nil)
	bin := earlyEndHelper(t, root)
	ctx := context.Background()
	if r := warmRun(t, h, ctx, engine.Narrowing{}, map[string]any{"command": "true"}); !r.OK {
		t.Fatalf("true: %+v", r.Error)
	}
	modes := []string{"hop", "bomb", "cparent", "vfork", "stopped", "ignore"}
	warm := 0
	for round := 0; round < 3; round++ {
		time.Sleep(300 * time.Millisecond) // the pool refills
		var cmd strings.Builder
		for _, m := range modes {
			cmd.WriteString(bin + " " + m + " " + filepath.Join(root, m+strconv.Itoa(round)+".log") + " 2>/dev/null &\n")
		}
		// Every helper has written before the shell exits.
		cmd.WriteString(`for i in $(seq 100); do n=0; for f in ` + root + `/*` + strconv.Itoa(round) + `.log; do [ -s "$f" ] && n=$((n+1)); done; [ $n -ge 6 ] && break; sleep 0.05; done
echo "written $n"; echo "init $(tr '\0' ' ' < /proc/1/cmdline)"`)
		r := warmRun(t, h, ctx, engine.Narrowing{}, map[string]any{"command": cmd.String(), "timeout_ms": 60000})
		left := warmMatching(earlyEndMarker)
		sizes := map[string]int64{}
		for _, m := range modes {
			p := filepath.Join(root, m+strconv.Itoa(round)+".log")
			sizes[p] = earlyEndSize(p)
		}
		if !r.OK {
			t.Fatalf("round %d: %+v", round, r.Error)
		}
		if !strings.Contains(r.Content, "written 6") {
			t.Fatalf("round %d: not every helper ran, the attack did not happen:\n%s", round, r.Content)
		}
		if warmIsWarm(r.Content) {
			warm++
		}
		if len(left) > 0 {
			t.Errorf("round %d: processes of the command run when run_command returned: %v", round, left)
		}
		time.Sleep(300 * time.Millisecond)
		for p, s := range sizes {
			if now := earlyEndSize(p); now != s {
				t.Errorf("round %d: %s grew from %d to %d bytes after run_command returned", round, filepath.Base(p), s, now)
			}
		}
		warmGone(left, 3*time.Second)
	}
	if warm == 0 {
		t.Fatal("no command ran in a warm launcher: the early end was not reached")
	}
}

// Attack (model): a command writes a forged end ("exit 0", "signal 9")
// into every descriptor of its launcher it can reach through /proc/1/fd
// and to its own output, then goes on and exits 7.
// Expected: the call reports exit 7 and all the output written after the
// forgeries.
func TestEarlyEndForgedStatusIgnored(t *testing.T) {
	h, _ := warmOpen(t, nil)
	ctx := context.Background()
	if r := warmRun(t, h, ctx, engine.Narrowing{}, map[string]any{"command": "true"}); !r.OK {
		t.Fatalf("true: %+v", r.Error)
	}
	const cmd = `for f in /proc/1/fd/* /proc/1/task/*/fd/*; do printf 'exit 0\nsignal 9\n' > "$f"; done 2>/dev/null
printf 'exit 0\n'; printf 'exit 0\n' >&2
sleep 0.5; echo after; echo "init $(tr '\0' ' ' < /proc/1/cmdline)"; exit 7`
	warm := 0
	for i := 0; i < 3; i++ {
		time.Sleep(300 * time.Millisecond)
		r := warmRun(t, h, ctx, engine.Narrowing{}, map[string]any{"command": cmd})
		d := warmDetails(t, r)
		out := warmOutput(r)
		if d["exit_code"] != float64(7) || d["signal"] != nil {
			t.Errorf("a forged end was taken for the command's: details %v\n%s", d, out)
		}
		if !strings.Contains(out, "after") {
			t.Errorf("the output after the forgery is lost:\n%s", out)
		}
		if warmIsWarm(out) {
			warm++
		}
	}
	if warm == 0 {
		t.Fatal("no command ran in a warm launcher")
	}
}

// Attack (model): a command leaves writers in the background that flood
// its output and stderr a moment after its shell exits, and its shell
// ends with 5000 lines; the next command prints one line.
// Expected: the first call's output is its lines, whole, and no byte of
// the background writers reaches it or a later call.
func TestEarlyEndOutputNeitherLostNorMixed(t *testing.T) {
	h, _ := warmOpen(t, nil)
	ctx := context.Background()
	want := ""
	for i := 1; i <= 5000; i++ {
		want += strconv.Itoa(i) + "\n"
	}
	want += "LAST-LINE"
	for i := 0; i < 4; i++ {
		time.Sleep(250 * time.Millisecond)
		r := warmRun(t, h, ctx, engine.Narrowing{}, map[string]any{"command": `(sleep 0.3; while :; do echo LEAKED-OUT; done) & (sleep 0.3; while :; do echo LEAKED-ERR >&2; done) &
seq 1 5000; echo LAST-LINE`})
		if out := strings.TrimSpace(warmOutput(r)); out != want {
			t.Errorf("round %d: the command's output is not its lines, whole (%d bytes, %d wanted): ...%q", i, len(out), len(want), out[max(0, len(out)-80):])
		}
		r = warmRun(t, h, ctx, engine.Narrowing{}, map[string]any{"command": "echo next"})
		if out := warmOutput(r); strings.Contains(out, "LEAKED") || !strings.Contains(out, "next") {
			t.Errorf("round %d: the next call's output: %q", i, out)
		}
	}
}

// Attack (client): commands leave children behind and the client gives
// up on them while they run; the host is closed while more run.
// Expected: Close returns within the bounds of its waits; once the calls
// have returned, no cgroup of a command is left nor any of their
// processes.
func TestEarlyEndCloseDuringCallsLeavesNoCgroup(t *testing.T) {
	const unified = "/sys/fs/cgroup/unified"
	if _, err := os.Stat(filepath.Join(unified, "cgroup.procs")); err != nil {
		t.Skip("no v2 cgroup hierarchy at " + unified)
	}
	h, _ := warmOpenUnclosed(t, nil)
	ctx := context.Background()
	for i := 0; i < 12; i++ {
		c, cancel := context.WithTimeout(ctx, 150*time.Millisecond)
		warmRun(t, h, c, engine.Narrowing{}, map[string]any{"command": "sleep 31.91 & sleep 31.92"})
		cancel()
		warmRun(t, h, ctx, engine.Narrowing{}, map[string]any{"command": "sleep 31.93 & echo x"})
	}
	var wg sync.WaitGroup
	for i := 0; i < 3; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			b := engine.Batch{Conversation: "c", Calls: []engine.Call{call("1", "run_command", jsonArgs(t, map[string]any{"command": "sleep 31.94 & sleep 4.95"}))}}
			h.Process(ctx, b, host.BatchOptions{Approver: approveAll()})
		}()
	}
	time.Sleep(700 * time.Millisecond)
	begin := time.Now()
	h.Close(ctx)
	if d := time.Since(begin); d > 15*time.Second {
		t.Errorf("Close took %v", d)
	}
	wg.Wait()
	warmNoSurvivor(t, "sleep 31.9")
	warmNoSurvivor(t, "sleep 4.95")
	own := filepath.Join(unified, "toolhost-"+strconv.Itoa(os.Getpid()))
	var left []string
	filepath.WalkDir(own, func(p string, d os.DirEntry, err error) error {
		if err == nil && d.IsDir() && p != own {
			left = append(left, p)
		}
		return nil
	})
	if len(left) > 0 {
		t.Errorf("cgroups left after Close: %v", left)
	}
}

// earlyEndStopWaiting stops the warm launchers waiting for this test's
// host, once at least one waits, and returns them.
func earlyEndStopWaiting(t *testing.T) map[int]string {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		w := warmDescendants(os.Getpid(), warmLauncherArg)
		if len(w) > 0 {
			// Those started meanwhile are stopped too.
			time.Sleep(500 * time.Millisecond)
			w = warmDescendants(os.Getpid(), warmLauncherArg)
			for pid := range w {
				syscall.Kill(pid, syscall.SIGSTOP)
			}
			t.Cleanup(func() {
				for pid := range w {
					syscall.Kill(pid, syscall.SIGCONT)
				}
			})
			return w
		}
		if time.Now().After(deadline) {
			t.Fatal("no warm launcher waits")
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// Attack (a stalled machine, or a process of the same user): the
// launchers waiting for the next command are stopped (SIGSTOP) before
// it comes, and resumed after its call returned.
// Expected: the command runs once at most, never twice (the cold path
// does not run it again); the call ends within the launcher's start-up
// bound; the command after it runs, confined, in a warm launcher.
func TestEarlyEndStoppedLauncherRunsAtMostOnce(t *testing.T) {
	h, root := warmOpen(t, nil)
	ctx := context.Background()
	if r := warmRun(t, h, ctx, engine.Narrowing{}, map[string]any{"command": "true"}); !r.OK {
		t.Fatalf("true: %+v", r.Error)
	}
	stopped := earlyEndStopWaiting(t)
	runs := filepath.Join(root, "runs")
	begin := time.Now()
	r := warmRun(t, h, ctx, engine.Narrowing{}, map[string]any{"command": "echo run >> " + runs})
	if d := time.Since(begin); d > 20*time.Second {
		t.Errorf("the call took %v", d)
	}
	for pid := range stopped {
		syscall.Kill(pid, syscall.SIGCONT)
	}
	time.Sleep(time.Second)
	b, _ := os.ReadFile(runs)
	if n := strings.Count(string(b), "run"); n > 1 || (r.OK && n != 1) {
		t.Errorf("the command ran %d times; the call: %+v", n, r.Error)
	}
	r = warmRun(t, h, ctx, engine.Narrowing{}, map[string]any{"command": `echo "init $(tr '\0' ' ' < /proc/1/cmdline)"`})
	if !r.OK || len(r.Confinement) != 1 || !r.Confinement[0].Seccomp {
		t.Fatalf("the next command: %+v %+v", r.Error, r.Confinement)
	}
	if !warmIsWarm(r.Content) {
		t.Errorf("the next command did not run in a warm launcher:\n%s", r.Content)
	}
}

// Attack (client): a launcher waiting for the next command is stopped;
// the client gives up on the call after 1.5 s (and asks for a 1 s
// timeout).
// Expected: the call returns soon after the client gave up, as it does
// for a command that runs.
func TestEarlyEndStalledLauncherHonoursCancel(t *testing.T) {
	h, _ := warmOpen(t, nil)
	ctx := context.Background()
	if r := warmRun(t, h, ctx, engine.Narrowing{}, map[string]any{"command": "true"}); !r.OK {
		t.Fatalf("true: %+v", r.Error)
	}
	earlyEndStopWaiting(t)
	c, cancel := context.WithTimeout(ctx, 1500*time.Millisecond)
	defer cancel()
	begin := time.Now()
	r := warmRun(t, h, c, engine.Narrowing{}, map[string]any{"command": "true", "timeout_ms": 1000})
	t.Logf("%v: %+v", time.Since(begin), r.Error)
	if d := time.Since(begin); d > 4*time.Second {
		t.Errorf("the call returned %v after its start, the client gave up after 1.5 s", d)
	}
}

// Attack: none; toolhost call runs a tool other than run_command.
// Expected: it starts no launcher server and no launcher (they start at
// the first command), while toolhost call run_command does, and runs
// its command in a warm launcher.
func TestEarlyEndReadFileStartsNoLauncher(t *testing.T) {
	strace, err := exec.LookPath("strace")
	if err != nil {
		t.Skip("no strace to follow toolhost's children")
	}
	for _, c := range []struct {
		tool, args string
		launchers  bool
	}{
		{"read_file", `{"path":"f.txt"}`, false},
		{"run_command", `{"command":"echo init $(tr '\\0' ' ' < /proc/1/cmdline)"}`, true},
	} {
		cmd := warmCLI(t, c.args)
		if err := os.WriteFile(filepath.Join(cmd.Dir, "f.txt"), []byte("hi\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		trace := filepath.Join(t.TempDir(), "trace")
		cmd.Args = append([]string{strace, "-f", "-qq", "-e", "trace=execve", "-o", trace}, cmd.Args...)
		for i, a := range cmd.Args {
			if a == "run_command" {
				cmd.Args[i] = c.tool
			}
		}
		cmd.Path = strace
		out, err := cmd.Output()
		if err != nil {
			t.Fatalf("%s: %v\n%s", c.tool, err, out)
		}
		b, _ := os.ReadFile(trace)
		started := strings.Contains(string(b), warmServerArg) || strings.Contains(string(b), warmLauncherArg)
		if started != c.launchers {
			t.Errorf("toolhost call %s started launchers: %v, want %v\n%s", c.tool, started, c.launchers, b)
		}
		if c.launchers && !strings.Contains(string(out), warmLauncherArg) {
			t.Errorf("toolhost call %s: the command did not run in a warm launcher:\n%s", c.tool, out)
		}
	}
}

// Attack: none; a host is opened and warmed up for tools that run no
// command, then for run_command.
// Expected: no launcher server nor launcher runs until the warm-up of a
// tool that runs commands; then they do, and the first command runs in
// one of them, confined.
func TestEarlyEndLaunchersStartAtWarmUp(t *testing.T) {
	h, _ := warmOpen(t, nil)
	ctx := context.Background()
	launchers := func() map[int]string {
		out := warmDescendants(os.Getpid(), warmServerArg)
		for pid, c := range warmDescendants(os.Getpid(), warmLauncherArg) {
			out[pid] = c
		}
		return out
	}
	if _, err := h.WarmUp(ctx, []string{"read_file", "list_dir", "grep"}); err != nil {
		t.Fatal(err)
	}
	time.Sleep(time.Second)
	if l := launchers(); len(l) > 0 {
		t.Fatalf("launchers run before any warm-up of a tool that runs commands: %v", l)
	}
	if _, err := h.WarmUp(ctx, []string{"run_command"}); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for len(warmDescendants(os.Getpid(), warmLauncherArg)) == 0 {
		if time.Now().After(deadline) {
			t.Fatalf("no launcher waits after the warm-up of run_command: %v", launchers())
		}
		time.Sleep(50 * time.Millisecond)
	}
	r := warmRun(t, h, ctx, engine.Narrowing{}, map[string]any{"command": `echo "init $(tr '\0' ' ' < /proc/1/cmdline)"`})
	if !r.OK || len(r.Confinement) != 1 || !r.Confinement[0].Seccomp || !warmIsWarm(r.Content) {
		t.Errorf("the first command: %+v %+v\n%s", r.Error, r.Confinement, r.Content)
	}
}

// Attack (client): the host is closed while three calls run commands of
// 20 s.
// Expected: as Close says, the calls still running fail, and their
// commands end with Close: none runs 3 s after it returned.
func TestEarlyEndCloseEndsRunningCommands(t *testing.T) {
	h, _ := warmOpenUnclosed(t, nil)
	ctx := context.Background()
	var wg sync.WaitGroup
	for i := 0; i < 3; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			b := engine.Batch{Conversation: "c", Calls: []engine.Call{call("1", "run_command", jsonArgs(t, map[string]any{"command": "sleep 20.97"}))}}
			h.Process(ctx, b, host.BatchOptions{Approver: approveAll()})
		}()
	}
	deadline := time.Now().Add(15 * time.Second)
	for len(warmMatching("sleep 20.97")) < 3 && time.Now().Before(deadline) {
		time.Sleep(50 * time.Millisecond)
	}
	h.Close(ctx)
	if left := warmGone(warmMatching("sleep 20.97"), 3*time.Second); len(left) > 0 {
		t.Errorf("commands run 3 s after Close returned: %v", left)
	}
	wg.Wait()
}

// Attack (model): six commands at once, more than launchers wait, each
// leaving processes that race the launcher's last kill; then forty
// short commands one after another.
// Expected: when each call returns, nothing of its command runs; the
// host's goroutines come back to about their number before the calls
// (the removals of the commands' cgroups off the calls' path end).
func TestEarlyEndConcurrentCallsLeaveNothing(t *testing.T) {
	h, root := warmOpen(t, nil)
	bin := earlyEndHelper(t, root)
	ctx := context.Background()
	if r := warmRun(t, h, ctx, engine.Narrowing{}, map[string]any{"command": "true"}); !r.OK {
		t.Fatalf("true: %+v", r.Error)
	}
	time.Sleep(300 * time.Millisecond)
	before := runtime.NumGoroutine()
	var wg sync.WaitGroup
	for i := 0; i < 6; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			hop, cp := filepath.Join(root, "c"+strconv.Itoa(i)+"-hop.log"), filepath.Join(root, "c"+strconv.Itoa(i)+"-cparent.log")
			cmd := bin + " hop " + hop + " & " + bin + " cparent " + cp + " &\n" +
				`for i in $(seq 100); do [ -s ` + hop + ` ] && [ -s ` + cp + ` ] && break; sleep 0.05; done; echo "init $(tr '\0' ' ' < /proc/1/cmdline)"`
			r := warmRun(t, h, ctx, engine.Narrowing{}, map[string]any{"command": cmd, "timeout_ms": 20000})
			left := warmMatching(filepath.Join(root, "c"+strconv.Itoa(i)+"-"))
			if !r.OK {
				t.Errorf("command %d: %+v", i, r.Error)
			}
			if len(left) > 0 {
				t.Errorf("command %d: its processes run when its call returned: %v", i, left)
			}
			s := earlyEndSize(hop) + earlyEndSize(cp)
			if earlyEndSize(hop) == 0 || earlyEndSize(cp) == 0 {
				t.Errorf("command %d: its helpers did not run, the attack did not happen:\n%s", i, warmOutput(r))
			}
			time.Sleep(300 * time.Millisecond)
			if now := earlyEndSize(hop) + earlyEndSize(cp); now != s {
				t.Errorf("command %d: its files grew from %d to %d bytes after its call returned", i, s, now)
			}
			warmGone(left, 3*time.Second)
		}()
	}
	wg.Wait()
	for i := 0; i < 40; i++ {
		if r := warmRun(t, h, ctx, engine.Narrowing{}, map[string]any{"command": "sleep 31.99 & echo x"}); !r.OK {
			t.Fatalf("short command %d: %+v", i, r.Error)
		}
	}
	warmNoSurvivor(t, "sleep 31.99")
	deadline := time.Now().Add(8 * time.Second)
	n := runtime.NumGoroutine()
	for n > before+30 && time.Now().Before(deadline) {
		time.Sleep(100 * time.Millisecond)
		n = runtime.NumGoroutine()
	}
	if n > before+30 {
		t.Errorf("%d goroutines after the calls, %d before them", n, before)
	}
}
