//go:build linux

package confine

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// daemons start the ways a command leaves something behind ("Done when": setsid -f, nohup … &, a double fork), and wait until each
// has said it runs, so a case that finds none alive afterwards proves
// they were stopped, not that they never started.
const daemons = `setsid -f sh -c 'echo up > d1; exec sleep 1000'
nohup sh -c 'echo up > d2; exec sleep 1000' >/dev/null 2>&1 &
sh -c '(sh -c "echo up > d3; exec sleep 1000" &) &'
setsid -f sleep 1000
nohup sleep 1000 >/dev/null 2>&1 &
i=0; while { [ ! -e d1 ] || [ ! -e d2 ] || [ ! -e d3 ]; } && [ $i -lt 200 ]; do sleep 0.1; i=$((i+1)); done
`

// daemonsStarted fails the test unless every daemon wrote its file.
func daemonsStarted(t *testing.T, f *fixture, o *outcome) {
	t.Helper()
	for _, d := range []string{"d1", "d2", "d3"} {
		if !exists(filepath.Join(f.root, d)) {
			t.Fatalf("daemon %s never started, so the case proves nothing: %s", d, o)
		}
	}
}

// Nothing a command starts outlives the call, whether it
// returned, timed out or toolhost itself was killed with SIGKILL.
// fixture.verify checks that no process carrying the marker is alive
// once toolhost has ended.
func TestNothingOutlivesTheCall(t *testing.T) {
	t.Run("the call returns", func(t *testing.T) {
		t.Parallel()
		f := newFixture(t, world{})
		o := f.run(t, daemons+"echo "+probeEnd)
		ranToEnd(t, o)
		daemonsStarted(t, f, o)
	})
	t.Run("the call times out", func(t *testing.T) {
		t.Parallel()
		f := newFixture(t, world{config: "[tools.timeouts]\nshell_commands_seconds = 3\n"})
		o := f.run(t, daemons+"echo "+probeEnd+"; sleep 1000")
		daemonsStarted(t, f, o)
		if o.result.OK || o.took > time.Minute {
			t.Errorf("the call did not time out after 3 s: %s", o)
		}
	})
	t.Run("the call is cancelled", func(t *testing.T) {
		t.Parallel()
		f := newFixture(t, world{})
		c := f.start(t, daemons+"echo up > started; sleep 1000")
		if !waitFile(filepath.Join(f.root, "started"), time.Minute) {
			c.cmd.Process.Kill()
			t.Fatalf("the command never started: %s", c.wait(t))
		}
		// Ctrl-C: toolhost cancels the call and exits.
		if err := c.cmd.Process.Signal(syscall.SIGINT); err != nil {
			t.Fatal(err)
		}
		o := c.wait(t)
		daemonsStarted(t, f, o)
		if o.result.OK {
			t.Errorf("the cancelled call succeeded: %s", o)
		}
		f.verify(t, o)
	})
	t.Run("toolhost is killed", func(t *testing.T) {
		t.Parallel()
		f := newFixture(t, world{})
		c := f.start(t, daemons+"echo up > started; sleep 1000")
		if !waitFile(filepath.Join(f.root, "started"), time.Minute) {
			c.cmd.Process.Kill()
			t.Fatalf("the command never started: %s", c.wait(t))
		}
		if alive := marked(f.mark); len(alive) < 5 {
			t.Errorf("want the command's daemons alive before toolhost is killed, found %q", alive)
		}
		c.killed = true
		if err := c.cmd.Process.Signal(syscall.SIGKILL); err != nil {
			t.Fatal(err)
		}
		o := c.wait(t)
		daemonsStarted(t, f, o)
		if left := waitUnmarked(f.mark, 10*time.Second); len(left) > 0 {
			t.Errorf("10 s after toolhost was killed with SIGKILL, processes of its command are alive: %s", strings.Join(left, "; "))
		}
		f.verify(t, o)
	})
}

