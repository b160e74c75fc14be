//go:build linux

package confine

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/toolhost/toolhost/host/internal/proc"
)

// These tests run commands in launchers started ahead of need, through
// proc.Run as run_command does: the test binary is the launcher server
// and the warm launcher too (TestMain).

// testPool is a warm pool of the test binary, closed at the test's end.
func testPool(t *testing.T, newNet bool) *warmPool {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	p := newWarmPool(exe, slog.New(slog.DiscardHandler))
	p.enable("")
	p.warm(newNet)
	t.Cleanup(p.close)
	return p
}

// takeWarm waits, at most 10 s, for a warm launcher.
func takeWarm(t *testing.T, p *warmPool, newNet bool) *warmLauncher {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		if w := p.take(newNet); w != nil {
			return w
		}
		if time.Now().After(deadline) {
			t.Fatalf("no warm launcher within 10 s: %+v", p.status())
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// runWarm runs command under policy through proc.Run with the warm
// launcher w (nil: the cold path), bounded by timeout.
func runWarm(t *testing.T, pol *Policy, w *warmLauncher, cg *Cgroup, command string, timeout time.Duration) (proc.Result, *Launch, error) {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	l := NewLaunch(pol, exe, cg)
	l.warm = w
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	res, err := proc.Run(ctx, proc.Spec{Command: command, Dir: pol.Dir, Launcher: l, Logger: slog.New(slog.DiscardHandler)})
	return res, l, err
}

// A warm launcher runs the command confined as a cold one does: its
// output, exit status and death by signal come back, and the launcher
// confined itself (no_new_privs, seccomp, Landlock).
func TestWarmRunsCommands(t *testing.T) {
	pool := testPool(t, true)
	work := canonicalTempDir(t)
	for _, tc := range []struct {
		command        string
		stdout, stderr string
		code           int
		signal         string
	}{
		{command: "echo out; echo err >&2", stdout: "out\n", stderr: "err\n"},
		{command: "exit 3", code: 3},
		{command: "kill -TERM $$", code: -1, signal: "terminated"},
		{command: "pwd; echo $HOME", stdout: work + "\n" + work + "\n"},
	} {
		t.Run(tc.command, func(t *testing.T) {
			w := takeWarm(t, pool, true)
			// The host holds the launcher's mount namespace, so that the
			// launcher's exit does not wait for its mounts' teardown.
			if w.mntns < 0 {
				t.Error("the warm launcher did not hand over its mount namespace")
			}
			res, l, err := runWarm(t, testPolicy(t, work), w, nil, tc.command, 20*time.Second)
			if err != nil {
				t.Fatalf("Run: %v (stderr %q)", err, res.Stderr)
			}
			if !l.Prestarted() {
				t.Fatal("the command did not run in the warm launcher")
			}
			if string(res.Stdout) != tc.stdout || string(res.Stderr) != tc.stderr || res.ExitCode != tc.code || res.Signal != tc.signal {
				t.Errorf("got stdout %q stderr %q exit %d signal %q; want %q %q %d %q", res.Stdout, res.Stderr, res.ExitCode, res.Signal, tc.stdout, tc.stderr, tc.code, tc.signal)
			}
			a := l.Applied()
			if !a.NoNewPrivs || !a.Seccomp || a.LandlockABI == 0 {
				t.Errorf("applied = %+v; want no_new_privs, seccomp and Landlock", a)
			}
		})
	}
}

// A warm launcher gives the command the network namespace it was made
// for: a new one for every mode but on, the host's for on. The pool
// keeps the two apart.
func TestWarmNetworkNamespace(t *testing.T) {
	hostNet, err := os.Readlink("/proc/self/ns/net")
	if err != nil {
		t.Skipf("cannot read this process's network namespace: %v", err)
	}
	work := canonicalTempDir(t)
	for _, tc := range []struct {
		network Network
		newNet  bool
	}{{NetworkOff, true}, {NetworkOn, false}} {
		t.Run(string(tc.network), func(t *testing.T) {
			pool := testPool(t, tc.newNet)
			pol := testPolicy(t, work)
			pol.Network = tc.network
			res, l, err := runWarm(t, pol, takeWarm(t, pool, tc.newNet), nil, "readlink /proc/self/ns/net", 20*time.Second)
			if err != nil || !l.Prestarted() {
				t.Fatalf("Run: %v, prestarted %v (stderr %q)", err, l.Prestarted(), res.Stderr)
			}
			got := strings.TrimSpace(string(res.Stdout))
			if (got == hostNet) == tc.newNet {
				t.Errorf("network %s: the command's namespace %s, the host's %s", tc.network, got, hostNet)
			}
		})
	}
}

// A command in a warm launcher that outlives its call's deadline is
// killed with everything it started, background children included.
func TestWarmDeadlineKillsAll(t *testing.T) {
	pool := testPool(t, true)
	work := canonicalTempDir(t)
	marker := uniqueSleep()
	start := time.Now()
	_, l, err := runWarm(t, testPolicy(t, work), takeWarm(t, pool, true), nil, "sleep "+marker+" & sleep "+marker, 500*time.Millisecond)
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Run = %v; want the deadline", err)
	}
	if !l.Prestarted() {
		t.Fatal("the command did not run in the warm launcher")
	}
	if d := time.Since(start); d > 10*time.Second {
		t.Errorf("Run returned after %v", d)
	}
	waitFor(t, func() bool { return len(processesWith(marker)) == 0 }, "the command's processes to die")
}

// A warm launcher that died waiting costs the command nothing but its
// speed: it runs in a launcher started for it, confined.
func TestWarmDeadLauncherFallsBack(t *testing.T) {
	pool := testPool(t, true)
	work := canonicalTempDir(t)
	w := takeWarm(t, pool, true)
	w.kill()
	waitFor(t, func() bool { return !processAlive(w.pid) }, "the warm launcher to die")
	res, l, err := runWarm(t, testPolicy(t, work), w, nil, "echo cold", 20*time.Second)
	if err != nil {
		t.Fatalf("Run: %v (stderr %q)", err, res.Stderr)
	}
	if l.Prestarted() {
		t.Error("the command ran in a dead warm launcher")
	}
	if string(res.Stdout) != "cold\n" || !l.Applied().Seccomp {
		t.Errorf("stdout %q applied %+v; want cold, confined", res.Stdout, l.Applied())
	}
}

// A warm launcher's cgroup becomes the command's: the command runs in it
// and its limits, and it is gone with the command.
func TestWarmCgroupTakenOver(t *testing.T) {
	pool := testPool(t, true)
	w := takeWarm(t, pool, true)
	if w.cgroupDir == "" {
		w.discard()
		t.Skip("no writable cgroup v2 hierarchy here: the warm launcher has no cgroup of its own")
	}
	cg, err := newCgroupIn("warm-test-"+strconv.Itoa(os.Getpid()), Limits{Pids: 64}, w.v2Cgroup())
	if err != nil {
		w.discard()
		t.Skipf("no cgroup here: %v", err)
	}
	w.adopt()
	work := canonicalTempDir(t)
	res, l, err := runWarm(t, testPolicy(t, work), w, cg, "cat /proc/self/cgroup", 20*time.Second)
	if err != nil || !l.Prestarted() {
		t.Fatalf("Run: %v, prestarted %v (stderr %q)", err, l.Prestarted(), res.Stderr)
	}
	rel := strings.TrimPrefix(w.cgroupDir, findCgroups(mustMountinfo(t)).unified)
	if !bytes.Contains(res.Stdout, []byte("0::"+rel+"\n")) {
		t.Errorf("the command's cgroups:\n%s\nwant 0::%s", res.Stdout, rel)
	}
	if err := cg.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(w.cgroupDir); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the cgroup %s is left after Close: %v", w.cgroupDir, err)
	}
}

