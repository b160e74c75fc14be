// Command run_command is the run_command tool: run a shell command and
// return its output (SRD 3.6.10). The host runs the process; the plugin
// only shapes the result.
package main

import (
	"bytes"
	"strconv"
	"unicode/utf8"

	"github.com/toolhost/toolhost/abi"
	"github.com/toolhost/toolhost/sdk"
)

type args struct {
	Command string `json:"command"`
	Cwd     string `json:"cwd"`
}

const schema = `{
  "type": "object",
  "properties": {
    "command": {"type": "string", "minLength": 1, "description": "Shell command, run with sh -c. stdin is closed: it must not wait for input."},
    "cwd": {"type": "string", "description": "Working directory, relative to the workspace root. Default: the workspace root."}
  },
  "required": ["command"],
  "additionalProperties": false
}`

func init() {
	sdk.Register(sdk.Tool[args]{
		Manifest: abi.Manifest{
			Name:             "run_command",
			Version:          "1.0.0",
			Description:      "Run a shell command (sh -c) in the workspace and return its stdout, followed by its stderr under a [stderr] heading. A non-zero exit status is an error whose details hold the output. Processes it leaves running are killed when it exits or times out.",
			Parameters:       []byte(schema),
			SideEffecting:    true,
			RequiresApproval: true,
			RiskLevel:        abi.RiskHigh,
			TimeoutClass:     abi.TimeoutShell,
			PathArgs:         []string{"cwd"},
			Nondeterministic: true,
			Capabilities:     []abi.Capability{abi.CapProcExec},
		},
		Summary: func(a args) (string, error) { return "Run command: " + a.Command, nil },
		Handle:  handle,
	})
}

func main() {}

func handle(c *sdk.Call, a args) (string, error) {
	res, err := sdk.Run(a.Command, a.Cwd)
	if err != nil {
		return "", err
	}
	limit := int(c.Limits.OutputLimit())
	if limit <= 0 {
		limit = 100 << 10
	}
	out := render(res, limit)
	c.SelfLimited()
	if res.ExitCode != 0 {
		return "", failure(res, out)
	}
	return out, nil
}

const stderrHeader = "\n\n[stderr]\n"

// render is SRD's output shape, stdout then "\n\n[stderr]\n" and stderr
// when there is any, fitted into limit bytes. stderr gets at least a
// quarter of the room when it needs it: that is where errors are.
func render(res abi.ProcResult, limit int) string {
	out := stream{"stdout", res.Stdout, res.StdoutTail, res.StdoutBytes, res.Flags&abi.ProcStdoutCut != 0}
	if res.StderrBytes == 0 {
		return out.fit(limit)
	}
	errs := stream{"stderr", res.Stderr, res.StderrTail, res.StderrBytes, res.Flags&abi.ProcStderrCut != 0}
	room := max(limit-len(stderrHeader), 0)
	errRoom := min(errs.size(), max(room/4, room-out.size()))
	return out.fit(room-errRoom) + stderrHeader + errs.fit(errRoom)
}

// stream is one output stream as the host kept it: its start and, when it
// was long, its end.
type stream struct {
	name       string
	head, tail []byte
	total      int64
	cut        bool // bytes between head and tail were not kept
}

// noteRoom is the most an omission note takes.
const noteRoom = 64

// size is the room the stream needs to show all the host kept.
func (s stream) size() int {
	if s.cut {
		return len(s.head) + len(s.tail) + noteRoom
	}
	return len(s.head) + len(s.tail)
}

// fit returns the stream in at most room bytes: whole if it fits,
// otherwise its start and end at line boundaries around a note saying how
// much was left out.
func (s stream) fit(room int) string {
	if !s.cut && s.size() <= room {
		return string(s.head) + string(s.tail)
	}
	whole := s.head
	if !s.cut {
		whole = append(append([]byte(nil), s.head...), s.tail...)
	}
	end := s.tail
	if !s.cut {
		end = whole
	}
	avail := max(room-noteRoom, 0)
	// The start gets half the room, or more when the end needs less.
	first := cutAfterLine(whole[:min(len(whole), max(avail/2, avail-len(end)))])
	last := cutBeforeLine(end[len(end)-min(len(end), avail-len(first)):])
	omitted := s.total - int64(len(first)) - int64(len(last))
	note := "\n[... " + strconv.FormatInt(omitted, 10) + " bytes of " + s.name + " omitted ...]\n"
	return string(first) + note + string(last)
}

// cutAfterLine shortens b to its last complete line when one ends in its
// final quarter, else to a UTF-8 boundary.
func cutAfterLine(b []byte) []byte {
	if i := bytes.LastIndexByte(b, '\n'); i >= 0 && i >= len(b)*3/4 {
		return b[:i+1]
	}
	for i := 0; i < utf8.UTFMax-1 && len(b) > 0; i++ {
		if r, _ := utf8.DecodeLastRune(b); r != utf8.RuneError {
			break
		}
		b = b[:len(b)-1] // part of a character the cut split
	}
	return b
}

// cutBeforeLine starts b at its first complete line when one starts in its
// first quarter, else at a UTF-8 boundary.
func cutBeforeLine(b []byte) []byte {
	if i := bytes.IndexByte(b, '\n'); i >= 0 && i < len(b)/4 {
		return b[i+1:]
	}
	for i := 0; i < utf8.UTFMax-1 && len(b) > 0 && !utf8.RuneStart(b[0]); i++ {
		b = b[1:]
	}
	return b
}

// failure is ExecutionFailed "exit code N" (SRD 3.6.10), with the exit
// status and the output in details.
func failure(res abi.ProcResult, out string) error {
	msg := "exit code " + strconv.Itoa(int(res.ExitCode))
	if res.ExitCode < 0 {
		msg = "killed by a signal"
	}
	details := []byte(`{"tool":"run_command","exit_code":`)
	details = strconv.AppendInt(details, int64(res.ExitCode), 10)
	details = append(details, `,"output":`...)
	details = sdk.AppendJSONString(details, out)
	details = append(details, '}')
	return &sdk.Error{Kind: abi.KindExecutionFailed, Message: msg, Details: details}
}
