package jobs

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/toolhost/toolhost/abi"
	"github.com/toolhost/toolhost/host/internal/journal"
	"github.com/toolhost/toolhost/host/internal/proc"
)

const tick = `while :; do echo tick; sleep 0.05; done`

func newManager(t *testing.T, opts Options) *Manager {
	t.Helper()
	m, err := New(opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { m.Close() })
	return m
}

func command(t *testing.T, script string) Command {
	return Command{Spec: proc.Spec{Command: script, Dir: t.TempDir(), Env: []string{"PATH=" + os.Getenv("PATH")}}}
}

func start(t *testing.T, m *Manager, conv, script string) string {
	t.Helper()
	id, err := m.Start(context.Background(), conv, command(t, script))
	if err != nil {
		t.Fatalf("Start(%q): %v", script, err)
	}
	if !strings.HasPrefix(id, "job-") || len(id) != len("job-")+24 {
		t.Fatalf("id %q is not job- and 96 random bits", id)
	}
	return id
}

func output(t *testing.T, m *Manager, conv string, req abi.JobRequest) abi.JobOutput {
	t.Helper()
	req.Op = abi.JobOutputOp
	res, err := m.Do(context.Background(), conv, req)
	if err != nil {
		t.Fatalf("output %+v: %v", req, err)
	}
	return *res.Job
}

func at(n int64) *int64 { return &n }

func pidOf(t *testing.T, m *Manager, id string) int {
	t.Helper()
	j, err := m.lookup("c", id)
	if err != nil {
		t.Fatal(err)
	}
	j.mu.Lock()
	defer j.mu.Unlock()
	return j.pid
}

func alive(pid int) bool { return syscall.Kill(pid, 0) == nil && !isZombie(pid) }

func isZombie(pid int) bool {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return false
	}
	i := strings.LastIndexByte(string(b), ')')
	return i > 0 && i+2 < len(b) && b[i+2] == 'Z'
}

// Output is read from a byte offset; without one it continues where the
// conversation's last read stopped; wait_ms waits for more.
func TestOutputOffsets(t *testing.T) {
	m := newManager(t, Options{})
	id := start(t, m, "c", tick)
	first := output(t, m, "c", abi.JobRequest{ID: id, WaitMS: 5000})
	if first.FromByte != 0 || first.NextByte == 0 || !strings.HasPrefix(first.Output, "tick\n") || !first.Running {
		t.Fatalf("first read = %+v", first)
	}
	next := output(t, m, "c", abi.JobRequest{ID: id, WaitMS: 5000})
	if next.FromByte != first.NextByte || next.NextByte <= next.FromByte {
		t.Errorf("continued read from %d to %d; want from %d onwards", next.FromByte, next.NextByte, first.NextByte)
	}
	again := output(t, m, "c", abi.JobRequest{ID: id, SinceByte: at(1), MaxBytes: 3})
	if again.Output != "ick" || again.FromByte != 1 || again.NextByte != 4 {
		t.Errorf("since_byte 1, max_bytes 3 = %q from %d to %d", again.Output, again.FromByte, again.NextByte)
	}
	// The default continues after the explicit read.
	if cont := output(t, m, "c", abi.JobRequest{ID: id, MaxBytes: 5}); cont.FromByte != 4 || cont.Output != "\ntick" {
		t.Errorf("continuation after since_byte read = %q from %d", cont.Output, cont.FromByte)
	}
}

// wait_ms returns as soon as there is output past since_byte or the job
// ended, and no later than asked when nothing comes.
func TestOutputWait(t *testing.T) {
	m := newManager(t, Options{})
	id := start(t, m, "c", `sleep 0.3; echo late; sleep 30`)
	began := time.Now()
	got := output(t, m, "c", abi.JobRequest{ID: id, WaitMS: 10000})
	if got.Output != "late\n" {
		t.Errorf("waited read = %+v", got)
	}
	if d := time.Since(began); d > 5*time.Second {
		t.Errorf("the wait took %v: it did not return when output came", d)
	}
	began = time.Now()
	got = output(t, m, "c", abi.JobRequest{ID: id, WaitMS: 200})
	if d := time.Since(began); got.Output != "" || d < 150*time.Millisecond || d > 3*time.Second {
		t.Errorf("wait with nothing new returned %q after %v; want nothing after about 200ms", got.Output, d)
	}
	quick := start(t, m, "c", `sleep 0.2; exit 3`)
	got = output(t, m, "c", abi.JobRequest{ID: quick, WaitMS: 10000})
	if got.Running || got.ExitCode == nil || *got.ExitCode != 3 {
		t.Errorf("wait for a job that ends = %+v; want it ended with code 3", got)
	}
}