// A launcher waits in a cgroup with the commands' limits set already:
// the command runs in it, under them, and a launcher discarded
// without a command leaves no cgroup directory behind, in any hierarchy.
func TestWarmCgroupPreset(t *testing.T) {
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	limits := Limits{Pids: 40}
	probe, err := NewCgroup("preset-probe-"+strconv.Itoa(os.Getpid()), limits)
	if err != nil {
		t.Skipf("no cgroup with a pids limit can be made here: %v", err)
	}
	probe.Close()
	pool := newWarmPool(exe, slog.New(slog.DiscardHandler))
	pool.limitCgroups(limits)
	pool.enable("")
	pool.warm(true)
	t.Cleanup(pool.close)
	w := takeWarm(t, pool, true)
	cg := w.presetFor(limits)
	if cg == nil {
		w.discard()
		t.Fatal("the launcher waits without a cgroup with the commands' limits")
	}
	if w.presetFor(Limits{Pids: 41}) != nil {
		t.Error("a launcher's cgroup was offered for other limits than its own")
	}
	var dirs []string
	for _, d := range cg.dirs {
		dirs = append(dirs, d.path)
	}
	w.adopt()
	work := canonicalTempDir(t)
	res, l, err := runWarm(t, testPolicy(t, work), w, cg, "cat /proc/self/cgroup", 20*time.Second)
	if err != nil || !l.Prestarted() {
		t.Fatalf("Run: %v, prestarted %v (stderr %q)", err, l.Prestarted(), res.Stderr)
	}
	// The command ran in each directory of the cgroup, whose pids.max
	// holds the limit.
	lay := findCgroups(mustMountinfo(t))
	limited := false
	for _, d := range cg.dirs {
		own := lay.pids
		if d.v2 {
			own = lay.unified
		}
		if rel := strings.TrimPrefix(d.path, own); !bytes.Contains(res.Stdout, []byte(":"+rel+"\n")) {
			t.Errorf("the command's cgroups:\n%s\nwant one of %s", res.Stdout, rel)
		}
		if b, err := os.ReadFile(filepath.Join(d.path, "pids.max")); err == nil {
			limited = true
			if got := strings.TrimSpace(string(b)); got != "40" {
				t.Errorf("%s/pids.max = %q, want 40", d.path, got)
			}
		}
	}
	if !limited {
		t.Errorf("no directory of the cgroup has pids.max: %v", dirs)
	}
	if err := cg.Close(); err != nil {
		t.Fatal(err)
	}
	for _, d := range dirs {
		if _, err := os.Stat(d); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("the cgroup %s is left after Close: %v", d, err)
		}
	}
	// A launcher discarded unused takes its directories with it.
	w = takeWarm(t, pool, true)
	cg = w.presetFor(limits)
	if cg == nil {
		t.Fatal("the second launcher has no preset cgroup")
	}
	dirs = dirs[:0]
	for _, d := range cg.dirs {
		dirs = append(dirs, d.path)
	}
	w.discard()
	for _, d := range dirs {
		waitFor(t, func() bool {
			_, err := os.Stat(d)
			return errors.Is(err, os.ErrNotExist)
		}, "the discarded launcher's cgroup "+d+" to go")
	}
}

