// Command run_command is the run_command tool: run a shell command and
// return its output (SRD 3.6.10), or start it in the background as a job
// of the conversation. The host runs the process (proc_exec): its
// confinement, deadline, environment and the output it keeps; the plugin
// checks the arguments and shapes the result.
package main

import (
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/toolhost/toolhost/abi"
	"github.com/toolhost/toolhost/sdk"
)

type args struct {
	Command    string            `json:"command"`
	Cwd        string            `json:"cwd"`
	TimeoutMS  int64             `json:"timeout_ms"`
	Env        map[string]string `json:"env"`
	Stdin      *string           `json:"stdin"`
	Background bool              `json:"background"`
}

const schema = `{
  "type": "object",
  "properties": {
    "command": {"type": "string", "minLength": 1, "description": "Shell command, run with bash -o pipefail -c (sh -c where the host has no bash), so a pipeline fails when any part fails. It runs non-interactively: stdin is empty unless given, CI=1, pagers and git prompts are off, so a command that would ask for input fails instead of waiting."},
    "cwd": {"type": "string", "description": "Working directory, relative to the workspace root. Default: the workspace root."},
    "timeout_ms": {"type": "integer", "minimum": 1, "description": "Stop the command after this many milliseconds and return its output so far (at most the operator's maximum). Default: the tool's deadline."},
    "env": {"type": "object", "maxProperties": 64, "additionalProperties": {"type": "string"}, "description": "Environment variables to add, e.g. {\"GOFLAGS\": \"-count=1\"}. Names that change how programs load or what the shell runs (LD_*, BASH_ENV, ...) and secret-looking names are refused."},
    "stdin": {"type": "string", "description": "Text written to the command's standard input, which is then closed."},
    "background": {"type": "boolean", "default": false, "description": "Start the command in the background and return at once with a job id: for servers and watchers. Read its output with job_output, stop it with job_kill, see jobs with job_list. Jobs are killed when the session ends."}
  },
  "required": ["command"],
  "additionalProperties": false
}`

func init() {
	sdk.Register(sdk.Tool[args]{
		Manifest: abi.Manifest{
			Name:             "run_command",
			Version:          "1.1.0",
			Description:      "Run a shell command in the workspace and return its stdout, followed by its stderr under a [stderr] heading. A non-zero exit status is an error whose details hold the exit code and the output. Long output keeps its start and its end (where errors are) with a note of what was left out; job_output reads the whole by the output_id given. Processes it leaves running are killed when it exits or times out, unless it runs in the background.",
			Parameters:       []byte(schema),
			SideEffecting:    true,
			RequiresApproval: true,
			RiskLevel:        abi.RiskHigh,
			TimeoutClass:     abi.TimeoutShell,
			PathArgs:         []string{"cwd"},
			Nondeterministic: true,
			Capabilities:     []abi.Capability{abi.CapProcExec},
		},
		Summary: summary,
		Handle:  handle,
	})
}

func main() {}

// summary is what approval shows: everything that decides what runs,
// the environment and the input included.
func summary(a args) (string, error) {
	s := "Run command: " + a.Command
	if a.Background {
		s = "Run command in the background: " + a.Command
	}
	if a.Cwd != "" {
		s += "\n  in " + a.Cwd
	}
	for _, k := range sortedKeys(a.Env) {
		s += "\n  env " + k + "=" + strconv.Quote(a.Env[k])
	}
	if a.Stdin != nil {
		s += "\n  stdin " + strconv.Itoa(len(*a.Stdin)) + " bytes: " + strconv.Quote(clip(*a.Stdin, 200))
	}
	if a.TimeoutMS > 0 {
		s += "\n  timeout " + strconv.FormatInt(a.TimeoutMS, 10) + " ms"
	}
	return s, nil
}

func handle(c *sdk.Call, a args) (string, error) {
	res, err := sdk.Exec(abi.ExecRequest{Command: a.Command, Cwd: a.Cwd, TimeoutMS: a.TimeoutMS, Env: a.Env, Stdin: a.Stdin, Background: a.Background})
	if err != nil {
		return "", err
	}
	if a.Background {
		c.SetStructured(jobObject(res))
		return "Started job " + res.JobID + " in the background.\nRead its output with job_output {\"id\": \"" + res.JobID + "\"} (each call returns what is new), stop it with job_kill, list jobs with job_list.\n", nil
	}
	limit := int(c.Limits.OutputLimit())
	if limit <= 0 {
		limit = 100 << 10
	}
	out, omitted := render(res, limit)
	c.SelfLimited()
	c.SetStructured(statusObject(res, omitted))
	if res.ExitCode != 0 || res.Killed != "" {
		return "", failure(res, out, omitted)
	}
	return out, nil
}