// A ring that lost bytes says how many, and reads on from what it holds.
func TestRingOverflow(t *testing.T) {
	m := newManager(t, Options{RingBytes: 4096})
	id := start(t, m, "c", `i=0; while [ $i -lt 2000 ]; do echo "line $i"; i=$((i+1)); done`)
	var got abi.JobOutput
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); {
		if got = output(t, m, "c", abi.JobRequest{ID: id, SinceByte: at(0), WaitMS: 1000}); !got.Running {
			break
		}
	}
	if got.Running {
		t.Fatal("the job did not end")
	}
	if got.SkippedBytes == 0 || got.FromByte != got.SkippedBytes || got.TotalBytes-got.FromByte > 4096 {
		t.Fatalf("read of an overflowed ring = from %d, skipped %d, total %d", got.FromByte, got.SkippedBytes, got.TotalBytes)
	}
	if !strings.HasSuffix(got.Output, "line 1999\n") || got.NextByte != got.TotalBytes {
		t.Errorf("the ring lost the end: next %d of %d, %q", got.NextByte, got.TotalBytes, got.Output[max(0, len(got.Output)-20):])
	}
}

// A read cut inside a character stops before it; the next one starts
// with it.
func TestOutputUTF8(t *testing.T) {
	m := newManager(t, Options{})
	id := start(t, m, "c", `printf 'aé€'; sleep 30`)
	got := output(t, m, "c", abi.JobRequest{ID: id, WaitMS: 5000, MaxBytes: 4})
	for got.TotalBytes < 6 {
		got = output(t, m, "c", abi.JobRequest{ID: id, SinceByte: at(0), WaitMS: 200, MaxBytes: 4})
	}
	if got.Output != "aé" || got.NextByte != 3 {
		t.Errorf("4 bytes of aé€ = %q, next %d; want aé, next 3", got.Output, got.NextByte)
	}
	if rest := output(t, m, "c", abi.JobRequest{ID: id}); rest.Output != "€" {
		t.Errorf("the rest = %q", rest.Output)
	}
}

// TERM ends a job that lets it; one that ignores it is killed after the
// grace; KILL ends it at once. killed says it was job_kill.
func TestKill(t *testing.T) {
	m := newManager(t, Options{})
	for _, tt := range []struct {
		name, script, signal string
		within               time.Duration
		wantSignal           string
	}{
		{"TERM", tick, "", 3 * time.Second, "terminated"},
		{"KILL", `trap '' TERM; ` + tick, "KILL", 3 * time.Second, "killed"},
		{"TERM ignored", `trap '' TERM; ` + tick, "TERM", KillGrace + 3*time.Second, "killed"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			id := start(t, m, "c", tt.script)
			output(t, m, "c", abi.JobRequest{ID: id, WaitMS: 5000})
			pid := pidOf(t, m, id)
			began := time.Now()
			res, err := m.Do(context.Background(), "c", abi.JobRequest{Op: abi.JobKillOp, ID: id, Signal: tt.signal, WaitMS: int64(tt.within / time.Millisecond)})
			if err != nil {
				t.Fatal(err)
			}
			j := res.Job
			if j.Running || j.Killed != abi.KilledCancel || j.Signal != tt.wantSignal {
				t.Errorf("after kill: running %v, killed %q, signal %q; want ended, killed cancel, by %s", j.Running, j.Killed, j.Signal, tt.wantSignal)
			}
			if tt.name == "TERM ignored" && time.Since(began) < KillGrace-time.Second {
				t.Errorf("an ignored TERM was followed by KILL after %v, before the grace", time.Since(began))
			}
			if alive(pid) {
				t.Errorf("pid %d still runs", pid)
			}
		})
	}
	if _, err := m.Do(context.Background(), "c", abi.JobRequest{Op: abi.JobKillOp, ID: start(t, m, "c", tick), Signal: "STOP"}); err == nil || !strings.Contains(err.Error(), "TERM") {
		t.Errorf("kill with STOP = %v; want a refusal naming the signals", err)
	}
}