// Closing the pool ends its server and every launcher still waiting, and
// removes their cgroups.
func TestWarmPoolCloseEndsAll(t *testing.T) {
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	pool := newWarmPool(exe, slog.New(slog.DiscardHandler))
	pool.enable("")
	pool.warm(true)
	waitFor(t, func() bool { return pool.status().WaitingNewNetwork >= warmDepth-1 }, "the pool to fill")
	server := pool.status().ServerPid
	if server == 0 {
		t.Fatalf("no server: %+v", pool.status())
	}
	// One launcher waits in the pool, the other is held by the refill
	// once started.
	waitFor(t, func() bool { return len(childrenOf(server)) >= warmDepth }, fmt.Sprintf("%d warm launchers", warmDepth))
	waiting := childrenOf(server)
	// The launchers' cgroups, where there is a v2 hierarchy.
	var dirs []string
	if own := findCgroups(mustMountinfo(t)).unified; own != "" {
		dirs, _ = filepath.Glob(filepath.Join(own, "toolhost-"+strconv.Itoa(os.Getpid()), "warm-*"))
	}
	pool.close()
	waitFor(t, func() bool { return !processAlive(server) }, "the server to exit")
	for _, pid := range waiting {
		waitFor(t, func() bool { return !processAlive(pid) }, fmt.Sprintf("warm launcher %d to exit", pid))
	}
	for _, d := range dirs {
		if _, err := os.Stat(d); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("the cgroup %s is left after close: %v", d, err)
		}
	}
	if w := pool.take(true); w != nil {
		t.Error("a closed pool handed out a launcher")
	}
}

