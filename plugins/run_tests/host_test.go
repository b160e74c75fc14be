//go:build !wasip1

// These tests drive the host, which builds natively only (make lint also
// vets the plugins for wasip1).

package main

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/toolhost/toolhost/host"
	"github.com/toolhost/toolhost/internal/testenv"
	"github.com/toolhost/toolhost/internal/testplugin"
)

// runTestsHost opens a host with the built run_tests plugin on a copy of
// the fixture project dir, its commands confined by the toolhost binary
// as a user's are, and returns the host and the copy's root.
func runTestsHost(t testing.TB, fixture string, mutate ...func(*host.Config)) (*host.Host, string) {
	t.Helper()
	dir, err := testplugin.SharedDir("run-tests", "plugins/run_tests")
	if err != nil {
		t.Fatal(err)
	}
	testplugin.Build(t, dir, "plugins/run_tests")
	launcherDir, err := testplugin.SharedDir("run-tests-launcher", "host/cmd/toolhost")
	if err != nil {
		t.Fatal(err)
	}
	launcher, err := testplugin.Toolhost(launcherDir)
	if err != nil {
		t.Fatal(err)
	}
	root := t.TempDir()
	if err := os.CopyFS(root, os.DirFS(filepath.Join("testdata", fixture))); err != nil {
		t.Fatal(err)
	}
	cfg := host.DefaultConfig()
	cfg.Tools.Sandbox.AllowedRoots = []string{root}
	for _, m := range mutate {
		m(cfg)
	}
	h, err := host.Open(context.Background(), host.Options{PluginDir: dir, Config: cfg, CacheDir: testplugin.CacheDir(t),
		Launcher: launcher, StateDir: filepath.Join(t.TempDir(), "state")})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { h.Close(context.Background()) })
	return h, root
}

// runTestsCall makes one approved run_tests call and returns its result.
func runTestsCall(t testing.TB, h *host.Host, args string) host.Result {
	t.Helper()
	approve := host.ApproverFunc(func(ctx context.Context, cs []host.Confirmation) (host.Decision, error) {
		return host.ApproveAll("test"), nil
	})
	_, results := h.Process(context.Background(), host.Batch{Calls: []host.Call{{ID: "c1", Name: "run_tests", Arguments: json.RawMessage(args)}}},
		host.BatchOptions{Approver: approve})
	return results[0]
}

type structuredResult struct {
	Framework string `json:"framework"`
	Total     int    `json:"total"`
	Passed    int    `json:"passed"`
	Failed    int    `json:"failed"`
	Errors    int    `json:"errors"`
	Skipped   int    `json:"skipped"`
	ExitCode  int    `json:"exit_code"`
	Failures  []struct {
		Name    string `json:"name"`
		File    string `json:"file"`
		Line    int    `json:"line"`
		Message string `json:"message"`
		Error   bool   `json:"error"`
	} `json:"failures"`
}

type wantFailure struct {
	name, file string
	line       int
	message    string
}

