package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"encoding/xml"
	"errors"
	"io"
	"strconv"
	"strings"
	"unicode/utf16"
	"unicode/utf8"
)

// Bounds of what a parsed report keeps: a failure's message, and the
// output gathered for one Go test while it runs.
const (
	maxMessage    = 2000
	maxTestOutput = 8 << 10
)

// summary is what a test report says: the counts of test cases and the
// ones that did not pass, in the order the report gave them (errors that
// kept tests from running first).
type summary struct {
	Total, Passed, Failed, Errors, Skipped int
	Failures                               []failure
}

// failure is one test that failed, or an error outside a test (a
// package that did not build, a file that did not load).
type failure struct {
	Name    string
	Suite   string // package, class or file the test is in, when the report names one
	File    string
	Line    int
	Message string
	Error   bool // an error rather than a failed assertion
}

// errNoTests is a report that holds no test results at all: not
// evidence that there were none, so its caller says it could not read
// one.
var errNoTests = errors.New("the report holds no test results")

// goEvent is one line of `go test -json` (cmd/test2json), with the build
// events go test adds since Go 1.24.
type goEvent struct {
	Action      string
	Package     string
	Test        string
	Output      string
	ImportPath  string
	FailedBuild string
}

type goTest struct {
	pkg, name string
	result    string // pass, fail, skip
	output    []byte
}

// parseGoJSON reads the test2json events of `go test -json`. A test with
// subtests is counted by its subtests alone (its result is theirs),
// unless it failed while they all passed. A package that failed with no
// failed test (it did not build, or its TestMain or a timeout ended it)
// counts as an error with its output.
func parseGoJSON(report []byte) (summary, error) {
	var (
		tests     []*goTest
		running   = map[string]*goTest{} // package + "\x00" + test
		pkgOutput = map[string][]byte{}
		buildOut  = map[string][]byte{} // by ImportPath
		pkgFailed []string
		sawEvent  bool
		lineNo    int
	)
	sc := bufio.NewScanner(bytes.NewReader(report))
	sc.Buffer(make([]byte, 64<<10), 4<<20)
	for sc.Scan() {
		lineNo++
		line := bytes.TrimSpace(sc.Bytes())
		if len(line) == 0 || line[0] != '{' {
			continue // go writes plain text (a "no Go files" note, say) beside the events
		}
		var ev goEvent
		if !decodeGoEvent(line, &ev) {
			ev = goEvent{}
			if err := json.Unmarshal(line, &ev); err != nil {
				continue // a line cut off by the report's size limit
			}
		}
		sawEvent = true
		switch {
		case ev.Action == "build-output":
			buildOut[ev.ImportPath] = appendBounded(buildOut[ev.ImportPath], ev.Output)
		case ev.Test != "":
			key := ev.Package + "\x00" + ev.Test
			t := running[key]
			if t == nil {
				t = &goTest{pkg: ev.Package, name: ev.Test}
				running[key] = t
				tests = append(tests, t)
			}
			switch ev.Action {
			case "output":
				t.output = appendBounded(t.output, ev.Output)
			case "pass", "fail", "skip":
				t.result = ev.Action
			}
		case ev.Action == "output":
			pkgOutput[ev.Package] = appendBounded(pkgOutput[ev.Package], ev.Output)
		case ev.Action == "fail" && ev.Package != "":
			pkgFailed = append(pkgFailed, ev.Package)
			if ev.FailedBuild != "" {
				pkgOutput[ev.Package] = append(append([]byte{}, buildOut[ev.FailedBuild]...), pkgOutput[ev.Package]...)
			}
		}
	}
	if err := sc.Err(); err != nil {
		return summary{}, errors.New("go test -json line " + strconv.Itoa(lineNo+1) + ": " + err.Error())
	}
	if !sawEvent {
		return summary{}, errors.New("no go test -json events in the report")
	}

	parents := map[string]bool{}
	for _, t := range tests {
		if i := strings.LastIndexByte(t.name, '/'); i > 0 {
			for p := t.name[:i]; ; {
				parents[t.pkg+"\x00"+p] = true
				j := strings.LastIndexByte(p, '/')
				if j < 0 {
					break
				}
				p = p[:j]
			}
		}
	}
	failedUnder := map[string]bool{} // a parent with a failed subtest
	for _, t := range tests {
		if t.result == "fail" {
			for p := t.name; ; {
				j := strings.LastIndexByte(p, '/')
				if j < 0 {
					break
				}
				p = p[:j]
				failedUnder[t.pkg+"\x00"+p] = true
			}
		}
	}

	var s summary
	pkgHasFailure := map[string]bool{}
	var testFailures []failure
	for _, t := range tests {
		key := t.pkg + "\x00" + t.name
		if parents[key] && (t.result != "fail" || failedUnder[key]) {
			continue
		}
		switch t.result {
		case "pass":
			s.Total++
			s.Passed++
		case "skip":
			s.Total++
			s.Skipped++
		case "fail":
			s.Total++
			s.Failed++
			pkgHasFailure[t.pkg] = true
			f := failure{Name: t.name, Suite: t.pkg}
			f.File, f.Line, f.Message = goFailureText(t.output)
			testFailures = append(testFailures, f)
		default:
			// Started and never ended: the run was stopped (a timeout,
			// a panic in another test). Not counted; the package's
			// failure says why.
		}
	}
	for _, pkg := range pkgFailed {
		if pkgHasFailure[pkg] {
			continue
		}
		s.Errors++
		msg := strings.TrimSpace(string(pkgOutput[pkg]))
		file, line := "", 0
		for _, l := range strings.Split(msg, "\n") {
			if f, n, _, ok := fileLine(strings.TrimSpace(l)); ok {
				file, line = f, n
				break
			}
		}
		s.Failures = append(s.Failures, failure{Name: pkg, Suite: pkg, File: file, Line: line, Message: clip(msg, maxMessage), Error: true})
	}
	s.Failures = append(s.Failures, testFailures...)
	return s, nil
}

