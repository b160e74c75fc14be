package main

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/toolhost/toolhost/abi"
	"github.com/toolhost/toolhost/sdk"
)

func goReport(t *testing.T) string {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("testdata", "go_test.json"))
	if err != nil {
		t.Fatal(err)
	}
	return string(data)
}

// How a run that did not simply end is told: killed with part of a
// report, a report cut at the scan limit, a command that failed while
// every test passed.
func TestResultOfUnusualRuns(t *testing.T) {
	report := goReport(t)
	partial := report[:strings.Index(report, `"Test":"TestSkipped"`)]
	pass := `{"Action":"run","Package":"p","Test":"TestA"}` + "\n" + `{"Action":"pass","Package":"p","Test":"TestA"}` + "\n"
	for _, c := range []struct {
		name     string
		res      abi.ExecResult
		errWants []string // the error's message, then its details
		wants    []string // the text, when it is no error
	}{
		{"killed mid-way", abi.ExecResult{ExitCode: -1, Killed: abi.KilledTimeout, DurationMS: 900, Report: partial, ReportBytes: int64(len(partial))},
			[]string{"killed: the tests ran past their timeout (900 ms); the results so far", "FAILED (go): 2 tests: 1 passed, 1 failed", "TestAddWrong"}, nil},
		{"killed before a report", abi.ExecResult{ExitCode: -1, Killed: abi.KilledMemory, Stderr: "building\n", StderrBytes: 9},
			[]string{"could not read the test results: the command wrote no go test -json report", "memory limit", "building"}, nil},
		{"report cut", abi.ExecResult{ExitCode: 1, Report: partial, ReportBytes: 5 << 20, ReportCut: true},
			nil, []string{"FAILED (go): 2 tests", "longer than the scan limit (5242880 bytes)"}},
		{"failed without a failing test", abi.ExecResult{ExitCode: 2, Report: pass, ReportBytes: int64(len(pass)), Stderr: "vet: x.go:3: oops\n", StderrBytes: 18},
			nil, []string{"PASSED (go): 1 tests: 1 passed", "The command failed (exit code 2) though no test did", "[stderr]\nvet: x.go:3: oops"}},
		{"nothing ran", abi.ExecResult{ExitCode: 0, Report: `{"Action":"start","Package":"p"}` + "\n", ReportBytes: 33, Stdout: "no test files\n", StdoutBytes: 14},
			nil, []string{"NO TESTS RAN (go): 0 tests", "no test files"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			text, err := result(&sdk.Call{}, "go", "go test -json ./...", c.res, 64<<10)
			if c.errWants != nil {
				var se *sdk.Error
				if !errors.As(err, &se) || se.Kind != abi.KindExecutionFailed {
					t.Fatalf("result = %q, %v; want ExecutionFailed", text, err)
				}
				all := se.Message + "\n" + string(se.Details)
				for _, w := range c.errWants {
					if !strings.Contains(all, strings.ReplaceAll(w, "\n", `\n`)) && !strings.Contains(all, w) {
						t.Errorf("error lacks %q:\n%s", w, all)
					}
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			for _, w := range c.wants {
				if !strings.Contains(text, w) {
					t.Errorf("text lacks %q:\n%s", w, text)
				}
			}
		})
	}
}

// Many long failures stay within the room given, the text and the
// structured object alike, and say how many they left out.
func TestResultBounded(t *testing.T) {
	var s summary
	for i := range 500 {
		s.Total++
		s.Failed++
		s.Failures = append(s.Failures, failure{Name: "TestN" + strconv.Itoa(i), File: "x_test.go", Line: i + 1, Message: strings.Repeat("why ", 1000)})
	}
	const room = 32 << 10
	text := render("go", s, abi.ExecResult{ExitCode: 1}, room)
	if len(text) > room || !strings.Contains(text, "more failures not shown") || !strings.Contains(text, "FAIL TestN0 at x_test.go:1\n") {
		t.Errorf("text of %d bytes (room %d):\n%.400s ... %s", len(text), room, text, text[max(len(text)-200, 0):])
	}
	obj := structured("go", "go test -json ./...", s, abi.ExecResult{ExitCode: 1}, room)
	var v struct {
		Total    int               `json:"total"`
		Failures []json.RawMessage `json:"failures"`
		Omitted  int               `json:"failures_omitted"`
	}
	if err := json.Unmarshal(obj, &v); err != nil {
		t.Fatalf("structured is not JSON: %v", err)
	}
	if len(obj) > room || v.Total != 500 || len(v.Failures) == 0 || len(v.Failures)+v.Omitted != 500 {
		t.Errorf("structured: %d bytes, total %d, %d failures shown, %d omitted", len(obj), v.Total, len(v.Failures), v.Omitted)
	}
}

// A JUnit report that ends inside an element gives its counts so far
// only when the host says it cut the report; otherwise it is unreadable.
func TestResultCutJUnit(t *testing.T) {
	data, err := os.ReadFile(filepath.Join("testdata", "pytest_junit.xml"))
	if err != nil {
		t.Fatal(err)
	}
	cut := string(data[:strings.Index(string(data), `name="test_skipped"`)])
	text, err := result(&sdk.Call{}, "pytest", "pytest", abi.ExecResult{ExitCode: 1, Report: cut, ReportBytes: 9 << 20, ReportCut: true}, 64<<10)
	if err != nil || !strings.Contains(text, "FAILED (pytest): 2 tests: 1 passed, 1 failed") || !strings.Contains(text, "only its first part") {
		t.Errorf("cut report: %q, %v", text, err)
	}
	_, err = result(&sdk.Call{}, "pytest", "pytest", abi.ExecResult{ExitCode: 1, Report: cut, ReportBytes: int64(len(cut))}, 64<<10)
	if err == nil || !strings.Contains(err.Error(), "could not read the test results: JUnit XML") {
		t.Errorf("a broken report that was not cut: %v, want it unreadable", err)
	}
}
