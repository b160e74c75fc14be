package hostfn

import (
	"context"
	"encoding/json"
	"os"
	"strings"
	"testing"

	"github.com/toolhost/toolhost/abi"
	"github.com/toolhost/toolhost/host/internal/jobs"
	"github.com/toolhost/toolhost/host/internal/proc"
)

// proc_job decodes its request as untrusted input, answers only for the
// call's conversation, bounds what it returns by the call's output
// limit, and says when the host keeps no jobs.
func TestProcJob(t *testing.T) {
	w := newWorkspace(t, nil)
	m, err := jobs.New(jobs.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	id, err := m.Start(context.Background(), "conv-a", jobs.Command{Spec: proc.Spec{
		Command: `head -c 5000 /dev/zero | tr '\0' x; sleep 30`, Dir: w.dir, Env: []string{"PATH=" + os.Getenv("PATH")},
	}})
	if err != nil {
		t.Fatal(err)
	}
	env := func(conv string) *Env {
		e := w.env("call-1")
		e.Call.Conversation = conv
		e.Call.Limits = abi.Limits{MaxOutputBytes: 1000}
		e.Commands.Jobs = m
		return e
	}
	g := newGuest(1 << 16)
	do := func(e *Env, raw string) (abi.JobResult, error) {
		p, n := g.put([]byte(raw))
		resp, err := g.call(context.Background(), e, abi.FnProcJob, p, n, 0)
		if err != nil {
			return abi.JobResult{}, err
		}
		var r abi.JobResult
		if err := json.Unmarshal(resp, &r); err != nil {
			t.Fatalf("response %s: %v", resp, err)
		}
		return r, nil
	}
	r, err := do(env("conv-a"), string(abi.AppendJobRequest(nil, abi.JobRequest{Op: abi.JobOutputOp, ID: id, SinceByte: new(int64), WaitMS: 5000})))
	if err != nil || r.Job == nil || r.Job.ID != id || !r.Job.Running {
		t.Fatalf("output: %+v, %v", r, err)
	}
	for r.Job.TotalBytes < 5000 {
		r, _ = do(env("conv-a"), `{"op":"output","id":"`+id+`","since_byte":0,"wait_ms":100}`)
	}
	if len(r.Job.Output) != 1000 || r.Job.NextByte != 1000 {
		t.Errorf("output past the call's limit of 1000: %d bytes, next %d", len(r.Job.Output), r.Job.NextByte)
	}
	if r, err := do(env("conv-a"), `{"op":"list"}`); err != nil || len(r.Jobs) != 1 || r.Jobs[0].ID != id {
		t.Errorf("list: %+v, %v", r, err)
	}
	if r, err := do(env("conv-b"), `{"op":"list"}`); err != nil || len(r.Jobs) != 0 {
		t.Errorf("another conversation's list: %+v, %v", r, err)
	}
	for _, tt := range []struct {
		name   string
		conv   string
		raw    string
		status abi.Status
		in     string
	}{
		{"another conversation's job", "conv-b", `{"op":"output","id":"` + id + `"}`, abi.StatusNotFound, "no job or output"},
		{"another conversation's kill", "conv-b", `{"op":"kill","id":"` + id + `"}`, abi.StatusNotFound, "job_list shows them"},
		{"a missing id", "conv-a", `{"op":"output","id":"job-123"}`, abi.StatusNotFound, `"job-123"`},
		{"no id", "conv-a", `{"op":"output"}`, abi.StatusInvalid, "id is required"},
		{"an unknown op", "conv-a", `{"op":"stop","id":"` + id + `"}`, abi.StatusInvalid, "stop"},
		{"an unknown field", "conv-a", `{"op":"list","all":true}`, abi.StatusInvalid, "all"},
		{"not JSON", "conv-a", `{"op":`, abi.StatusInvalid, "not a job request"},
		{"two objects", "conv-a", `{"op":"list"}{"op":"list"}`, abi.StatusInvalid, "more after"},
		{"a bad signal", "conv-a", `{"op":"kill","id":"` + id + `","signal":"STOP"}`, abi.StatusInvalid, "TERM"},
		{"a negative offset", "conv-a", `{"op":"output","id":"` + id + `","since_byte":-1}`, abi.StatusInvalid, "since_byte"},
	} {
		_, err := do(env(tt.conv), tt.raw)
		if he := hostErr(t, err); he.Status != tt.status || !strings.Contains(he.Message, tt.in) {
			t.Errorf("%s: %v %q, want status %v naming %q", tt.name, he.Status, he.Message, tt.status, tt.in)
		}
	}
	// The job another conversation tried to kill still runs.
	if r, err := do(env("conv-a"), `{"op":"output","id":"`+id+`"}`); err != nil || !r.Job.Running {
		t.Errorf("after conv-b's kill: %+v, %v", r, err)
	}
	// A dry run may read but not signal.
	dry := env("conv-a")
	dry.Call.DryRun = true
	if _, err := do(dry, `{"op":"kill","id":"`+id+`"}`); hostErr(t, err).Status != abi.StatusDenied {
		t.Errorf("a dry run's kill: %v", err)
	}
	if r, err := do(env("conv-a"), `{"op":"kill","id":"`+id+`","signal":"KILL"}`); err != nil || r.Job.Running || r.Job.Killed != abi.KilledCancel {
		t.Errorf("kill: %+v, %v", r.Job, err)
	}
	// A request larger than any real one is refused before it is read.
	p, _ := g.put([]byte("{}"))
	if _, err := g.call(context.Background(), env("conv-a"), abi.FnProcJob, p, maxJobRequestBytes+1, 0); hostErr(t, err).Status != abi.StatusTooLarge {
		t.Errorf("an oversized request: %v, want too large", err)
	}
	// A host without jobs says so.
	none := env("conv-a")
	none.Commands.Jobs = nil
	if _, err := do(none, `{"op":"list"}`); !strings.Contains(hostErr(t, err).Message, "no background jobs") {
		t.Errorf("without a Manager: %v", err)
	}
}