// decodeGoEvent reads one test2json event, a flat object of strings and
// numbers, without encoding/json's reflection, which in a guest costs
// ten times as much (a 5 MB report). It reports false for anything it
// does not expect; encoding/json then reads the line.
func decodeGoEvent(b []byte, ev *goEvent) bool {
	i := 1 // past '{'
	for {
		for i < len(b) && (b[i] == ' ' || b[i] == ',') {
			i++
		}
		if i < len(b) && b[i] == '}' {
			return true
		}
		key, n, ok := jsonString(b, i)
		if !ok || n >= len(b) || b[n] != ':' {
			return false
		}
		i = n + 1
		if i < len(b) && b[i] == '"' {
			var v string
			if v, i, ok = jsonString(b, i); !ok {
				return false
			}
			switch key {
			case "Action":
				ev.Action = v
			case "Package":
				ev.Package = v
			case "Test":
				ev.Test = v
			case "Output":
				ev.Output = v
			case "ImportPath":
				ev.ImportPath = v
			case "FailedBuild":
				ev.FailedBuild = v
			}
			continue
		}
		for i < len(b) && (b[i] >= '0' && b[i] <= '9' || b[i] == '.' || b[i] == '-' || b[i] == '+' || b[i] == 'e' || b[i] == 'E') {
			i++ // a number (Elapsed)
		}
		if i >= len(b) || b[i] != ',' && b[i] != '}' {
			return false // true, false, null, an object: not test2json's
		}
	}
}

