package journal

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"
)

// crashChild runs a child that journals part of a batch and dies by
// SIGKILL; it returns the process group the child recorded.
func crashChild(t *testing.T, mode string, args ...string) int {
	t.Helper()
	cmd := childCommand(t, mode, args...)
	err := cmd.Run()
	var exit *exec.ExitError
	if !errors.As(err, &exit) || exit.Sys().(syscall.WaitStatus).Signal() != syscall.SIGKILL {
		t.Fatalf("child: %v, want killed by SIGKILL\n%s", err, cmd.Stderr)
	}
	var pgid int
	if _, err := fmt.Sscan(cmd.Stdout.(*bytes.Buffer).String(), &pgid); err != nil {
		t.Fatalf("child printed %q: %v", cmd.Stdout, err)
	}
	return pgid
}

// eventually polls cond for up to 5 s.
func eventually(cond func() bool) bool {
	for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		if cond() {
			return true
		}
	}
	return cond()
}

// FR-RES-04c, FR-RES-05, NFR-REL-04, IT-JRN-02: a
// toolhost process killed while a run_command call's process group runs.
// Recovery marks the batch interrupted, keeps the first call's result,
// gives the started call the crash result and the unstarted one the
// not-run result, and kills the orphaned group, which then never writes
// its marker.
func TestRecoverAfterCrash(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "journal.db")
	marker := filepath.Join(dir, "marker")
	pgid := crashChild(t, "crash-spawn", path, marker)
	t.Cleanup(func() { syscall.Kill(-pgid, syscall.SIGKILL) })
	start, err := ProcessStartTime(pgid)
	if err != nil || !GroupAlive(pgid, start, BootTicks(time.Now())) {
		t.Fatalf("the crashed call's process group %d is not running (%v): the test proves nothing", pgid, err)
	}

	j := openJournal(t, path, Options{})
	ctx := context.Background()
	rec, err := j.Recover(ctx, System{})
	if err != nil {
		t.Fatal(err)
	}
	want := Recovery{
		Batches:     []string{"crash"},
		Interrupted: []CallRef{{"crash", "crash-call-1"}},
		NotRun:      []CallRef{{"crash", "crash-call-2"}},
		Killed:      []Process{{BatchID: "crash", CallID: "crash-call-1", PGID: pgid, StartTime: start}},
	}
	if fmt.Sprint(*rec) != fmt.Sprint(want) {
		t.Errorf("Recover = %+v\nwant      %+v", *rec, want)
	}
	if !eventually(func() bool { return !GroupAlive(pgid, start, BootTicks(time.Now())) }) {
		t.Errorf("process group %d still runs after recovery", pgid)
	}
	time.Sleep(3 * time.Second) // past the 2 s after which the group would write its marker
	if _, err := os.Stat(marker); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the killed process group wrote its marker (%v): it ran on after recovery", err)
	}

	b, err := j.Batch(ctx, "crash")
	if err != nil {
		t.Fatal(err)
	}
	if b.State != StateInterrupted {
		t.Errorf("batch state %s, want interrupted", b.State)
	}
	got := []Result{*b.Calls[0].Result, *b.Calls[1].Result, *b.Calls[2].Result}
	for i, w := range []struct {
		ok   bool
		kind string
		msg  string
	}{
		{true, "", ""},
		{false, KindInterrupted, InterruptedMessage},
		{false, KindNotRun, NotRunMessage},
	} {
		if got[i].OK != w.ok || got[i].ErrorKind != w.kind || got[i].ErrorMessage != w.msg {
			t.Errorf("call %d result %+v, want ok=%v %s %q", i, got[i], w.ok, w.kind, w.msg)
		}
	}
	if got[0].Content != "first call's output" {
		t.Errorf("the finished call's result was lost: %+v", got[0])
	}
	if b.Calls[2].Started != (time.Time{}) {
		t.Error("the unstarted call has a start: recovery must never run it")
	}

	// A second recovery finds nothing to do.
	rec, err = j.Recover(ctx, System{})
	if err != nil || len(rec.Batches) != 0 || len(rec.Killed) != 0 {
		t.Errorf("second Recover = %+v, %v; want nothing done", rec, err)
	}
}

// A recorded process group whose pid now belongs to
// another process (its start time differs) is never signalled.
func TestRecoverLeavesReusedPIDAlone(t *testing.T) {
	path := filepath.Join(t.TempDir(), "journal.db")
	other := exec.Command("sleep", "30")
	other.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := other.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		syscall.Kill(-other.Process.Pid, syscall.SIGKILL)
		other.Wait()
	})
	pgid := other.Process.Pid
	start, err := ProcessStartTime(pgid)
	if err != nil {
		t.Fatal(err)
	}
	// The crashed call's group had this id but started earlier: the
	// sleep above is another process that got the same pid since.
	crashChild(t, "crash-record", path, fmt.Sprint(pgid), fmt.Sprint(start-1))

	j := openJournal(t, path, Options{})
	rec, err := j.Recover(context.Background(), System{})
	if err != nil {
		t.Fatal(err)
	}
	if len(rec.Killed) != 0 || len(rec.Gone) != 1 || rec.Gone[0].PGID != pgid || !slices.Equal(rec.Batches, []string{"crash"}) {
		t.Errorf("Recover = %+v, want the batch recovered and group %d left alone as gone", rec, pgid)
	}
	time.Sleep(200 * time.Millisecond)
	if !ProcessAlive(pgid, start) {
		t.Errorf("recovery killed process %d, which only reused the recorded pid", pgid)
	}
}

