package abi

import (
	"slices"
	"strconv"
)

// ExecRequest is the request of FnProcExec, sent as JSON
// (AppendExecRequest): one shell command, run by the host under the
// call's confinement. Zero values are the defaults.
type ExecRequest struct {
	// Command is run by the host's shell: bash with pipefail where the
	// host has bash, else sh (ExecResult.Shell says which).
	Command string `json:"command"`
	// Cwd is the working directory as the model gave it; empty is the
	// workspace root. It must be a path argument of the tool.
	Cwd string `json:"cwd,omitempty"`
	// TimeoutMS stops the command after this many milliseconds (0: the
	// call's deadline). The host clamps it to the operator's maximum
	// (tools.run_command.max_timeout_ms) and to the call's deadline.
	TimeoutMS int64 `json:"timeout_ms,omitempty"`
	// Env adds variables to the command's environment. The host refuses
	// names that change how programs load or what the shell runs unseen
	// (LD_*, BASH_ENV, ...), names starting TOOLHOST_, and names the
	// secret filter hides, with the reason.
	Env map[string]string `json:"env,omitempty"`
	// Stdin, when set, is written to the command's standard input, which
	// is then closed. Without it stdin is empty and closed.
	Stdin *string `json:"stdin,omitempty"`
	// Background starts the command as a job of the call's conversation
	// and returns at once with ExecResult.JobID; its output is read with
	// FnProcJob.
	Background bool `json:"background,omitempty"`
	// Report gives the command a private file for a machine-readable
	// report: its path is in $TOOLHOST_REPORT, and what the command
	// wrote there comes back in ExecResult.Report (run_tests uses it for
	// JUnit XML).
	Report bool `json:"report,omitempty"`
}

// Why a command was killed (ExecResult.Killed, JobOutput.Killed).
const (
	KilledTimeout = "timeout" // its timeout_ms or the call's deadline
	KilledCancel  = "cancel"  // the call was cancelled, or job_kill
	KilledMemory  = "memory"  // the memory limit (tools.run_command.memory_max)
	KilledPids    = "pids"    // the process limit (tools.run_command.pids_max)
)

// ExecResult is the response of FnProcExec, sent as JSON.
type ExecResult struct {
	// ExitCode is the command's exit status, -1 when a signal ended it.
	ExitCode int `json:"exit_code"`
	// Signal names the signal that ended it, if one did.
	Signal string `json:"signal,omitempty"`
	// Killed says why the host ended it (the Killed* constants); empty
	// when it ended on its own.
	Killed     string `json:"killed,omitempty"`
	DurationMS int64  `json:"duration_ms"`
	// Shell is the shell that ran the command ("bash" or "sh"), and
	// Pipefail whether a pipeline's status is its last failing
	// command's.
	Shell    string `json:"shell"`
	Pipefail bool   `json:"pipefail"`
	// OutputID names the command's whole output, kept by the host
	// (stdout and stderr interleaved as they were written, up to the
	// operator's cap): FnProcJob's output operation reads it. Empty when
	// it was not kept.
	OutputID string `json:"output_id,omitempty"`
	// JobID names a background command (ExecRequest.Background); the
	// output fields are then empty.
	JobID string `json:"job_id,omitempty"`

	// Stdout and Stderr are the first bytes of each stream, StdoutTail
	// and StderrTail the last ones after those; when a stream's Cut is
	// set, bytes between its head and tail were left out. The totals
	// count everything written: its bytes, and its lines (newlines).
	Stdout      string `json:"stdout,omitempty"`
	StdoutTail  string `json:"stdout_tail,omitempty"`
	StdoutBytes int64  `json:"stdout_bytes"`
	StdoutLines int64  `json:"stdout_lines"`
	StdoutCut   bool   `json:"stdout_cut,omitempty"`
	Stderr      string `json:"stderr,omitempty"`
	StderrTail  string `json:"stderr_tail,omitempty"`
	StderrBytes int64  `json:"stderr_bytes"`
	StderrLines int64  `json:"stderr_lines"`
	StderrCut   bool   `json:"stderr_cut,omitempty"`

	// Report is what the command wrote to $TOOLHOST_REPORT
	// (ExecRequest.Report), at most the call's scan limit; ReportBytes
	// is its size and ReportCut says it was longer than Report.
	Report      string `json:"report,omitempty"`
	ReportBytes int64  `json:"report_bytes,omitempty"`
	ReportCut   bool   `json:"report_cut,omitempty"`
}

// Operations of FnProcJob.
const (
	// JobOutputOp returns a job's output (or a finished call's kept
	// output, by its ExecResult.OutputID) from a byte offset.
	JobOutputOp = "output"
	// JobKillOp sends a job a signal (TERM, then KILL after a grace).
	JobKillOp = "kill"
	// JobListOp lists the conversation's jobs.
	JobListOp = "list"
)