// childrenOf lists the live children of pid.
func childrenOf(pid int) []int {
	names, _ := filepath.Glob("/proc/[0-9]*/stat")
	var out []int
	for _, name := range names {
		b, err := os.ReadFile(name)
		if err != nil {
			continue
		}
		i := bytes.LastIndexByte(b, ')')
		f := strings.Fields(string(b[i+1:]))
		if len(f) > 1 && f[0] != "Z" && f[1] == strconv.Itoa(pid) {
			c, _ := strconv.Atoi(filepath.Base(filepath.Dir(name)))
			out = append(out, c)
		}
	}
	return out
}

// processAlive reports whether pid is a live process, not a zombie.
func processAlive(pid int) bool {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return false
	}
	i := bytes.LastIndexByte(b, ')')
	return i > 0 && len(b) > i+2 && b[i+2] != 'Z'
}

func mustMountinfo(t *testing.T) []mountEntry {
	t.Helper()
	m, err := readMountinfo()
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// An enabled pool starts nothing until it is warmed or a command takes a
// launcher: the first take waits for the launcher it starts rather than
// fall back to the cold path.
func TestWarmPoolStartsAtFirstTake(t *testing.T) {
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	var logged bytes.Buffer
	pool := newWarmPool(exe, slog.New(slog.NewTextHandler(&logged, nil)))
	t.Cleanup(pool.close)
	pool.enable("")
	time.Sleep(100 * time.Millisecond)
	if st := pool.status(); st.ServerPid != 0 || st.WaitingNewNetwork+st.WaitingHostNetwork != 0 {
		t.Fatalf("an enabled pool no command took from started launchers: %+v", st)
	}
	// The test binary's start-up is well under warmWait here; a take
	// under a loaded machine may still miss it, so a few are tried.
	var w *warmLauncher
	for i := 0; i < 5 && w == nil; i++ {
		w = pool.take(true)
	}
	if w == nil {
		t.Fatalf("no take waited for the launcher the first started: %+v\n%s", pool.status(), logged.String())
	}
	w.discard()
	if strings.Contains(logged.String(), "level=WARN") {
		t.Errorf("the pool warned:\n%s", logged.String())
	}
}

// A pool closed while it starts launchers does not warn that it cannot
// start them (the close, not a fault, cut the start short), and leaves
// no cgroup of a launcher it was starting.
func TestWarmPoolClosedWhileStartingIsQuiet(t *testing.T) {
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	for i, wait := range []time.Duration{0, time.Millisecond, 3 * time.Millisecond, 10 * time.Millisecond, 30 * time.Millisecond} {
		var logged bytes.Buffer
		pool := newWarmPool(exe, slog.New(slog.NewTextHandler(&logged, nil)))
		pool.enable("")
		pool.warm(i%2 == 0)
		time.Sleep(wait)
		pool.close()
		if strings.Contains(logged.String(), "level=WARN") {
			t.Errorf("closed %v after the warm: the pool warned:\n%s", wait, logged.String())
		}
		if own := findCgroups(mustMountinfo(t)).unified; own != "" {
			left, _ := filepath.Glob(filepath.Join(own, "toolhost-"+strconv.Itoa(os.Getpid()), "warm-"+pool.id+"-*"))
			if len(left) > 0 {
				t.Errorf("closed %v after the warm: cgroups left: %v", wait, left)
			}
		}
	}
}

// A warm launcher that neither takes its command nor ends (stopped here)
// is killed once a cold launcher's start would have timed out; having
// exited without an answer, it never took the command, which then runs
// once, the cold way. A call given up on before then ends at once and
// runs nothing.
func TestWarmUnansweringLauncher(t *testing.T) {
	for _, tc := range []struct {
		name    string
		timeout time.Duration
		ran     string // ran.txt's content after the call
	}{
		{"runs once, cold", 30 * time.Second, "ran\n"},
		{"a call given up on runs nothing", 1500 * time.Millisecond, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			pool := testPool(t, true)
			work := canonicalTempDir(t)
			w := takeWarm(t, pool, true)
			if err := unix.Kill(w.pid, unix.SIGSTOP); err != nil {
				t.Fatal(err)
			}
			began := time.Now()
			res, l, err := runWarm(t, testPolicy(t, work), w, nil, "echo ran >> ran.txt", tc.timeout)
			took := time.Since(began)
			b, _ := os.ReadFile(filepath.Join(work, "ran.txt"))
			if string(b) != tc.ran {
				t.Errorf("ran.txt = %q, want %q (Run: %v, stderr %q)", b, tc.ran, err, res.Stderr)
			}
			if l.Prestarted() {
				t.Error("a launcher that did not answer counts as the command's")
			}
			if tc.ran == "" {
				if err == nil {
					t.Error("Run of a call given up on returned no error")
				}
				if took > tc.timeout+2*time.Second {
					t.Errorf("the call given up on after %v returned after %v", tc.timeout, took)
				}
			} else if took < startTimeout {
				t.Errorf("the launcher was given up on after %v, before startTimeout (%v)", took, startTimeout)
			}
			waitFor(t, func() bool { return !processAlive(w.pid) }, "the stopped launcher to be killed")
		})
	}
}

