package main

import (
	"strconv"
	"strings"

	"github.com/toolhost/toolhost/abi"
	"github.com/toolhost/toolhost/sdk"
)

// How much of each failure's message the text shows: the first few
// whole (up to maxMessage), the rest their start.
const (
	fullFailures  = 5
	shortMessage  = 300
	structMessage = 1000
)

// countsLine is "5 tests: 2 passed, 2 failed, 0 errors, 1 skipped".
func countsLine(s summary) string {
	return strconv.Itoa(s.Total) + " tests: " + strconv.Itoa(s.Passed) + " passed, " + strconv.Itoa(s.Failed) + " failed, " +
		strconv.Itoa(s.Errors) + " errors, " + strconv.Itoa(s.Skipped) + " skipped"
}

// render is the text a model acts on, in at most room bytes: a summary
// line, then each failure (errors that kept tests from running first)
// with its place and message.
func render(fw string, s summary, res abi.ExecResult, room int) string {
	var b strings.Builder
	verdict := "PASSED"
	if s.Failed > 0 || s.Errors > 0 {
		verdict = "FAILED"
	} else if s.Total == 0 {
		verdict = "NO TESTS RAN"
	}
	b.WriteString(verdict + " (" + fw + "): " + countsLine(s) + " in " + strconv.FormatInt(res.DurationMS, 10) + " ms, exit code " + strconv.Itoa(res.ExitCode) + "\n")
	if res.ReportCut {
		b.WriteString("The report was longer than the scan limit (" + strconv.FormatInt(res.ReportBytes, 10) + " bytes): these counts cover only its first part; narrow the run with selector.\n")
	}
	tail := ""
	if (s.Failed == 0 && s.Errors == 0 && res.ExitCode != 0) || s.Total == 0 && s.Errors == 0 {
		if s.Total == 0 {
			tail = "\nNo test ran (a selector that matches nothing, or no test files); the command's output:\n"
		} else {
			tail = "\nThe command failed (exit code " + strconv.Itoa(res.ExitCode) + ") though no test did; its output:\n"
		}
		tail += commandOutput(res, max(room/2, 1024))
	}
	for i, f := range s.Failures {
		n := maxMessage
		if i >= fullFailures {
			n = shortMessage
		}
		entry := failureText(f, n)
		if b.Len()+len(entry)+len(tail)+80 > room {
			b.WriteString("\n[" + strconv.Itoa(len(s.Failures)-i) + " more failures not shown; run them alone with selector]\n")
			break
		}
		b.WriteString(entry)
	}
	b.WriteString(tail)
	return b.String()
}

// failureText is one failure: "FAIL name (suite) at file:line" and its
// message indented below, the message at most n bytes.
func failureText(f failure, n int) string {
	kind := "FAIL"
	if f.Error {
		kind = "ERROR"
	}
	s := "\n" + kind + " " + f.Name
	if f.Suite != "" && f.Suite != f.Name {
		s += " (" + f.Suite + ")"
	}
	if f.File != "" {
		s += " at " + f.File
		if f.Line > 0 {
			s += ":" + strconv.Itoa(f.Line)
		}
	}
	s += "\n"
	if msg := clip(f.Message, n); msg != "" {
		s += "    " + strings.ReplaceAll(msg, "\n", "\n    ") + "\n"
	}
	return s
}

// structured is {framework, command, total, passed, failed, errors,
// skipped, duration_ms, exit_code, killed, failures, failures_omitted,
// report, output_id}, at most about room bytes: failures past it are
// counted in failures_omitted.
func structured(fw, cmd string, s summary, res abi.ExecResult, room int) []byte {
	b := head(fw, cmd, res)
	for _, f := range []struct {
		k string
		v int
	}{{"total", s.Total}, {"passed", s.Passed}, {"failed", s.Failed}, {"errors", s.Errors}, {"skipped", s.Skipped}} {
		b = append(b, ',', '"')
		b = append(b, f.k...)
		b = append(b, '"', ':')
		b = strconv.AppendInt(b, int64(f.v), 10)
	}
	b = append(b, `,"failures":[`...)
	omitted := 0
	for i, f := range s.Failures {
		e := failureObject(f)
		if len(b)+len(e)+200 > room {
			omitted = len(s.Failures) - i
			break
		}
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, e...)
	}
	b = append(b, ']')
	if omitted > 0 {
		b = append(b, `,"failures_omitted":`...)
		b = strconv.AppendInt(b, int64(omitted), 10)
	}
	return append(b, '}')
}