// Through the host, confined, on the fixture projects: the framework is
// picked from the project's files, and the counts and each failure's
// name, place and message are exactly what the tests did.
func TestRunTestsThroughHost(t *testing.T) {
	for _, c := range []struct {
		fixture, framework      string
		need                    func(t *testing.T)
		total, passed, failed   int
		errors, skipped         int
		failures                []wantFailure
		selector                string
		selTotal, selFailed     int
		selFailure, selFailFile string
	}{
		{fixture: "go", framework: "go", total: 5, passed: 2, failed: 2, skipped: 1, failures: []wantFailure{
			{"TestAddWrong", "calc_test.go", 13, "Add(2, 2) = 4, want 5"},
			{"TestTable/wrong", "calc_test.go", 28, "Add(1, 1) = 2, want 3"},
		}, selector: "TestTable", selTotal: 2, selFailed: 1},
		{fixture: "python", framework: "pytest", need: needPytest, total: 4, passed: 1, failed: 1, errors: 1, skipped: 1, failures: []wantFailure{
			{"test_add_wrong", "test_calc.py", 14, "AssertionError: two and two\nassert 4 == 5\n +  where 4 = add(2, 2)"},
			{"test_uses_broken", "test_calc.py", 24, `failed on setup with "RuntimeError: fixture broke"`},
		}, selector: "test_calc.py::test_add_wrong", selTotal: 1, selFailed: 1},
		{fixture: "node", framework: "node", need: needNode, total: 5, passed: 2, failed: 2, skipped: 1, failures: []wantFailure{
			{"adds wrong", "test/calc.test.js", 12, "Expected values to be strictly equal:4 !== 5"},
			{"group > inner fails", "test/calc.test.js", 20, "inner broke"},
		}, selector: "adds", selTotal: 4, selFailed: 1}, // node reports the tests a pattern leaves out as skipped
	} {
		t.Run(c.fixture, func(t *testing.T) {
			if c.need != nil {
				c.need(t)
			}
			h, root := runTestsHost(t, c.fixture)
			r := runTestsCall(t, h, `{}`)
			if !r.OK {
				t.Fatalf("run_tests failed: %+v", r.Error)
			}
			var s structuredResult
			if err := json.Unmarshal(r.Structured, &s); err != nil {
				t.Fatalf("structured %s: %v", r.Structured, err)
			}
			if s.Framework != c.framework || s.Total != c.total || s.Passed != c.passed || s.Failed != c.failed || s.Errors != c.errors || s.Skipped != c.skipped {
				t.Errorf("structured %s\nwant framework %s, %d total, %d passed, %d failed, %d errors, %d skipped", r.Structured, c.framework, c.total, c.passed, c.failed, c.errors, c.skipped)
			}
			var got []wantFailure
			for _, f := range s.Failures {
				// node names a file by its absolute path on the host.
				got = append(got, wantFailure{f.Name, strings.TrimPrefix(f.File, root+"/"), f.Line, f.Message})
			}
			if !reflect.DeepEqual(got, c.failures) {
				t.Errorf("failures\n got %+v\nwant %+v", got, c.failures)
			}
			for _, f := range c.failures {
				if !strings.Contains(r.Content, f.name) || !strings.Contains(r.Content, strings.Split(f.message, "\n")[0]) {
					t.Errorf("the text does not show failure %s with its message:\n%s", f.name, r.Content)
				}
			}
			if !strings.HasPrefix(r.Content, "FAILED ("+c.framework+"): ") {
				t.Errorf("the text does not start with the verdict and counts:\n%s", r.Content)
			}

			r = runTestsCall(t, h, `{"selector": "`+c.selector+`"}`)
			if err := json.Unmarshal(r.Structured, &s); err != nil || !r.OK {
				t.Fatalf("with selector: %+v %s", r.Error, r.Structured)
			}
			if s.Total != c.selTotal || s.Failed != c.selFailed {
				t.Errorf("selector %q: structured %s, want %d total, %d failed", c.selector, r.Structured, c.selTotal, c.selFailed)
			}
		})
	}
}