// Bounds: per conversation, in total; a refusal names the bound and how
// to make room. Ended jobs do not count.
func TestBounds(t *testing.T) {
	m := newManager(t, Options{MaxPerConversation: 2, MaxTotal: 3})
	a1 := start(t, m, "a", tick)
	start(t, m, "a", tick)
	_, err := m.Start(context.Background(), "a", command(t, tick))
	if !errors.Is(err, ErrLimit) || !strings.Contains(err.Error(), "max_per_conversation") || !strings.Contains(err.Error(), "job_kill") {
		t.Errorf("third job of a = %v; want ErrLimit naming max_per_conversation and job_kill", err)
	}
	start(t, m, "b", tick)
	_, err = m.Start(context.Background(), "c", command(t, tick))
	if !errors.Is(err, ErrLimit) || !strings.Contains(err.Error(), "max_total") {
		t.Errorf("fourth job = %v; want ErrLimit naming max_total", err)
	}
	// Wait for the end: a loaded machine can take more than job_kill's
	// default second to reap a job, and a job still running counts.
	res, err := m.Do(context.Background(), "a", abi.JobRequest{Op: abi.JobKillOp, ID: a1, Signal: "KILL", WaitMS: 10000})
	if err != nil {
		t.Fatal(err)
	}
	if res.Job.Running {
		t.Fatalf("job %s still runs 10 s after a KILL", a1)
	}
	start(t, m, "a", tick) // room again
	if n := len(m.list("a")); n != 3 {
		t.Errorf("a lists %d jobs; want 3 (one ended)", n)
	}
}

// A job that runs past MaxDuration is killed, killed "timeout".
func TestMaxDuration(t *testing.T) {
	m := newManager(t, Options{MaxDuration: 300 * time.Millisecond})
	id := start(t, m, "c", tick)
	got := output(t, m, "c", abi.JobRequest{ID: id})
	for deadline := time.Now().Add(10 * time.Second); got.Running && time.Now().Before(deadline); {
		got = output(t, m, "c", abi.JobRequest{ID: id, WaitMS: 1000})
	}
	if got.Running || got.Killed != abi.KilledTimeout {
		t.Errorf("job past its time = running %v, killed %q; want killed timeout", got.Running, got.Killed)
	}
}

// Another conversation cannot read, kill or list a job, and is told the
// same as for an id that does not exist.
func TestOtherConversation(t *testing.T) {
	m := newManager(t, Options{Dir: filepath.Join(t.TempDir(), "outputs")})
	id := start(t, m, "a", tick)
	k, err := m.Keep("a", "call-1", "echo hi")
	if err != nil {
		t.Fatal(err)
	}
	k.Write([]byte("hi\n"))
	k.Close()
	for _, req := range []abi.JobRequest{
		{Op: abi.JobOutputOp, ID: id},
		{Op: abi.JobKillOp, ID: id, Signal: "KILL"},
		{Op: abi.JobOutputOp, ID: k.ID()},
		{Op: abi.JobOutputOp, ID: "job-000000000000000000000000"},
		{Op: abi.JobOutputOp, ID: "../outputs/" + k.ID()},
	} {
		if _, err := m.Do(context.Background(), "b", req); !errors.Is(err, ErrUnknown) {
			t.Errorf("b's %s of %s = %v; want ErrUnknown", req.Op, req.ID, err)
		}
	}
	if l := m.list("b"); len(l) != 0 {
		t.Errorf("b lists %v", l)
	}
	if got := output(t, m, "a", abi.JobRequest{ID: id, WaitMS: 5000}); !got.Running {
		t.Errorf("b's kill reached a's job: %+v", got)
	}
}

// Close kills every job and waits for its processes to be gone; no job
// starts after it.
func TestCloseKillsAll(t *testing.T) {
	m := newManager(t, Options{})
	var pids []int
	for _, conv := range []string{"c", "c", "d"} {
		id := start(t, m, conv, tick)
		j, _ := m.lookup(conv, id)
		j.mu.Lock()
		pids = append(pids, j.pid)
		j.mu.Unlock()
	}
	if err := m.Close(); err != nil {
		t.Fatal(err)
	}
	for _, pid := range pids {
		if alive(pid) {
			t.Errorf("pid %d outlived Close", pid)
		}
	}
	if _, err := m.Start(context.Background(), "c", command(t, tick)); !errors.Is(err, ErrClosed) {
		t.Errorf("Start after Close = %v", err)
	}
}

