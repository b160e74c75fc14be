package journal

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// childCommand runs the test binary as a child process in mode with args
// (see runChild).
func childCommand(t *testing.T, mode string, args ...string) *exec.Cmd {
	t.Helper()
	cmd := exec.Command(os.Args[0], args...)
	cmd.Env = append(os.Environ(), childEnv+"="+mode)
	cmd.Stdout = new(bytes.Buffer)
	cmd.Stderr = new(bytes.Buffer)
	return cmd
}

// runChild is a second toolhost process for the tests, in one of these
// modes (arguments in os.Args[1:]):
//
//	write PATH PREFIX N       write N batches
//	crash-spawn PATH MARKER   begin a batch of three calls, finish the first,
//	                          start the second, which starts a process group
//	                          that would create MARKER in 2 s, then die by SIGKILL
//	crash-record PATH PGID START
//	                          the same, recording the process group given
//	live PATH                 begin a batch and wait for stdin to close
//	open-begin PATH           open and begin a batch; print what failed
//	fsize PATH LIMIT          open, limit file sizes to LIMIT bytes, then
//	                          begin a large batch; print what failed
//	burst PATH N              write N batches as fast as it can, the last
//	                          left open with a result, and die by SIGKILL
func runChild(mode string) int {
	ctx := context.Background()
	args := os.Args[1:]
	fail := func(err error) int {
		fmt.Fprintln(os.Stderr, mode+":", err)
		return 1
	}
	if mode == "open-begin" {
		j, err := Open(ctx, args[0], Options{})
		if err != nil {
			fmt.Println("open:", err)
			return 0
		}
		defer j.Close()
		if err := j.BeginBatch(ctx, testBatch("ro", 2)); err != nil {
			fmt.Println("begin:", err)
			return 0
		}
		fmt.Println("no error")
		return 0
	}
	j, err := Open(ctx, args[0], Options{})
	if err != nil {
		return fail(err)
	}
	defer j.Close()
	switch mode {
	case "write":
		n, _ := strconv.Atoi(args[2])
		if err := writeBatches(ctx, j, args[1], n); err != nil {
			return fail(err)
		}
	case "crash-spawn", "crash-record":
		b := testBatch("crash", 3)
		b.Calls[1].Tool = "run_command"
		if err := j.BeginBatch(ctx, b); err != nil {
			return fail(err)
		}
		if err := j.StartCall(ctx, "crash", "crash-call-0", time.Time{}); err != nil {
			return fail(err)
		}
		if err := j.FinishCall(ctx, "crash", "crash-call-0", Result{OK: true, Content: "first call's output"}); err != nil {
			return fail(err)
		}
		if err := j.StartCall(ctx, "crash", "crash-call-1", time.Time{}); err != nil {
			return fail(err)
		}
		p := Process{BatchID: "crash", CallID: "crash-call-1"}
		if mode == "crash-spawn" {
			cmd := exec.Command("sh", "-c", "sleep 2 && touch "+args[1])
			cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
			if err := cmd.Start(); err != nil {
				return fail(err)
			}
			p.PGID = cmd.Process.Pid
			if p.StartTime, err = ProcessStartTime(p.PGID); err != nil {
				return fail(err)
			}
		} else {
			p.PGID, _ = strconv.Atoi(args[1])
			p.StartTime, _ = strconv.ParseUint(args[2], 10, 64)
		}
		if err := j.RecordProcess(ctx, p); err != nil {
			return fail(err)
		}
		fmt.Println(p.PGID)
		os.Stdout.Sync()
		syscall.Kill(os.Getpid(), syscall.SIGKILL)
		time.Sleep(time.Minute) // not reached
	case "live":
		if err := j.BeginBatch(ctx, testBatch("live", 2)); err != nil {
			return fail(err)
		}
		fmt.Println("ready")
		bufio.NewReader(os.Stdin).ReadString('\n')
	case "fsize":
		limit, _ := strconv.ParseUint(args[1], 10, 64)
		if err := syscall.Setrlimit(syscall.RLIMIT_FSIZE, &syscall.Rlimit{Cur: limit, Max: limit}); err != nil {
			return fail(err)
		}
		b := testBatch("big", 4)
		for i := range b.Calls {
			b.Calls[i].Arguments = []byte(`{"content":"` + strings.Repeat("x", 256<<10) + `"}`)
		}
		if err := j.BeginBatch(ctx, b); err != nil {
			fmt.Println("begin:", err)
			return 0
		}
		fmt.Println("no error")
	case "burst":
		n, _ := strconv.Atoi(args[1])
		if err := writeBatches(ctx, j, "burst", n); err != nil {
			return fail(err)
		}
		b := testBatch("last", 2)
		if err := j.Commit(ctx, "last", Step{Batch: &b, Starts: []string{"last-call-0"}}); err != nil {
			return fail(err)
		}
		if err := j.Commit(ctx, "last", Step{Results: []CallResult{{"last-call-0", Result{OK: true, Content: "done before the crash"}}}, Starts: []string{"last-call-1"}}); err != nil {
			return fail(err)
		}
		if err := j.SaveReads(ctx, "burst-conv", []Read{{Path: "/r/read-before-the-crash", SHA256: "ab"}}); err != nil {
			return fail(err)
		}
		syscall.Kill(os.Getpid(), syscall.SIGKILL)
		time.Sleep(time.Minute) // not reached
	default:
		return fail(fmt.Errorf("unknown mode"))
	}
	return 0
}