// jsonString reads the JSON string starting at b[i] ('"'), and returns
// it and the index past it.
func jsonString(b []byte, i int) (string, int, bool) {
	if i >= len(b) || b[i] != '"' {
		return "", 0, false
	}
	i++
	start := i
	for i < len(b) && b[i] != '"' && b[i] != '\\' {
		i++
	}
	if i < len(b) && b[i] == '"' {
		return string(b[start:i]), i + 1, true // no escapes: most strings
	}
	out := append([]byte{}, b[start:i]...)
	for i < len(b) {
		c := b[i]
		switch {
		case c == '"':
			return string(out), i + 1, true
		case c != '\\':
			out = append(out, c)
			i++
			continue
		}
		if i+1 >= len(b) {
			return "", 0, false
		}
		switch b[i+1] {
		case '"', '\\', '/':
			out = append(out, b[i+1])
		case 'b':
			out = append(out, '\b')
		case 'f':
			out = append(out, '\f')
		case 'n':
			out = append(out, '\n')
		case 'r':
			out = append(out, '\r')
		case 't':
			out = append(out, '\t')
		case 'u':
			r, n := jsonRune(b, i)
			if n == 0 {
				return "", 0, false
			}
			out = utf8.AppendRune(out, r)
			i += n
			continue
		default:
			return "", 0, false
		}
		i += 2
	}
	return "", 0, false
}

// jsonRune reads a \uXXXX escape at b[i] (a surrogate pair as one rune)
// and returns the rune and the bytes it took, 0 when it is malformed.
func jsonRune(b []byte, i int) (rune, int) {
	hex := func(j int) rune {
		if j+6 > len(b) || b[j] != '\\' || b[j+1] != 'u' {
			return -1
		}
		v, err := strconv.ParseUint(string(b[j+2:j+6]), 16, 16)
		if err != nil {
			return -1
		}
		return rune(v)
	}
	r := hex(i)
	if r < 0 {
		return 0, 0
	}
	if utf16.IsSurrogate(r) {
		if r2 := hex(i + 6); r2 >= 0 {
			if d := utf16.DecodeRune(r, r2); d != utf8.RuneError {
				return d, 12
			}
		}
		return utf8.RuneError, 6
	}
	return r, 6
}

// goFailureText is a failed Go test's location and message from its
// output: the lines the test logged, without go test's own "=== RUN" and
// "--- FAIL" lines; the first "file.go:N: " prefix gives the location.
func goFailureText(out []byte) (file string, line int, msg string) {
	var b strings.Builder
	for _, l := range strings.Split(string(out), "\n") {
		t := strings.TrimSpace(l)
		if t == "" || strings.HasPrefix(t, "=== ") || strings.HasPrefix(t, "--- FAIL") || strings.HasPrefix(t, "--- PASS") || strings.HasPrefix(t, "--- SKIP") {
			continue
		}
		if file == "" {
			if f, n, rest, ok := fileLine(t); ok {
				file, line, t = f, n, rest
			}
		}
		if b.Len() > 0 {
			b.WriteByte('\n')
		}
		b.WriteString(t)
	}
	return file, line, clip(b.String(), maxMessage)
}

// fileLine splits "name.go:12: rest" (or "name.go:12:5: rest").
func fileLine(s string) (file string, line int, rest string, ok bool) {
	i := strings.Index(s, ".go:")
	if i <= 0 || strings.ContainsAny(s[:i], " \t") {
		return "", 0, "", false
	}
	file = s[:i+3]
	r := s[i+4:]
	j := 0
	for j < len(r) && r[j] >= '0' && r[j] <= '9' {
		j++
	}
	if j == 0 || j >= len(r) || r[j] != ':' {
		return "", 0, "", false
	}
	n, _ := strconv.Atoi(r[:j])
	r = r[j+1:]
	if k := 0; len(r) > 0 && r[0] >= '0' && r[0] <= '9' { // a column
		for k < len(r) && r[k] >= '0' && r[k] <= '9' {
			k++
		}
		if k < len(r) && r[k] == ':' {
			r = r[k+1:]
		}
	}
	return file, n, strings.TrimSpace(r), true
}

func appendBounded(b []byte, s string) []byte {
	if room := maxTestOutput - len(b); room > 0 {
		if len(s) > room {
			s = s[:room]
		}
		b = append(b, s...)
	}
	return b
}