// The pool starts the next launcher once the commands taken from it have
// ended, so that its start-up does not take a core from them; a command
// that finds the pool empty has it started at once.
func TestWarmRefillWaitsForCommands(t *testing.T) {
	pool := testPool(t, true)
	started := func() uint64 { return pool.seq.Load() }
	waitFor(t, func() bool { return started() == warmDepth && pool.status().WaitingNewNetwork == warmDepth-1 }, "the pool to fill")
	w1 := takeWarm(t, pool, true)
	time.Sleep(refillDelay / 2)
	if n := started(); n != warmDepth {
		t.Errorf("%d launchers started while a taken one's command runs, want %d", n, warmDepth)
	}
	w1.discard()
	waitFor(t, func() bool { return started() == warmDepth+1 }, "a launcher to be started once the command ended")
	// Two takes in a row: the second finds the pool empty while the
	// first's command runs, and has the next launcher started for it.
	waitFor(t, func() bool { return pool.status().WaitingNewNetwork == warmDepth-1 }, "the pool to fill again")
	w2 := takeWarm(t, pool, true)
	defer w2.discard()
	w3 := takeWarm(t, pool, true)
	defer w3.discard()
	if w2 == w3 {
		t.Fatal("one launcher was handed out twice")
	}
}

// A command run from a warm launcher through the Confiner, as the host
// runs it, ends with everything it started: when proc.Run returns,
// nothing it left behind still runs, though the launcher reports the end
// before its own exit; and once the Confiner is closed, the call's cgroup
// (removed off the call's path, after the launcher's exit) is gone.
func TestWarmEndLeavesNothing(t *testing.T) {
	work := canonicalTempDir(t)
	c, s := testConfiner(t, work, Limits{OpenFiles: 1024, FileSizeBytes: 1 << 30, MemoryBytes: 1 << 30, Pids: 64})
	c.PoolLaunchers("")
	c.Warm()
	defer c.Close()
	var cgroups []string
	for i := range 3 {
		marker := fmt.Sprintf("%d.%d", 40+i, os.Getpid()%1000)
		r, err := c.Prepare(context.Background(), Call{ID: fmt.Sprintf("call_%d", i), Roots: []string{work}, Dir: work, Environ: s.Environ})
		if err != nil {
			t.Fatal(err)
		}
		if r.cgroup != nil {
			for _, d := range r.cgroup.dirs {
				cgroups = append(cgroups, d.path)
			}
		}
		// An orphan in a session of its own, and one that keeps the
		// output open: both die with the command.
		command := "setsid sleep " + marker + " >/dev/null 2>&1 & sleep " + marker + " >/dev/null 2>&1 & echo done"
		res, err := proc.Run(context.Background(), proc.Spec{Command: command, Dir: work, Launcher: r.Launch(), Logger: slog.New(slog.DiscardHandler)})
		left := warmSleepers(marker)
		r.Close()
		if err != nil {
			t.Fatalf("Run: %v (stderr %q)", err, res.Stderr)
		}
		if string(res.Stdout) != "done\n" || res.ExitCode != 0 {
			t.Errorf("stdout %q exit %d, want done, 0", res.Stdout, res.ExitCode)
		}
		if len(left) > 0 {
			t.Errorf("call %d: processes of the command still ran when Run returned: %v", i, left)
		}
		if i > 0 && !r.Launch().Prestarted() {
			t.Logf("call %d took the cold path", i)
		}
	}
	c.Close()
	for _, d := range cgroups {
		if _, err := os.Stat(d); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("the cgroup %s is left after the Confiner closed: %v", d, err)
		}
	}
}