// EndConversation kills the conversation's jobs after the grace, and only
// its own.
func TestEndConversation(t *testing.T) {
	m := newManager(t, Options{})
	mine := start(t, m, "c", tick)
	j, _ := m.lookup("c", mine)
	other := start(t, m, "d", tick)
	m.EndConversation("c", 300*time.Millisecond)
	time.Sleep(100 * time.Millisecond)
	if !j.isRunning() {
		t.Fatal("the job was killed before the grace")
	}
	select {
	case <-j.done:
	case <-time.After(10 * time.Second):
		t.Fatal("the job outlived its conversation")
	}
	time.Sleep(50 * time.Millisecond)
	if _, err := m.lookup("c", mine); !errors.Is(err, ErrUnknown) {
		t.Errorf("the ended conversation's job is still listed: %v", err)
	}
	if got := output(t, m, "d", abi.JobRequest{ID: other}); !got.Running {
		t.Error("another conversation's job was killed")
	}
}

// The 65th ended job of a conversation drops the oldest.
func TestFinishedBound(t *testing.T) {
	m := newManager(t, Options{MaxPerConversation: 100, MaxTotal: 100})
	var first string
	for i := range MaxFinished + 1 {
		id := start(t, m, "c", `true`)
		if i == 0 {
			first = id
		}
		j, _ := m.lookup("c", id)
		<-j.done
	}
	start(t, m, "c", `true`)
	if _, err := m.lookup("c", first); !errors.Is(err, ErrUnknown) {
		t.Error("the oldest ended job was kept past the bound")
	}
	if n := len(m.list("c")); n > MaxFinished+1 {
		t.Errorf("%d jobs listed", n)
	}
}

// List is newest first, with what a job is.
func TestList(t *testing.T) {
	m := newManager(t, Options{})
	a := start(t, m, "c", `echo a`)
	b := start(t, m, "c", tick)
	l := m.list("c")
	if len(l) != 2 || l[0].ID != b || l[1].ID != a || l[0].Command != tick || !l[0].Running || l[0].StartedAt == "" {
		t.Errorf("list = %+v", l)
	}
}

// A job started from a goroutine whose OS thread then exits keeps
// running: the process's parent-death signal (which the confined
// launcher sets, so that toolhost's death kills it) fires when the
// thread that started it exits, and proc starts it from a thread of its
// own that lives as long as the command.
func TestJobOutlivesStartingThread(t *testing.T) {
	m := newManager(t, Options{})
	cmd := command(t, tick)
	cmd.Spec.Launcher = pdeathLauncher{}
	idc := make(chan string, 1)
	var start func()
	start = func() {
		// Locked and never unlocked: the thread exits with the goroutine,
		// unless it is the main thread, which Go never ends; then try
		// from another.
		runtime.LockOSThread()
		if syscall.Gettid() == os.Getpid() {
			go start()
			return
		}
		id, err := m.Start(context.Background(), "c", cmd)
		if err != nil {
			t.Error(err)
		}
		idc <- id
	}
	go start()
	id := <-idc
	pid := pidOf(t, m, id)
	time.Sleep(300 * time.Millisecond)
	if !alive(pid) {
		t.Fatal("the job died with the thread that started it")
	}
	got := output(t, m, "c", abi.JobRequest{ID: id, SinceByte: at(0), WaitMS: 2000})
	if !got.Running || !strings.Contains(got.Output, "tick") {
		t.Errorf("job = %+v", got)
	}
}

// pdeathLauncher runs sh -c as is, with a parent-death signal.
type pdeathLauncher struct{}

func (pdeathLauncher) Prepare(cmd *exec.Cmd) error {
	cmd.SysProcAttr.Pdeathsig = syscall.SIGKILL
	return nil
}
func (pdeathLauncher) Started(context.Context, int) error { return nil }
func (pdeathLauncher) Exit(code int, signal string) (int, string) {
	return code, signal
}
func (pdeathLauncher) Close() {}