// junitStyle says how a JUnit report's producer names things.
type junitStyle int

const (
	junitPytest junitStyle = iota // file and line attributes (junit_family=xunit1), "path:N: Error" closing the text
	junitNode                     // a test with subtests is a nested testsuite; locations in the stack trace
	junitVitest                   // name is "describe > test", classname the file
)

// parseJUnit reads a JUnit XML report: every testcase is one test,
// failed (a failure), an error (an error), skipped (skipped) or passed.
func parseJUnit(report []byte, style junitStyle) (summary, error) {
	d := xml.NewDecoder(bytes.NewReader(report))
	d.Strict = false
	var (
		s      summary
		suites []string // names of the open testsuites
		cur    *failure // the open testcase
		status string   // its failure, error or skipped
		inBody bool
		body   strings.Builder
		seen   bool
		open   int // elements started and not yet ended
	)
	for {
		tok, err := d.RawToken() // no namespace translation: a third cheaper
		if err == io.EOF && open > 0 {
			err = errors.New("the report ends inside an element")
		}
		if err == io.EOF {
			break
		}
		if err != nil {
			// The counts so far stand only for a report known to be cut
			// (its caller decides).
			return s, errors.New("JUnit XML: " + err.Error())
		}
		switch t := tok.(type) {
		case xml.StartElement:
			open++
			switch t.Name.Local {
			case "testsuites":
				seen = true
			case "testsuite":
				seen = true
				suites = append(suites, attr(t, "name"))
			case "testcase":
				seen = true
				cur = &failure{Name: attr(t, "name"), Suite: attr(t, "classname"), File: attr(t, "file")}
				if n, err := strconv.Atoi(attr(t, "line")); err == nil && n >= 0 {
					cur.Line = n + 1 // pytest counts lines from 0
				}
				if style == junitNode {
					cur.Suite = ""
					// Node writes a test with subtests as a testsuite.
					if len(suites) > 0 {
						cur.Name = strings.Join(append(suites[:len(suites):len(suites)], cur.Name), " > ")
					}
				}
				status = ""
			case "failure", "error", "skipped":
				if cur == nil {
					continue // a suite-level element
				}
				if status == "" || t.Name.Local != "skipped" {
					status = t.Name.Local
				}
				if t.Name.Local != "skipped" {
					cur.Message = attr(t, "message")
					cur.Error = t.Name.Local == "error"
					inBody = true
					body.Reset()
				}
			}
		case xml.CharData:
			if inBody && body.Len() < maxTestOutput {
				body.Write(t)
			}
		case xml.EndElement:
			open--
			switch t.Name.Local {
			case "testsuite":
				if len(suites) > 0 {
					suites = suites[:len(suites)-1]
				}
			case "failure", "error":
				inBody = false
			case "testcase":
				if cur == nil {
					continue
				}
				s.Total++
				switch status {
				case "":
					s.Passed++
				case "skipped":
					s.Skipped++
				default:
					if status == "error" {
						s.Errors++
					} else {
						s.Failed++
					}
					junitLocate(cur, body.String(), style)
					if cur.Message == "" {
						cur.Message = strings.TrimSpace(body.String())
					}
					cur.Message = clip(strings.TrimSpace(cur.Message), maxMessage)
					s.Failures = append(s.Failures, *cur)
				}
				cur = nil
			}
		}
	}
	if !seen {
		return summary{}, errNoTests
	}
	return s, nil
}

