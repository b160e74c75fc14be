// Package jobtext words background jobs for a model: the status line
// that ends job_output and job_kill, the structured objects of both, and
// job_list's table. The job plugins share it so a job reads the same in
// each.
package jobtext

import (
	"strconv"
	"strings"

	"github.com/toolhost/toolhost/abi"
	"github.com/toolhost/toolhost/sdk"
)

// StatusRoom is the most Status takes for an id and command of the
// sizes the host allows; job_output leaves it free after the output.
const StatusRoom = 512

// maxCommand is how much of a command a status or list line shows.
const maxCommand = 120

// Status is one line: the job, whether it runs or how it ended, its
// runtime, and where to continue reading.
func Status(j abi.JobOutput) string {
	var b strings.Builder
	b.WriteString("[job ")
	b.WriteString(j.ID)
	b.WriteString(": ")
	b.WriteString(state(j.Running, j.ExitCode, j.Signal, j.Killed))
	b.WriteString(" after ")
	b.WriteString(duration(j.DurationMS))
	b.WriteString("; bytes ")
	b.WriteString(strconv.FormatInt(j.FromByte, 10))
	b.WriteString("-")
	b.WriteString(strconv.FormatInt(j.NextByte, 10))
	b.WriteString(" of ")
	b.WriteString(strconv.FormatInt(j.TotalBytes, 10))
	switch {
	case j.NextByte < j.TotalBytes:
		b.WriteString("; more is waiting: call job_output again")
	case j.Running:
		b.WriteString("; job_output again returns what is new")
	}
	b.WriteString("]")
	return b.String()
}

// state words how a job stands.
func state(running bool, exit *int, signal, killed string) string {
	switch {
	case running:
		return "running"
	case killed != "":
		s := "killed (" + killed + ")"
		if signal != "" {
			s += " by " + signal
		}
		return s
	case exit == nil:
		return "ended"
	case *exit < 0 && signal != "":
		return "ended by signal " + signal
	}
	return "exited with code " + strconv.Itoa(*exit)
}

// duration is milliseconds as a person reads them.
func duration(ms int64) string {
	switch {
	case ms < 1000:
		return strconv.FormatInt(ms, 10) + " ms"
	case ms < 120_000:
		return strconv.FormatFloat(float64(ms)/1000, 'f', 1, 64) + " s"
	}
	return strconv.FormatInt(ms/60_000, 10) + " min " + strconv.FormatInt(ms/1000%60, 10) + " s"
}

// Object is j as a JSON object: where the output shown starts and ends,
// and how the job stands. The output itself is the text only: a model
// pays for every byte, and the text already carries it.
func Object(j abi.JobOutput) []byte {
	b := []byte(`{"id":`)
	b = sdk.AppendJSONString(b, j.ID)
	b = append(b, `,"from_byte":`...)
	b = strconv.AppendInt(b, j.FromByte, 10)
	b = append(b, `,"next_byte":`...)
	b = strconv.AppendInt(b, j.NextByte, 10)
	if j.SkippedBytes > 0 {
		b = append(b, `,"skipped_bytes":`...)
		b = strconv.AppendInt(b, j.SkippedBytes, 10)
	}
	b = append(b, `,"total_bytes":`...)
	b = strconv.AppendInt(b, j.TotalBytes, 10)
	b = append(b, `,"running":`...)
	b = strconv.AppendBool(b, j.Running)
	b = appendEnd(b, j.ExitCode, j.Signal, j.Killed)
	b = append(b, `,"duration_ms":`...)
	b = strconv.AppendInt(b, j.DurationMS, 10)
	return append(b, '}')
}

func appendEnd(b []byte, exit *int, signal, killed string) []byte {
	if exit != nil {
		b = append(b, `,"exit_code":`...)
		b = strconv.AppendInt(b, int64(*exit), 10)
	}
	if signal != "" {
		b = append(b, `,"signal":`...)
		b = sdk.AppendJSONString(b, signal)
	}
	if killed != "" {
		b = append(b, `,"killed":`...)
		b = sdk.AppendJSONString(b, killed)
	}
	return b
}

// List is job_list's text, within limit bytes, and its object
// {"jobs": [...], "total": n}.
func List(jobs []abi.JobInfo, limit int) (string, []byte) {
	if limit <= 0 {
		limit = 100 << 10
	}
	var b strings.Builder
	obj := []byte(`{"jobs":[`)
	if len(jobs) == 0 {
		b.WriteString("No background jobs in this conversation. run_command with background: true starts one.\n")
	}
	shown := 0
	for _, j := range jobs {
		line := j.ID + "  " + state(j.Running, j.ExitCode, "", j.Killed) + "  " + duration(j.DurationMS) + "  " +
			strconv.FormatInt(j.TotalBytes, 10) + " bytes  " + clip(oneLine(j.Command), maxCommand) + "\n"
		if b.Len()+len(line) > limit-100 {
			break
		}
		b.WriteString(line)
		if shown > 0 {
			obj = append(obj, ',')
		}
		obj = append(obj, `{"id":`...)
		obj = sdk.AppendJSONString(obj, j.ID)
		obj = append(obj, `,"command":`...)
		obj = sdk.AppendJSONString(obj, clip(j.Command, 4*maxCommand))
		if j.Cwd != "" {
			obj = append(obj, `,"cwd":`...)
			obj = sdk.AppendJSONString(obj, j.Cwd)
		}
		obj = append(obj, `,"running":`...)
		obj = strconv.AppendBool(obj, j.Running)
		obj = appendEnd(obj, j.ExitCode, "", j.Killed)
		obj = append(obj, `,"started_at":`...)
		obj = sdk.AppendJSONString(obj, j.StartedAt)
		obj = append(obj, `,"duration_ms":`...)
		obj = strconv.AppendInt(obj, j.DurationMS, 10)
		obj = append(obj, `,"total_bytes":`...)
		obj = strconv.AppendInt(obj, j.TotalBytes, 10)
		obj = append(obj, '}')
		shown++
	}
	if shown < len(jobs) {
		b.WriteString("[... " + strconv.Itoa(len(jobs)-shown) + " older jobs not shown ...]\n")
	}
	obj = append(obj, `],"total":`...)
	obj = strconv.AppendInt(obj, int64(len(jobs)), 10)
	return b.String(), append(obj, '}')
}

// oneLine keeps a multi-line command on its line.
func oneLine(s string) string {
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		return s[:i] + " …"
	}
	return s
}

// clip shortens s to at most n bytes on a UTF-8 boundary.
func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && s[n]&0xC0 == 0x80 {
		n--
	}
	return s[:n] + "…"
}