const stderrHeader = "\n\n[stderr]\n"

// render is SRD's output shape, stdout then "\n\n[stderr]\n" and stderr
// when there is any, fitted into limit bytes, and the bytes it left out.
// stderr gets at least a quarter of the room when it needs it: that is
// where errors are.
func render(res abi.ExecResult, limit int) (string, int64) {
	out := stream{"stdout", res.Stdout, res.StdoutTail, res.StdoutBytes, res.StdoutLines, res.StdoutCut, res.OutputID}
	if res.StderrBytes == 0 {
		text, omitted := out.fit(limit)
		return text, omitted
	}
	errs := stream{"stderr", res.Stderr, res.StderrTail, res.StderrBytes, res.StderrLines, res.StderrCut, res.OutputID}
	room := max(limit-len(stderrHeader), 0)
	errRoom := min(errs.size(), max(room/4, room-out.size()))
	o, oOmitted := out.fit(room - errRoom)
	e, eOmitted := errs.fit(errRoom)
	return o + stderrHeader + e, oOmitted + eOmitted
}

// stream is one output stream as the host kept it: its start and, when it
// was long, its end.
type stream struct {
	name       string
	head, tail string
	total      int64  // bytes written
	lines      int64  // newlines written
	cut        bool   // bytes between head and tail were not kept
	outputID   string // where the whole output is kept, if it is
}

// noteRoom is the most the stream's omission note takes: the note with
// the largest counts it can have.
func (s stream) noteRoom() int { return len(s.note(s.total, "", "")) }

// size is the room the stream needs to show all the host kept.
func (s stream) size() int {
	if s.cut {
		return len(s.head) + len(s.tail) + s.noteRoom()
	}
	return len(s.head) + len(s.tail)
}

// fit returns the stream in at most room bytes, and the bytes it left
// out: whole if it fits, otherwise its start and end at line boundaries
// around a note saying how much was left out and where all of it is.
func (s stream) fit(room int) (string, int64) {
	if !s.cut && s.size() <= room {
		return s.head + s.tail, 0
	}
	whole := s.head
	if !s.cut {
		whole = s.head + s.tail
	}
	end := s.tail
	if !s.cut {
		end = whole
	}
	avail := max(room-s.noteRoom(), 0)
	// The start gets half the room, or more when the end needs less.
	first := cutAfterLine(whole[:min(len(whole), max(avail/2, avail-len(end)))])
	last := cutBeforeLine(end[len(end)-min(len(end), avail-len(first)):])
	omitted := s.total - int64(len(first)) - int64(len(last))
	return first + s.note(omitted, first, last) + last, omitted
}

// note says what fit left out of the stream: bytes, and lines when the
// host counted them, and how to read the whole.
func (s stream) note(omitted int64, first, last string) string {
	b := []byte("\n[... ")
	if s.lines > 0 {
		shown := int64(countLines(first) + countLines(last))
		b = strconv.AppendInt(b, max(s.lines-shown, 0), 10)
		b = append(b, " lines, "...)
	}
	b = strconv.AppendInt(b, omitted, 10)
	b = append(b, " bytes of "...)
	b = append(b, s.name...)
	b = append(b, " omitted"...)
	if s.outputID != "" {
		b = append(b, "; job_output {\"id\": \""...)
		b = append(b, s.outputID...)
		b = append(b, "\", \"since_byte\": 0} reads the whole output"...)
	}
	return string(append(b, " ...]\n"...))
}

func countLines(s string) int { return strings.Count(s, "\n") }

// cutAfterLine shortens b to its last complete line when one ends in its
// final quarter, else to a UTF-8 boundary.
func cutAfterLine(b string) string {
	if i := strings.LastIndexByte(b, '\n'); i >= 0 && i >= len(b)*3/4 {
		return b[:i+1]
	}
	for i := 0; i < utf8.UTFMax-1 && len(b) > 0; i++ {
		if r, _ := utf8.DecodeLastRuneInString(b); r != utf8.RuneError {
			break
		}
		b = b[:len(b)-1] // part of a character the cut split
	}
	return b
}