// warmSleepers lists the processes running "sleep marker".
func warmSleepers(marker string) []int {
	names, _ := filepath.Glob("/proc/[0-9]*/cmdline")
	var out []int
	for _, name := range names {
		b, err := os.ReadFile(name)
		if err != nil || string(bytes.TrimRight(b, "\x00")) != "sleep\x00"+marker {
			continue
		}
		pid, _ := strconv.Atoi(filepath.Base(filepath.Dir(name)))
		out = append(out, pid)
	}
	return out
}

// Closing the Confiner kills the commands still running, from warm
// launchers and cold ones alike: the host's calls still running fail,
// and nothing of theirs outlives it.
func TestConfinerCloseEndsRunningCommands(t *testing.T) {
	for _, warm := range []bool{true, false} {
		t.Run(fmt.Sprintf("warm=%v", warm), func(t *testing.T) {
			work := canonicalTempDir(t)
			c, s := testConfiner(t, work, Limits{OpenFiles: 1024, FileSizeBytes: 1 << 30})
			if warm {
				c.PoolLaunchers("")
				warmUp(t, c)
			}
			r, err := c.Prepare(context.Background(), Call{ID: "call_1", Roots: []string{work}, Dir: work, Environ: s.Environ})
			if err != nil {
				t.Fatal(err)
			}
			defer r.Close()
			marker := fmt.Sprintf("30.%d", os.Getpid()%1000)
			done := make(chan proc.Result, 1)
			go func() {
				res, _ := proc.Run(context.Background(), proc.Spec{Command: "echo started; sleep " + marker, Dir: work, Launcher: r.Launch(), Logger: slog.New(slog.DiscardHandler)})
				done <- res
			}()
			waitFor(t, func() bool { return len(warmSleepers(marker)) > 0 }, "the command to start")
			c.Close()
			select {
			case res := <-done:
				if res.ExitCode != -1 || !strings.Contains(string(res.Stdout), "started") {
					t.Errorf("the command ended with %d %q, output %q; want killed", res.ExitCode, res.Signal, res.Stdout)
				}
			case <-time.After(10 * time.Second):
				t.Fatal("the command still ran 10 s after the Confiner closed")
			}
			if got := r.Launch().Prestarted(); got != warm {
				t.Errorf("prestarted = %v, want %v", got, warm)
			}
		})
	}
}