// junitLocate sets where a test failed from the failure's text: the last
// "path:N: Error" line pytest ends it with, or the first frame of a
// JavaScript stack trace (of its cause, when it has one) in a file of
// the project rather than of node itself.
func junitLocate(f *failure, text string, style junitStyle) {
	lines := strings.Split(text, "\n")
	if style == junitPytest {
		for i := len(lines) - 1; i >= 0; i-- {
			l := strings.TrimSpace(lines[i])
			c := strings.Index(l, ":")
			if c <= 0 || strings.ContainsAny(l[:c], " \t") {
				continue
			}
			r := l[c+1:]
			j := 0
			for j < len(r) && r[j] >= '0' && r[j] <= '9' {
				j++
			}
			if j > 0 && j < len(r) && r[j] == ':' {
				n, _ := strconv.Atoi(r[:j])
				f.File, f.Line = l[:c], n
				return
			}
		}
		return
	}
	start := 0
	for i, l := range lines {
		if strings.HasPrefix(strings.TrimSpace(l), "cause:") {
			start = i
			break
		}
	}
	for _, l := range lines[start:] {
		l = strings.TrimSpace(l)
		var loc string
		switch {
		case strings.HasPrefix(l, "at "): // V8's stack frame
			loc = l[len("at "):]
		case strings.HasPrefix(l, "❯ "): // vitest's
			loc = l[len("❯ "):]
		default:
			continue
		}
		if i := strings.LastIndexByte(loc, '('); i >= 0 && strings.HasSuffix(loc, ")") {
			loc = loc[i+1 : len(loc)-1]
		}
		if strings.HasPrefix(loc, "node:") || strings.Contains(loc, "/node_modules/") {
			continue
		}
		loc = strings.TrimPrefix(loc, "file://")
		// path:line:col
		c2 := strings.LastIndexByte(loc, ':')
		if c2 <= 0 {
			continue
		}
		c1 := strings.LastIndexByte(loc[:c2], ':')
		if c1 <= 0 {
			continue
		}
		n, err := strconv.Atoi(loc[c1+1 : c2])
		if err != nil {
			continue
		}
		f.File, f.Line = loc[:c1], n
		return
	}
}

func attr(e xml.StartElement, name string) string {
	for _, a := range e.Attr {
		if a.Name.Local == name {
			return a.Value
		}
	}
	return ""
}

// jestReport is the part of `jest --json` run_tests reads.
type jestReport struct {
	TestResults []struct {
		Name             string `json:"name"`
		Status           string `json:"status"`
		Message          string `json:"message"`
		AssertionResults []struct {
			AncestorTitles  []string `json:"ancestorTitles"`
			Title           string   `json:"title"`
			Status          string   `json:"status"`
			FailureMessages []string `json:"failureMessages"`
			Location        *struct {
				Line int `json:"line"`
			} `json:"location"`
		} `json:"assertionResults"`
	} `json:"testResults"`
}

// parseJest reads the report of `jest --json`: each assertion result is
// a test; a test file that failed without results (it did not load)
// counts as an error.
func parseJest(report []byte) (summary, error) {
	var r jestReport
	if err := json.Unmarshal(report, &r); err != nil {
		return summary{}, errors.New("jest --json: " + err.Error())
	}
	if r.TestResults == nil {
		return summary{}, errNoTests
	}
	var s summary
	var errs []failure
	for _, file := range r.TestResults {
		if len(file.AssertionResults) == 0 && file.Status == "failed" {
			s.Errors++
			errs = append(errs, failure{Name: file.Name, File: file.Name, Message: clip(stripANSI(file.Message), maxMessage), Error: true})
			continue
		}
		for _, a := range file.AssertionResults {
			s.Total++
			switch a.Status {
			case "passed":
				s.Passed++
			case "failed":
				s.Failed++
				f := failure{Name: strings.Join(append(a.AncestorTitles[:len(a.AncestorTitles):len(a.AncestorTitles)], a.Title), " > "), File: file.Name,
					Message: clip(strings.TrimSpace(stripANSI(strings.Join(a.FailureMessages, "\n"))), maxMessage)}
				if a.Location != nil {
					f.Line = a.Location.Line
				}
				s.Failures = append(s.Failures, f)
			default: // pending, skipped, todo, disabled
				s.Skipped++
			}
		}
	}
	s.Failures = append(errs, s.Failures...)
	return s, nil
}