// JobRequest is the request of FnProcJob, sent as JSON
// (AppendJobRequest). A job belongs to the conversation whose call
// started it: another conversation's id is unknown to it.
type JobRequest struct {
	Op string `json:"op"`
	// ID is a job id (ExecResult.JobID) or, for output, a finished
	// call's ExecResult.OutputID.
	ID string `json:"id,omitempty"`
	// SinceByte is where output starts; nil continues where the
	// conversation's previous output operation on ID stopped.
	SinceByte *int64 `json:"since_byte,omitempty"`
	// MaxBytes bounds the output returned (0: the call's output limit).
	MaxBytes int64 `json:"max_bytes,omitempty"`
	// WaitMS waits up to this long, within the call's deadline, for
	// output past SinceByte or for the job to end.
	WaitMS int64 `json:"wait_ms,omitempty"`
	// Signal, for kill: TERM (the default), KILL, INT or HUP.
	Signal string `json:"signal,omitempty"`
}

// JobResult is the response of FnProcJob, sent as JSON: Job for output
// and kill, Jobs for list.
type JobResult struct {
	Job  *JobOutput `json:"job,omitempty"`
	Jobs []JobInfo  `json:"jobs,omitempty"`
}

// JobOutput is a job's state and a piece of its output.
type JobOutput struct {
	ID      string `json:"id"`
	Command string `json:"command"`
	// Output is the bytes from FromByte to NextByte (stdout and stderr
	// interleaved). FromByte is later than the SinceByte asked for when
	// the job's ring no longer held those bytes; SkippedBytes says how
	// many were lost that way.
	Output       string `json:"output"`
	FromByte     int64  `json:"from_byte"`
	NextByte     int64  `json:"next_byte"`
	SkippedBytes int64  `json:"skipped_bytes,omitempty"`
	// TotalBytes is all the job has written so far.
	TotalBytes int64 `json:"total_bytes"`
	Running    bool  `json:"running"`
	// ExitCode is set once the job has ended.
	ExitCode   *int   `json:"exit_code,omitempty"`
	Signal     string `json:"signal,omitempty"`
	Killed     string `json:"killed,omitempty"`
	DurationMS int64  `json:"duration_ms"`
}

// JobInfo describes one job in a list.
type JobInfo struct {
	ID         string `json:"id"`
	Command    string `json:"command"`
	Cwd        string `json:"cwd,omitempty"`
	Running    bool   `json:"running"`
	ExitCode   *int   `json:"exit_code,omitempty"`
	Killed     string `json:"killed,omitempty"`
	StartedAt  string `json:"started_at"` // RFC 3339, UTC
	DurationMS int64  `json:"duration_ms"`
	TotalBytes int64  `json:"total_bytes"`
}

// AppendExecRequest encodes r as JSON after dst, without encoding/json
// (costly in a guest). Env is written in name order.
func AppendExecRequest(dst []byte, r ExecRequest) []byte {
	e := jsonObject{dst: dst}
	e.str("command", r.Command, true)
	e.str("cwd", r.Cwd, false)
	e.num("timeout_ms", r.TimeoutMS)
	if len(r.Env) > 0 {
		e.field("env")
		names := make([]string, 0, len(r.Env))
		for k := range r.Env {
			names = append(names, k)
		}
		slices.Sort(names)
		e.dst = append(e.dst, '{')
		for i, k := range names {
			if i > 0 {
				e.dst = append(e.dst, ',')
			}
			e.dst = appendJSONString(e.dst, k)
			e.dst = append(e.dst, ':')
			e.dst = appendJSONString(e.dst, r.Env[k])
		}
		e.dst = append(e.dst, '}')
	}
	if r.Stdin != nil {
		e.str("stdin", *r.Stdin, true)
	}
	e.flag("background", r.Background)
	e.flag("report", r.Report)
	return e.close()
}

// AppendJobRequest encodes r as JSON after dst, without encoding/json.
func AppendJobRequest(dst []byte, r JobRequest) []byte {
	e := jsonObject{dst: dst}
	e.str("op", r.Op, true)
	e.str("id", r.ID, false)
	if r.SinceByte != nil {
		e.field("since_byte")
		e.dst = strconv.AppendInt(e.dst, *r.SinceByte, 10)
	}
	e.num("max_bytes", r.MaxBytes)
	e.num("wait_ms", r.WaitMS)
	e.str("signal", r.Signal, false)
	return e.close()
}

// jsonObject appends a JSON object's fields.
type jsonObject struct {
	dst   []byte
	count int
}

func (e *jsonObject) field(name string) {
	if e.count == 0 {
		e.dst = append(e.dst, '{')
	} else {
		e.dst = append(e.dst, ',')
	}
	e.count++
	e.dst = appendJSONString(e.dst, name)
	e.dst = append(e.dst, ':')
}

func (e *jsonObject) str(name, v string, always bool) {
	if v != "" || always {
		e.field(name)
		e.dst = appendJSONString(e.dst, v)
	}
}

func (e *jsonObject) num(name string, v int64) {
	if v != 0 {
		e.field(name)
		e.dst = strconv.AppendInt(e.dst, v, 10)
	}
}

func (e *jsonObject) flag(name string, v bool) {
	if v {
		e.field(name)
		e.dst = append(e.dst, "true"...)
	}
}

func (e *jsonObject) close() []byte {
	if e.count == 0 {
		e.dst = append(e.dst, '{')
	}
	return append(e.dst, '}')
}