// testConfiner is a Confiner of the test binary (TestMain runs it as the
// launcher) for commands in work with limits, skipping the test where
// commands cannot be confined; the caller closes it.
func testConfiner(t *testing.T, work string, limits Limits) (*Confiner, Settings) {
	t.Helper()
	support := Probe(context.Background())
	if err := support.Require(ModeWorkspaceWrite, NetworkOff); err != nil {
		t.Skipf("commands cannot be confined here: %v", err)
	}
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	s := Settings{Mode: ModeWorkspaceWrite, Network: NetworkOff, StateDir: t.TempDir(), Home: work,
		Path: "/usr/bin:/bin", Environ: []string{"PATH=/usr/bin:/bin", "HOME=" + work}, Limits: limits}
	return NewConfiner(s, support, exe, slog.New(slog.DiscardHandler)), s
}

// A command's private tmp, a mount point in its warm launcher's
// namespace until the launcher is gone, is removed after the call,
// once the launcher has exited, and at the latest when the Confiner
// closes, as is the record of its check; a cold launcher's go with the
// call.
func TestRunCloseRemovesTmp(t *testing.T) {
	for _, warm := range []bool{true, false} {
		t.Run(fmt.Sprintf("warm=%v", warm), func(t *testing.T) {
			work := canonicalTempDir(t)
			c, s := testConfiner(t, work, Limits{OpenFiles: 1024, FileSizeBytes: 1 << 30})
			if warm {
				c.PoolLaunchers("")
				warmUp(t, c)
			}
			var tmps []string
			for i := range 3 {
				r, err := c.Prepare(context.Background(), Call{ID: fmt.Sprintf("call_%d", i), Roots: []string{work}, Dir: work, Environ: s.Environ})
				if err != nil {
					t.Fatal(err)
				}
				res, err := proc.Run(context.Background(), proc.Spec{Command: "echo kept > /tmp/f && cat /tmp/f", Dir: work, Launcher: r.Launch(), Logger: slog.New(slog.DiscardHandler)})
				if err != nil || string(res.Stdout) != "kept\n" {
					t.Fatalf("Run: %v, stdout %q, stderr %q", err, res.Stdout, res.Stderr)
				}
				if got := r.Launch().Prestarted(); got != warm {
					t.Errorf("prestarted = %v, want %v", got, warm)
				}
				tmp := r.TmpDir()
				if _, err := os.Stat(filepath.Join(tmp, "f")); err != nil {
					t.Fatalf("the command's file is not in its tmp %s: %v", tmp, err)
				}
				r.Close()
				if !warm {
					if _, err := os.Stat(tmp); !errors.Is(err, os.ErrNotExist) {
						t.Errorf("the tmp %s of a cold launcher's command is left after Close: %v", tmp, err)
					}
					if left, _ := os.ReadDir(checkBase(s.StateDir)); len(left) != 0 {
						t.Errorf("the check's record of a cold launcher's command is left after Close: %v", left)
					}
				}
				tmps = append(tmps, tmp)
			}
			// The first launcher has long exited.
			waitFor(t, func() bool {
				_, err := os.Stat(tmps[0])
				return errors.Is(err, os.ErrNotExist)
			}, "the first call's tmp to go")
			c.Close()
			for _, tmp := range tmps {
				if _, err := os.Stat(tmp); !errors.Is(err, os.ErrNotExist) {
					t.Errorf("the tmp %s is left after the Confiner closed: %v", tmp, err)
				}
			}
			if left, _ := os.ReadDir(checkBase(s.StateDir)); len(left) != 0 {
				t.Errorf("the checks' records are left after the Confiner closed: %v", left)
			}
		})
	}
}