// cutBeforeLine starts b at its first complete line when one starts in its
// first quarter, else at a UTF-8 boundary.
func cutBeforeLine(b string) string {
	if i := strings.IndexByte(b, '\n'); i >= 0 && i < len(b)/4 {
		return b[i+1:]
	}
	for i := 0; i < utf8.UTFMax-1 && len(b) > 0 && !utf8.RuneStart(b[0]); i++ {
		b = b[1:]
	}
	return b
}

// failure is ExecutionFailed "exit code N" (SRD 3.6.10), Timeout or
// Cancelled when the host killed the command for its time or the call's
// cancellation, with the status and the output in details.
func failure(res abi.ExecResult, out string, omitted int64) error {
	kind, msg := abi.KindExecutionFailed, "exit code "+strconv.Itoa(res.ExitCode)
	switch {
	case res.Killed == abi.KilledTimeout:
		kind = abi.KindTimeout
		msg = "timed out after " + strconv.FormatInt(res.DurationMS, 10) + " ms: the command and every process it started were killed; the output so far is in the details. Give it a larger timeout_ms (up to the operator's maximum), or run it with background: true and read it with job_output"
	case res.Killed == abi.KilledCancel:
		kind = abi.KindCancelled
		msg = "cancelled: the command and every process it started were killed"
	case res.Killed == abi.KilledMemory:
		msg = "killed: the command reached the memory limit (tools.run_command.memory_max)"
	case res.Killed == abi.KilledPids:
		msg = "killed: the command reached the process limit (tools.run_command.pids_max)"
	case res.ExitCode < 0:
		msg = "killed by a signal"
		if res.Signal != "" {
			msg += " (" + res.Signal + ")"
		}
	}
	details := append(statusFields([]byte(`{"tool":"run_command",`), res, omitted), `,"output":`...)
	details = sdk.AppendJSONString(details, out)
	details = append(details, '}')
	return &sdk.Error{Kind: kind, Message: msg, Details: details}
}

// statusObject is the structured result of a command that ran:
// {exit_code, duration_ms, killed, output_id, omitted_bytes, shell,
// pipefail}.
func statusObject(res abi.ExecResult, omitted int64) []byte {
	return append(statusFields([]byte{'{'}, res, omitted), '}')
}

func statusFields(b []byte, res abi.ExecResult, omitted int64) []byte {
	b = append(b, `"exit_code":`...)
	b = strconv.AppendInt(b, int64(res.ExitCode), 10)
	b = append(b, `,"duration_ms":`...)
	b = strconv.AppendInt(b, res.DurationMS, 10)
	b = append(b, `,"killed":`...)
	if res.Killed == "" {
		b = append(b, "null"...)
	} else {
		b = sdk.AppendJSONString(b, res.Killed)
	}
	if res.Signal != "" {
		b = append(b, `,"signal":`...)
		b = sdk.AppendJSONString(b, res.Signal)
	}
	b = append(b, `,"output_id":`...)
	if res.OutputID == "" {
		b = append(b, "null"...)
	} else {
		b = sdk.AppendJSONString(b, res.OutputID)
	}
	b = append(b, `,"omitted_bytes":`...)
	b = strconv.AppendInt(b, omitted, 10)
	b = append(b, `,"shell":`...)
	b = sdk.AppendJSONString(b, res.Shell)
	b = append(b, `,"pipefail":`...)
	b = strconv.AppendBool(b, res.Pipefail)
	return b
}

// jobObject is the structured result of a background start.
func jobObject(res abi.ExecResult) []byte {
	b := append([]byte(`{"job_id":`), sdk.AppendJSONString(nil, res.JobID)...)
	b = append(b, `,"shell":`...)
	b = sdk.AppendJSONString(b, res.Shell)
	return append(b, '}')
}

func sortedKeys(m map[string]string) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	for i := 1; i < len(keys); i++ { // few keys: insertion sort keeps the guest small
		for j := i; j > 0 && keys[j] < keys[j-1]; j-- {
			keys[j], keys[j-1] = keys[j-1], keys[j]
		}
	}
	return keys
}

// clip shortens s to at most n bytes on a UTF-8 boundary.
func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n] + "…"
}