// parseCargo reads libtest's text output (`cargo test`): a line
// "test NAME ... ok|FAILED|ignored" for each test, and a "---- NAME
// stdout ----" block with each failure's output. libtest's JSON format
// needs a nightly toolchain (-Z unstable-options), so the text it is.
// Compiler errors ("error[E...]" or "error: could not compile") count as
// an error each.
func parseCargo(out []byte) (summary, error) {
	var (
		s        summary
		saw      bool
		failed   = map[string]int{} // name -> index in s.Failures
		block    string
		blockBuf strings.Builder
		compile  strings.Builder
		noBuild  bool
	)
	flush := func() {
		if block == "" {
			return
		}
		if i, ok := failed[block]; ok {
			msg := strings.TrimSpace(blockBuf.String())
			f := &s.Failures[i]
			for _, l := range strings.Split(msg, "\n") {
				// thread 'x' panicked at src/lib.rs:10:9:
				if i := strings.Index(l, "panicked at "); i >= 0 {
					loc := strings.TrimSuffix(strings.TrimSpace(l[i+len("panicked at "):]), ":")
					if c2 := strings.LastIndexByte(loc, ':'); c2 > 0 {
						if c1 := strings.LastIndexByte(loc[:c2], ':'); c1 > 0 {
							if n, err := strconv.Atoi(loc[c1+1 : c2]); err == nil {
								f.File, f.Line = loc[:c1], n
							}
						}
					}
				}
			}
			f.Message = clip(msg, maxMessage)
		}
		block = ""
		blockBuf.Reset()
	}
	for _, l := range strings.Split(string(out), "\n") {
		l = strings.TrimRight(l, "\r")
		switch {
		case strings.HasPrefix(l, "---- ") && strings.HasSuffix(l, " stdout ----"):
			flush()
			block = strings.TrimSuffix(strings.TrimPrefix(l, "---- "), " stdout ----")
			continue
		case block != "" && (l == "failures:" || strings.HasPrefix(l, "test result:")):
			flush()
		case block != "":
			blockBuf.WriteString(l)
			blockBuf.WriteByte('\n')
			continue
		}
		if strings.HasPrefix(l, "test ") && strings.Contains(l, " ... ") {
			i := strings.LastIndex(l, " ... ")
			name, res := l[len("test "):i], l[i+len(" ... "):]
			saw = true
			switch {
			case res == "ok":
				s.Total++
				s.Passed++
			case res == "FAILED":
				s.Total++
				s.Failed++
				failed[name] = len(s.Failures)
				s.Failures = append(s.Failures, failure{Name: name})
			case strings.HasPrefix(res, "ignored"):
				s.Total++
				s.Skipped++
			}
			continue
		}
		if strings.HasPrefix(l, "test result:") || strings.HasPrefix(l, "running ") {
			saw = true
		}
		if strings.HasPrefix(l, "error[") || strings.HasPrefix(l, "error: ") && !strings.HasPrefix(l, "error: test failed") && !strings.Contains(l, " targets failed") {
			if compile.Len() > 0 {
				compile.WriteByte('\n')
			}
			compile.WriteString(l)
			if strings.HasPrefix(l, "error: could not compile") {
				noBuild = true
				saw = true
			}
		}
	}
	flush()
	if noBuild {
		s.Errors++
		s.Failures = append([]failure{{Name: "cargo build", Message: clip(compile.String(), maxMessage), Error: true}}, s.Failures...)
	}
	if !saw {
		return summary{}, errNoTests
	}
	return s, nil
}

// stripANSI removes terminal colour sequences (jest writes them into
// failure messages).
func stripANSI(s string) string {
	if !strings.Contains(s, "\x1b[") {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == 0x1b && i+1 < len(s) && s[i+1] == '[' {
			j := i + 2
			for j < len(s) && (s[j] < 0x40 || s[j] > 0x7e) {
				j++
			}
			i = j
			continue
		}
		b.WriteByte(s[i])
	}
	return b.String()
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
