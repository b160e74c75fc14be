package host_test

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/toolhost/toolhost/abi"
	"github.com/toolhost/toolhost/host/internal/inside"
	"github.com/toolhost/toolhost/host/internal/jobs"
	"github.com/toolhost/toolhost/host/internal/journal"
	"github.com/toolhost/toolhost/host/internal/proc"
)

// A host on a state directory kills, as it opens, the background job a
// host killed with SIGKILL left running there; prunes the kept outputs
// past the journal's retention with the journal; runs jobs; and kills
// them when it closes.
func TestHostJobs(t *testing.T) {
	if _, err := journal.ProcessStartTime(os.Getpid()); err != nil {
		t.Skip("no process start times here:", err)
	}
	state, root := t.TempDir(), t.TempDir()
	ctx := context.Background()

	// The orphan: a job's process group whose host is gone.
	orphan := exec.Command("/bin/sh", "-c", "sleep 60 & sleep 60")
	orphan.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	if err := orphan.Start(); err != nil {
		t.Fatal(err)
	}
	defer orphan.Process.Kill()
	ended := make(chan struct{})
	go func() { orphan.Wait(); close(ended) }()
	start, err := journal.ProcessStartTime(orphan.Process.Pid)
	if err != nil {
		t.Fatal(err)
	}
	gone := exec.Command("true")
	gone.Run()
	writeState(t, filepath.Join(state, "jobs", "job-crashed"), fmt.Sprintf(`{"pgid":%d,"start":%d,"recorded_at":%d,"owner":{"pid":%d,"start":1}}`,
		orphan.Process.Pid, start, time.Now().UnixNano(), gone.Process.Pid))
	// Two kept outputs, one older than the journal's 30 days.
	old, recent := "out-000000000000000000000001", "out-000000000000000000000002"
	long := time.Now().Add(-40 * 24 * time.Hour)
	for _, id := range []string{old, recent} {
		p := filepath.Join(state, "outputs", id)
		writeState(t, p, "output")
		writeState(t, p+".meta", `{"conversation":"c","command":"echo","kept":6,"done":true}`)
		if id == old {
			os.Chtimes(p, long, long)
			os.Chtimes(p+".meta", long, long)
		}
	}
	time.Sleep(60 * time.Millisecond) // past the record's slack

	h := openState(t, root, state)
	closed := false
	defer func() {
		if !closed {
			h.Close(ctx)
		}
	}()
	select {
	case <-ended:
	case <-time.After(10 * time.Second):
		t.Fatal("the job a killed host left running survived the next host's start")
	}
	m := h.Inside(inside.Key{}).Jobs
	if m == nil {
		t.Fatal("the host has no jobs")
	}
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		if _, err := os.Stat(filepath.Join(state, "outputs", old)); os.IsNotExist(err) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the output past the journal's retention was not pruned")
		}
	}
	if r, err := m.Do(ctx, "c", abi.JobRequest{Op: abi.JobOutputOp, ID: recent}); err != nil || r.Job.Output != "output" {
		t.Errorf("the recent output: %+v, %v", r, err)
	}

	id, err := m.Start(ctx, "c", jobs.Command{Spec: proc.Spec{Command: "sleep 60", Dir: root}})
	if err != nil {
		t.Fatal(err)
	}
	list, _ := m.Do(ctx, "c", abi.JobRequest{Op: abi.JobListOp})
	if len(list.Jobs) != 1 || list.Jobs[0].ID != id || !list.Jobs[0].Running {
		t.Fatalf("list = %+v", list.Jobs)
	}
	records, _ := os.ReadDir(filepath.Join(state, "jobs"))
	if len(records) != 1 || records[0].Name() != id {
		t.Errorf("records while the job runs: %v", records)
	}
	closed = true
	if err := h.Close(ctx); err != nil {
		t.Fatal(err)
	}
	if records, _ := os.ReadDir(filepath.Join(state, "jobs")); len(records) != 0 {
		t.Errorf("records after Close: %v; the job was not killed", records)
	}
}

func writeState(t *testing.T, path, content string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
}