// A job a killed host left running (its record names an owner that is
// gone) is killed by the next Manager on the state directory; one whose
// owner still runs is left alone, even when the owner is the same
// process (two hosts on one state directory).
func TestRecoveryKillsOrphans(t *testing.T) {
	if _, err := journal.ProcessStartTime(os.Getpid()); err != nil {
		t.Skip("no process start times here:", err)
	}
	dir := t.TempDir()
	orphan := exec.Command("/bin/sh", "-c", "sleep 60 & sleep 60")
	orphan.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	if err := orphan.Start(); err != nil {
		t.Fatal(err)
	}
	defer orphan.Process.Kill()
	waited := make(chan struct{})
	go func() { orphan.Wait(); close(waited) }()
	// The owner: a process that has exited.
	gone := exec.Command("true")
	if err := gone.Run(); err != nil {
		t.Fatal(err)
	}
	goneStart := uint64(1) // no process started at tick 1 with that pid now
	if _, err := writeRecord(dir, "job-orphan", orphan.Process.Pid, owner{PID: gone.Process.Pid, Start: goneStart}); err != nil {
		t.Fatal(err)
	}
	kept := exec.Command("/bin/sh", "-c", "sleep 60")
	kept.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	if err := kept.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { kept.Process.Kill(); kept.Wait() }()
	// Its owner is this very process: another host on the same state
	// directory in it, still running.
	if _, err := writeRecord(dir, "job-kept", kept.Process.Pid, self()); err != nil {
		t.Fatal(err)
	}
	time.Sleep(60 * time.Millisecond) // past the record's slack
	newManager(t, Options{RecordDir: dir})
	select {
	case <-waited:
	case <-time.After(5 * time.Second):
		t.Fatal("the orphaned job survived the next start")
	}
	if _, err := os.Stat(filepath.Join(dir, "job-orphan")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the orphan's record is left: %v", err)
	}
	if !alive(kept.Process.Pid) {
		t.Error("a job of a host that still runs was killed")
	}
	if _, err := os.Stat(filepath.Join(dir, "job-kept")); err != nil {
		t.Errorf("a running host's record was removed: %v", err)
	}
}

// A running job is recorded; its record goes when it ends.
func TestRecordWhileRunning(t *testing.T) {
	dir := t.TempDir()
	m := newManager(t, Options{RecordDir: dir})
	id := start(t, m, "c", tick)
	if _, err := os.Stat(filepath.Join(dir, id)); err != nil {
		t.Fatalf("no record of a running job: %v", err)
	}
	m.Do(context.Background(), "c", abi.JobRequest{Op: abi.JobKillOp, ID: id, Signal: "KILL"})
	j, _ := m.lookup("c", id)
	<-j.done
	time.Sleep(20 * time.Millisecond)
	if _, err := os.Stat(filepath.Join(dir, id)); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the ended job's record is left: %v", err)
	}
}

// A job whose confinement cannot be set up does not start: Start says
// why and nothing is listed.
func TestStartFailure(t *testing.T) {
	m := newManager(t, Options{})
	released := false
	cmd := command(t, tick)
	cmd.Spec.Launcher = failingLauncher{}
	cmd.Release = func() { released = true }
	_, err := m.Start(context.Background(), "c", cmd)
	var notRun *proc.NotRunError
	if !errors.As(err, &notRun) {
		t.Errorf("Start with a failing launcher = %v; want a NotRunError", err)
	}
	if released {
		t.Error("Release was called though Start returned an error: the caller owns it then, and would release it twice")
	}
	if l := m.list("c"); len(l) != 0 {
		t.Errorf("a job that did not start is listed: %+v", l)
	}
}

type failingLauncher struct{ pdeathLauncher }

func (failingLauncher) Started(context.Context, int) error { return errors.New("no namespaces here") }

// A started job's Release is called once, after its processes are gone.
func TestReleaseOnce(t *testing.T) {
	m := newManager(t, Options{})
	calls := make(chan struct{}, 4)
	cmd := command(t, `sleep 0.2`)
	cmd.Release = func() { calls <- struct{}{} }
	id, err := m.Start(context.Background(), "c", cmd)
	if err != nil {
		t.Fatal(err)
	}
	if len(calls) != 0 {
		t.Fatal("Release was called while the job runs")
	}
	j, _ := m.lookup("c", id)
	<-j.done
	select {
	case <-calls:
	case <-time.After(5 * time.Second):
		t.Fatal("Release was not called after the job ended")
	}
	time.Sleep(50 * time.Millisecond)
	if len(calls) != 0 {
		t.Error("Release was called twice")
	}
}

// Ended jobs of many conversations, none of which ends, are bounded in
// all: the first to end go first.
func TestFinishedTotalBound(t *testing.T) {
	m := newManager(t, Options{})
	var first string
	for i := range MaxFinishedTotal + 2 {
		conv := "conv-" + strconv.Itoa(i)
		id := start(t, m, conv, `true`)
		if i == 0 {
			first = id
		}
		j, _ := m.lookup(conv, id)
		<-j.done
	}
	start(t, m, "last", `true`)
	if _, err := m.lookup("conv-0", first); !errors.Is(err, ErrUnknown) {
		t.Error("the first ended job was kept past the host's bound")
	}
	m.mu.Lock()
	n := len(m.jobs)
	m.mu.Unlock()
	if n > MaxFinishedTotal+1 {
		t.Errorf("%d jobs kept; want at most %d ended and the one running", n, MaxFinishedTotal)
	}
}