// "Done when": a fork burst is held to pids_max and
// leaves nothing behind. The burst is bounded (2000 sleeps of 30 s) even
// where the limit does not hold, and the fixture kills whatever carries
// its marker when the test ends. The shell counts the processes it
// started in a file, since it dies at the first fork refused.
func TestForkBurst(t *testing.T) {
	t.Parallel()
	const pidsMax = 64
	f := newFixture(t, world{config: "[tools.timeouts]\nshell_commands_seconds = 20\n[tools.run_command]\npids_max = 64\n"})
	// The shell first tries to leave its cgroup, as root inside its user
	// namespace, through every cgroup hierarchy it can see.
	c := f.start(t, `for p in /sys/fs/cgroup/cgroup.procs /sys/fs/cgroup/*/cgroup.procs /sys/fs/cgroup/*/*/cgroup.procs; do echo $$ 2>/dev/null > "$p"; done
i=0; while [ $i -lt 2000 ]; do sleep 30 & i=$((i+1)); echo $i > started; done; echo `+probeEnd+`; wait`)
	stop := watchCount(f.mark)
	o := c.wait(t)
	most := stop()
	f.verify(t, o)
	b, err := os.ReadFile(filepath.Join(f.root, "started"))
	if err != nil {
		t.Fatalf("the burst started nothing, so the case proves nothing: %v: %s", err, o)
	}
	started, _ := strconv.Atoi(strings.TrimSpace(string(b)))
	t.Logf("the burst started %d processes; at most %d were seen alive at once", started, most)
	if started > pidsMax || most > pidsMax {
		t.Errorf("the command started %d processes, %d seen alive at once, under pids_max = %d: %s", started, most, pidsMax, o)
	}
	if started < 10 {
		t.Errorf("the command started only %d processes: the burst did not run, so the case proves nothing: %s", started, o)
	}
}

// watchCount counts the processes carrying mark every 50 ms until the
// function it returns is called, which gives the most seen at once.
func watchCount(mark string) (stop func() int) {
	most := 0
	quit, done := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(done)
		for {
			most = max(most, len(marked(mark)))
			select {
			case <-quit:
				return
			case <-time.After(50 * time.Millisecond):
			}
		}
	}()
	return func() int {
		close(quit)
		<-done
		return most
	}
}

// "Done when": a memory hog is stopped by memory_max,
// and a file grows no larger than max_file_size.
func TestLimits(t *testing.T) {
	t.Run("memory hog", func(t *testing.T) {
		t.Parallel()
		f := newFixture(t, world{config: "[tools.run_command]\nmemory_max = \"64M\"\n"})
		o := f.run(t, `/usr/bin/python3 -c 'print("PROBE-RAN", flush=True); b = bytearray(b"x") * (512 << 20); print("ALLOCATED", len(b))'; echo `+probeEnd)
		ranToEnd(t, o)
		if !strings.Contains(o.output, "PROBE-RAN") {
			t.Fatalf("python3 never ran, so the case proves nothing: %s", o)
		}
		// bash names the killed command, print("ALLOCATED", ...) included.
		if strings.Contains(o.output, "ALLOCATED 536870912") {
			t.Errorf("a command allocated and touched 512 MiB under memory_max = 64M: %s", o)
		}
	})
	t.Run("file size", func(t *testing.T) {
		t.Parallel()
		f := newFixture(t, world{config: "[tools.run_command]\nmax_file_size = \"1M\"\n"})
		o := f.run(t, `head -c 4000000 /dev/zero > big.bin; echo `+probeEnd)
		ranToEnd(t, o)
		fi, err := os.Stat(filepath.Join(f.root, "big.bin"))
		if err != nil {
			t.Fatalf("big.bin: %v: %s", err, o)
		}
		if fi.Size() > 1<<20 {
			t.Errorf("big.bin grew to %d bytes under max_file_size = 1M: %s", fi.Size(), o)
		}
	})
}