func failureObject(f failure) []byte {
	b := append([]byte(`{"name":`), sdk.AppendJSONString(nil, f.Name)...)
	if f.Suite != "" {
		b = append(b, `,"suite":`...)
		b = sdk.AppendJSONString(b, f.Suite)
	}
	if f.File != "" {
		b = append(b, `,"file":`...)
		b = sdk.AppendJSONString(b, f.File)
	}
	if f.Line > 0 {
		b = append(b, `,"line":`...)
		b = strconv.AppendInt(b, int64(f.Line), 10)
	}
	if f.Error {
		b = append(b, `,"error":true`...)
	}
	b = append(b, `,"message":`...)
	b = sdk.AppendJSONString(b, clip(f.Message, structMessage))
	return append(b, '}')
}

// head opens the structured object with what every run has.
func head(fw, cmd string, res abi.ExecResult) []byte {
	b := []byte(`{"framework":`)
	b = sdk.AppendJSONString(b, fw)
	b = append(b, `,"command":`...)
	b = sdk.AppendJSONString(b, cmd)
	b = append(b, `,"exit_code":`...)
	b = strconv.AppendInt(b, int64(res.ExitCode), 10)
	b = append(b, `,"duration_ms":`...)
	b = strconv.AppendInt(b, res.DurationMS, 10)
	if res.Killed != "" {
		b = append(b, `,"killed":`...)
		b = sdk.AppendJSONString(b, res.Killed)
	}
	if res.OutputID != "" {
		b = append(b, `,"output_id":`...)
		b = sdk.AppendJSONString(b, res.OutputID)
	}
	b = append(b, `,"report":{"format":`...)
	b = sdk.AppendJSONString(b, reportFormat(fw))
	b = append(b, `,"bytes":`...)
	b = strconv.AppendInt(b, res.ReportBytes, 10)
	if res.ReportCut {
		b = append(b, `,"cut":true`...)
	}
	return append(b, '}')
}

// unparsedObject is the structured result of a run whose report could
// not be read: no counts, since none are known.
func unparsedObject(fw, cmd string, res abi.ExecResult, why string) []byte {
	b := head(fw, cmd, res)
	b = append(b, `,"parsed":false,"why":`...)
	b = sdk.AppendJSONString(b, why)
	return append(b, '}')
}

// commandOutput is the command's stdout, then its stderr under a
// [stderr] heading, and the start of a report that could not be read,
// in at most room bytes (each part's start and end when it is long).
func commandOutput(res abi.ExecResult, room int) string {
	parts := []struct{ name, head, tail string }{
		{"", res.Stdout, res.StdoutTail},
		{"\n[stderr]\n", res.Stderr, res.StderrTail},
	}
	var b strings.Builder
	share := room / 2
	for i, p := range parts {
		if p.head == "" && p.tail == "" {
			continue
		}
		if i == 1 && b.Len() < share {
			share = room - b.Len() // stderr gets what stdout left
		}
		b.WriteString(p.name)
		b.WriteString(ends(p.head, p.tail, share))
	}
	if res.StdoutCut || res.StderrCut {
		if res.OutputID != "" {
			b.WriteString("\n[the whole output: job_output {\"id\": \"" + res.OutputID + "\", \"since_byte\": 0}]\n")
		}
	}
	if b.Len() == 0 {
		return "(no output)\n"
	}
	return b.String()
}

// ends is head and tail joined in at most n bytes: the start and the end
// with a mark where bytes were left out.
func ends(head, tail string, n int) string {
	whole := head + tail
	if len(whole) <= n {
		return whole
	}
	const mark = "\n[...]\n"
	half := max((n-len(mark))/2, 0)
	end := whole[len(whole)-half:]
	for len(end) > 0 && end[0]&0xC0 == 0x80 {
		end = end[1:]
	}
	return strings.TrimSuffix(clip(whole, half), "…") + mark + end
}
