package jobtext

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/toolhost/toolhost/abi"
)

func intp(n int) *int { return &n }

func TestStatus(t *testing.T) {
	tests := []struct {
		name string
		job  abi.JobOutput
		want string
	}{
		{"running, all read", abi.JobOutput{ID: "job-1", Running: true, FromByte: 10, NextByte: 20, TotalBytes: 20, DurationMS: 1500},
			"[job job-1: running after 1.5 s; bytes 10-20 of 20; job_output again returns what is new]"},
		{"running, more waiting", abi.JobOutput{ID: "job-1", Running: true, NextByte: 5, TotalBytes: 20, DurationMS: 10},
			"[job job-1: running after 10 ms; bytes 0-5 of 20; more is waiting: call job_output again]"},
		{"exited", abi.JobOutput{ID: "job-2", ExitCode: intp(3), NextByte: 4, TotalBytes: 4, DurationMS: 180_000},
			"[job job-2: exited with code 3 after 3 min 0 s; bytes 0-4 of 4]"},
		{"killed", abi.JobOutput{ID: "job-3", ExitCode: intp(-1), Signal: "terminated", Killed: abi.KilledCancel},
			"[job job-3: killed (cancel) by terminated after 0 ms; bytes 0-0 of 0]"},
		{"kept output of a finished call", abi.JobOutput{ID: "out-1", NextByte: 7, TotalBytes: 7},
			"[job out-1: ended after 0 ms; bytes 0-7 of 7]"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := Status(tt.job); got != tt.want {
				t.Errorf("Status = %q\n want %q", got, tt.want)
			}
			if got := Status(tt.job); len(got) > StatusRoom {
				t.Errorf("Status is %d bytes, more than StatusRoom", len(got))
			}
		})
	}
}

func TestObjectIsJSON(t *testing.T) {
	j := abi.JobOutput{ID: "job-1", Output: "a\x1b[31m\"b\"\n", NextByte: 9, TotalBytes: 9, ExitCode: intp(0), DurationMS: 5}
	var got map[string]any
	if err := json.Unmarshal(Object(j), &got); err != nil {
		t.Fatalf("%s: %v", Object(j), err)
	}
	if _, ok := got["output"]; ok || got["next_byte"] != float64(9) || got["exit_code"] != float64(0) || got["running"] != false {
		t.Errorf("Object = %v", got)
	}
}

func TestList(t *testing.T) {
	jobs := []abi.JobInfo{
		{ID: "job-b", Command: "python3 -m http.server 8000\nsecond line", Running: true, DurationMS: 2000, TotalBytes: 40, StartedAt: "2026-11-28T20:00:00Z"},
		{ID: "job-a", Command: "make watch", ExitCode: intp(2), DurationMS: 50, StartedAt: "2026-11-28T19:00:00Z"},
	}
	text, obj := List(jobs, 10000)
	for _, want := range []string{"job-b  running  2.0 s  40 bytes  python3 -m http.server 8000 …\n", "job-a  exited with code 2  50 ms  0 bytes  make watch\n"} {
		if !strings.Contains(text, want) {
			t.Errorf("List lacks %q:\n%s", want, text)
		}
	}
	var got struct {
		Jobs  []map[string]any `json:"jobs"`
		Total int              `json:"total"`
	}
	if err := json.Unmarshal(obj, &got); err != nil || got.Total != 2 || len(got.Jobs) != 2 {
		t.Fatalf("List object %s: %v", obj, err)
	}
	if text, _ := List(nil, 1000); !strings.Contains(text, "No background jobs") {
		t.Errorf("empty list: %q", text)
	}
	many := make([]abi.JobInfo, 100)
	for i := range many {
		many[i] = abi.JobInfo{ID: "job-x", Command: strings.Repeat("c", 300)}
	}
	if text, _ := List(many, 2000); len(text) > 2000 || !strings.Contains(text, "older jobs not shown") {
		t.Errorf("long list: %d bytes:\n%s", len(text), text)
	}
}