// A call that fails before its command starts (its report or stdin
// cannot be made) closes its Run unspawned: the warm launcher it took is
// released with it, its descriptors and mount namespace closed, rather
// than held until the host ends.
func TestRunClosedUnspawnedReleasesWarmLauncher(t *testing.T) {
	work := canonicalTempDir(t)
	c, s := testConfiner(t, work, Limits{Pids: 64, OpenFiles: 1024, FileSizeBytes: 1 << 30})
	defer c.Close()
	c.PoolLaunchers("")
	for i := range 3 {
		warmUp(t, c)
		r, err := c.Prepare(context.Background(), Call{ID: fmt.Sprintf("unspawned_%d", i), Roots: []string{work}, Dir: work, Environ: s.Environ})
		if err != nil {
			t.Fatal(err)
		}
		w := r.launch.warm
		if w == nil {
			t.Fatalf("call %d took no warm launcher", i)
		}
		r.Close()
		select {
		case <-w.ended:
		case <-time.After(10 * time.Second):
			t.Fatalf("the warm launcher (pid %d) of a Run closed before its command started was not released 10 s later", w.pid)
		}
		if w.sock >= 0 || w.pidfd >= 0 || w.mntns >= 0 {
			t.Errorf("the released launcher holds socket %d, pidfd %d, mount namespace %d", w.sock, w.pidfd, w.mntns)
		}
	}
	c.pool.mu.Lock()
	running := len(c.pool.running)
	c.pool.mu.Unlock()
	if running != 0 {
		t.Errorf("the pool counts %d launchers running after their Runs closed", running)
	}
}

// A launcher whose cgroup was made for other limits than the command's
// gives it up: the command's cgroup has the command's limits, and
// nothing of the launcher's is left once the call and the Confiner
// close.
func TestWarmCgroupPresetOtherLimits(t *testing.T) {
	work := canonicalTempDir(t)
	call := Limits{Pids: 64, OpenFiles: 1024, FileSizeBytes: 1 << 30}
	probe, err := NewCgroup("preset-probe-"+strconv.Itoa(os.Getpid()), call)
	if err != nil {
		t.Skipf("no cgroup with a pids limit can be made here: %v", err)
	}
	probe.Close()
	c, s := testConfiner(t, work, call)
	c.PoolLaunchers("")
	c.pool.limitCgroups(c.cgroupLimits(limits(Limits{Pids: 32})))
	warmUp(t, c)
	r, err := c.Prepare(context.Background(), Call{ID: "other_limits", Roots: []string{work}, Dir: work, Environ: s.Environ})
	if err != nil {
		t.Fatal(err)
	}
	if r.launch.warm == nil {
		r.Close()
		c.Close()
		t.Fatal("the call took no warm launcher")
	}
	limited := false
	for _, d := range r.cgroup.dirs {
		if b, err := os.ReadFile(filepath.Join(d.path, "pids.max")); err == nil {
			limited = true
			if got := strings.TrimSpace(string(b)); got != "64" {
				t.Errorf("%s/pids.max = %q, want the call's 64", d.path, got)
			}
		}
	}
	if !limited {
		t.Error("the command's cgroup has no pids.max")
	}
	r.Close()
	c.Close()
	own := findCgroups(mustMountinfo(t))
	for _, h := range []string{own.unified, own.memory, own.pids} {
		if h == "" {
			continue
		}
		if left, _ := filepath.Glob(filepath.Join(h, "toolhost-"+strconv.Itoa(os.Getpid()), "warm-*")); len(left) > 0 {
			t.Errorf("cgroups of launchers left after the Confiner closed: %v", left)
		}
	}
}

// warmUp has c, whose launchers PoolLaunchers pools, start them and
// waits until one waits: a command that finds the pool still starting
// goes the cold way, and the caller's must take a warm launcher.
func warmUp(t *testing.T, c *Confiner) {
	t.Helper()
	c.Warm()
	waitFor(t, func() bool {
		st := c.pool.status()
		return st.WaitingNewNetwork+st.WaitingHostNetwork > 0
	}, "a warm launcher")
}