// A project the tool cannot read a report of says so, shows the
// command's output and gives no counts; a selector with a shell's
// characters is refused before anything runs.
func TestRunTestsRefusals(t *testing.T) {
	h, root := runTestsHost(t, "go")
	if err := os.WriteFile(filepath.Join(root, "calc.go"), []byte("package calc\n\nfunc Add(a, b int) int { return a + }\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	r := runTestsCall(t, h, `{"framework": "go", "command": "echo no report here; exit 3"}`)
	if r.OK || r.Error == nil || !strings.Contains(r.Error.Message, "could not read the test results") || !strings.Contains(r.Error.Message, "exit code 3") {
		t.Fatalf("a command that wrote no report: %+v", r.Error)
	}
	if strings.Contains(string(r.Structured), `"total"`) {
		t.Errorf("counts given for a run whose report could not be read: %s", r.Structured)
	}
	r = runTestsCall(t, h, `{"selector": "x'; touch pwned; '"}`)
	if r.OK || r.Error == nil || r.Error.Kind != "BadArgs" {
		t.Fatalf("a selector with quotes and semicolons: %+v", r)
	}
	if _, err := os.Stat(filepath.Join(root, "pwned")); err == nil {
		t.Fatal("the selector ran a command")
	}
	// The package that no longer compiles is an error with the compiler's message.
	r = runTestsCall(t, h, `{}`)
	var s structuredResult
	if err := json.Unmarshal(r.Structured, &s); err != nil || !r.OK {
		t.Fatalf("build failure: %+v %s", r.Error, r.Structured)
	}
	if s.Errors != 1 || s.Total != 0 || len(s.Failures) != 1 || !s.Failures[0].Error || !strings.Contains(s.Failures[0].Message, "syntax error") {
		t.Errorf("a package that does not build: %s", r.Structured)
	}
}

func needPytest(t *testing.T) {
	err := exec.Command("/usr/bin/python3", "-c", "import pytest").Run()
	if err != nil && exec.Command("python3", "-c", "import pytest").Run() == nil {
		err = nil
	}
	testenv.Need(t, "pytest", err, "apt-get install python3-pytest (as root)")
}

func needNode(t *testing.T) {
	testenv.Runs(t, "node", "Node.js 20 or later", "--version")
}

// bigGoReport is a go test -json report of about size bytes: the
// fixture's events over and over, each round a package of its own.
func bigGoReport(t testing.TB, size int) []byte {
	data, err := os.ReadFile(filepath.Join("testdata", "go_test.json"))
	if err != nil {
		t.Fatal(err)
	}
	var b []byte
	for i := 0; len(b) < size; i++ {
		b = append(b, strings.ReplaceAll(string(data), `"example.com/calc"`, `"example.com/calc`+strconv.Itoa(i)+`"`)...)
	}
	return b
}

// What reading a 5 MB go test -json report costs natively.
func BenchmarkParseGoReport5MB(b *testing.B) {
	report := bigGoReport(b, 5<<20)
	b.SetBytes(int64(len(report)))
	for b.Loop() {
		if _, err := parseGoJSON(report); err != nil {
			b.Fatal(err)
		}
	}
}

// What reading a 5 MB go test -json report costs in the plugin: a call
// whose command only copies the report, less the command's own time
// (guest-ms/op), beside the call's whole time.
func BenchmarkRunTestsGoReport5MB(b *testing.B) {
	h, root := runTestsHost(b, "go", func(c *host.Config) { c.Tools.ReadFile.MaxScanBytes = 8 << 20 })
	report := bigGoReport(b, 5<<20)
	if err := os.WriteFile(filepath.Join(root, "big.json"), report, 0o644); err != nil {
		b.Fatal(err)
	}
	b.SetBytes(int64(len(report)))
	var guest time.Duration
	for b.Loop() {
		start := time.Now()
		r := runTestsCall(b, h, `{"framework": "go", "command": "cat big.json > \"$TOOLHOST_REPORT\""}`)
		took := time.Since(start)
		var s struct {
			Total      int   `json:"total"`
			DurationMS int64 `json:"duration_ms"`
			Report     struct {
				Cut bool `json:"cut"`
			} `json:"report"`
		}
		if err := json.Unmarshal(r.Structured, &s); err != nil || s.Total == 0 || s.Report.Cut {
			b.Fatalf("%+v %.300s", r.Error, r.Structured)
		}
		guest += took - time.Duration(s.DurationMS)*time.Millisecond
	}
	b.ReportMetric(float64(guest.Milliseconds())/float64(b.N), "guest-ms/op")
}

// bigJUnit is a JUnit XML report of about size bytes, pytest's shape, a
// tenth of its test cases failing with a traceback.
func bigJUnit(size int) []byte {
	b := []byte(`<?xml version="1.0" encoding="utf-8"?><testsuites><testsuite name="pytest">`)
	for i := 0; len(b) < size; i++ {
		n := strconv.Itoa(i)
		if i%10 == 0 {
			b = append(b, `<testcase classname="test_m" name="test_`+n+`" file="test_m.py" line="`+n+`"><failure message="assert 1 == 2">def test_`+n+`():
&gt;       assert 1 == 2
E       assert 1 == 2

test_m.py:`+n+`: AssertionError</failure></testcase>`...)
			continue
		}
		b = append(b, `<testcase classname="test_m" name="test_`+n+`" file="test_m.py" line="`+n+`" time="0.001" />`...)
	}
	return append(b, `</testsuite></testsuites>`...)
}

// What reading a 2 MB JUnit report (the default scan limit) costs
// natively, and in the plugin (guest-ms/op as above).
func BenchmarkParseJUnit2MB(b *testing.B) {
	report := bigJUnit(2 << 20)
	b.SetBytes(int64(len(report)))
	for b.Loop() {
		if _, err := parseJUnit(report, junitPytest); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkRunTestsJUnit2MB(b *testing.B) {
	h, root := runTestsHost(b, "python", func(c *host.Config) { c.Tools.ReadFile.MaxScanBytes = 4 << 20 })
	report := bigJUnit(2 << 20)
	if err := os.WriteFile(filepath.Join(root, "big.xml"), report, 0o644); err != nil {
		b.Fatal(err)
	}
	b.SetBytes(int64(len(report)))
	var guest time.Duration
	for b.Loop() {
		start := time.Now()
		r := runTestsCall(b, h, `{"framework": "pytest", "command": "cat big.xml > \"$TOOLHOST_REPORT\""}`)
		took := time.Since(start)
		var s struct {
			Total      int   `json:"total"`
			DurationMS int64 `json:"duration_ms"`
		}
		if err := json.Unmarshal(r.Structured, &s); err != nil || s.Total == 0 {
			b.Fatalf("%+v %.300s", r.Error, r.Structured)
		}
		guest += took - time.Duration(s.DurationMS)*time.Millisecond
	}
	b.ReportMetric(float64(guest.Milliseconds())/float64(b.N), "guest-ms/op")
}