// Recovery at the start of one toolhost command leaves
// alone the open batch of another toolhost process that still runs (a
// server), and recovers it once that process is gone.
func TestRecoverLeavesLiveProcessBatches(t *testing.T) {
	path := filepath.Join(t.TempDir(), "journal.db")
	cmd := childCommand(t, "live", path)
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stdout = nil
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	line := make([]byte, 6)
	if _, err := io.ReadFull(out, line); err != nil || string(line) != "ready\n" {
		t.Fatalf("child said %q, %v\n%s", line, err, cmd.Stderr)
	}

	j := openJournal(t, path, Options{})
	ctx := context.Background()
	rec, err := j.Recover(ctx, System{})
	if err != nil || len(rec.Batches) != 0 {
		t.Fatalf("Recover while the owner runs = %+v, %v; want nothing recovered", rec, err)
	}
	stdin.Close()
	if err := cmd.Wait(); err != nil {
		t.Fatalf("child: %v\n%s", err, cmd.Stderr)
	}
	rec, err = j.Recover(ctx, System{})
	if err != nil || !slices.Equal(rec.Batches, []string{"live"}) || len(rec.NotRun) != 2 {
		t.Fatalf("Recover after the owner ended = %+v, %v; want batch live with 2 calls not run", rec, err)
	}
}

// FR-RES-05: the user resumes with the partial results
// or discards them; the calls stay either way, and only an interrupted
// batch can be resolved.
func TestResolveInterrupted(t *testing.T) {
	for _, tc := range []struct {
		name   string
		resume bool
		state  State
		first  Result
	}{
		{"resume", true, StateResumed, Result{OK: true, Content: "first call's output"}},
		{"discard", false, StateDiscarded, Result{OK: false, Content: "first call's output", ErrorKind: KindDiscarded, ErrorMessage: DiscardedMessage}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "journal.db")
			crashChild(t, "crash-record", path, "0", "0")
			j := openJournal(t, path, Options{})
			ctx := context.Background()
			if _, err := j.Recover(ctx, System{}); err != nil {
				t.Fatal(err)
			}
			if err := j.ResolveInterrupted(ctx, "crash", tc.resume); err != nil {
				t.Fatal(err)
			}
			b, err := j.Batch(ctx, "crash")
			if err != nil {
				t.Fatal(err)
			}
			if b.State != tc.state || len(b.Calls) != 3 {
				t.Fatalf("batch %s with %d calls, want %s with 3", b.State, len(b.Calls), tc.state)
			}
			r := *b.Calls[0].Result
			r.Finished = time.Time{}
			if r != tc.first {
				t.Errorf("first call's result %+v, want %+v", r, tc.first)
			}
			for _, c := range b.Calls[1:] {
				if c.Result == nil || c.Result.OK {
					t.Errorf("call %s result %+v, want failed", c.ID, c.Result)
				}
			}
			err = j.ResolveInterrupted(ctx, "crash", tc.resume)
			if !errors.Is(err, ErrNotInterrupted) || !strings.Contains(err.Error(), "not interrupted") || !strings.Contains(err.Error(), "crash") {
				t.Errorf("second resolve = %v, want a refusal naming the batch", err)
			}
			if err := j.ResolveInterrupted(ctx, "nope", tc.resume); !errors.Is(err, ErrNotFound) {
				t.Errorf("resolve of an unknown batch = %v, want ErrNotFound", err)
			}
		})
	}
}

// Once a group's leader is gone, the group is
// taken for the journaled one only if a member was alive when it was
// journaled; a group whose members all started later may have reused the
// pid, and recovery must not kill it.
func TestGroupAliveLeaderGone(t *testing.T) {
	cmd := exec.Command("sh", "-c", "sleep 0.5; sleep 30 & exit 0")
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	pgid := cmd.Process.Pid
	t.Cleanup(func() { syscall.Kill(-pgid, syscall.SIGKILL) })
	leader, err := ProcessStartTime(pgid)
	if err != nil {
		t.Fatal(err)
	}
	cmd.Wait() // the leader is gone; its child sleeps on in the group
	for _, tc := range []struct {
		name     string
		notAfter uint64
		want     bool
	}{
		{"journaled after the member started", BootTicks(time.Now().Add(time.Second)), true},
		{"journaled before any member started", leader + 10, false}, // the member started 0.5 s (50 ticks) later
		{"journaled at an unknown time", 0, false},
	} {
		if got := GroupAlive(pgid, leader, tc.notAfter); got != tc.want {
			t.Errorf("%s: GroupAlive = %v, want %v", tc.name, got, tc.want)
		}
	}
}
