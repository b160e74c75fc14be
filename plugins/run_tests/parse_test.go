package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

// The reports in testdata are real: go test -json, pytest --junitxml
// (Debian's python3-pytest 7.2) and node --test's junit reporter (Node
// 20) run on the fixture projects beside them (go_build_fail.json on a
// module with a package that does not compile).
func TestParseRealReports(t *testing.T) {
	for _, c := range []struct {
		file, framework string
		want            summary
	}{
		{"go_test.json", "go", summary{Total: 5, Passed: 2, Failed: 2, Skipped: 1, Failures: []failure{
			{Name: "TestAddWrong", Suite: "example.com/calc", File: "calc_test.go", Line: 13, Message: "Add(2, 2) = 4, want 5"},
			{Name: "TestTable/wrong", Suite: "example.com/calc", File: "calc_test.go", Line: 28, Message: "Add(1, 1) = 2, want 3"},
		}}},
		{"go_build_fail.json", "go", summary{Total: 1, Passed: 1, Errors: 1, Failures: []failure{
			{Name: "example.com/mixed/bad", Suite: "example.com/mixed/bad", File: "bad/bad_test.go", Line: 5, Error: true,
				Message: "# example.com/mixed/bad [example.com/mixed/bad.test]\nbad/bad_test.go:5:30: undefined: undefined\nFAIL\texample.com/mixed/bad [build failed]"},
		}}},
		{"pytest_junit.xml", "pytest", summary{Total: 4, Passed: 1, Failed: 1, Errors: 1, Skipped: 1, Failures: []failure{
			{Name: "test_add_wrong", Suite: "test_calc", File: "test_calc.py", Line: 14, Message: "AssertionError: two and two\nassert 4 == 5\n +  where 4 = add(2, 2)"},
			{Name: "test_uses_broken", Suite: "test_calc", File: "test_calc.py", Line: 24, Error: true, Message: `failed on setup with "RuntimeError: fixture broke"`},
		}}},
		{"node_junit.xml", "node", summary{Total: 5, Passed: 2, Failed: 2, Skipped: 1, Failures: []failure{
			{Name: "adds wrong", File: "/work/main/plugins/run_tests/testdata/node/test/calc.test.js", Line: 12, Message: "Expected values to be strictly equal:4 !== 5"},
			{Name: "group > inner fails", File: "/work/main/plugins/run_tests/testdata/node/test/calc.test.js", Line: 20, Message: "inner broke"},
		}}},
	} {
		t.Run(c.file, func(t *testing.T) {
			data, err := os.ReadFile(filepath.Join("testdata", c.file))
			if err != nil {
				t.Fatal(err)
			}
			got, err := parse(c.framework, data)
			if err != nil {
				t.Fatalf("parse %s: %v", c.file, err)
			}
			if !reflect.DeepEqual(got, c.want) {
				t.Errorf("parse %s:\n got %+v\nwant %+v", c.file, got, c.want)
			}
		})
	}
}

// Reports of the frameworks not installed here, in the shapes they
// document: jest --json, vitest's JUnit, libtest's text.
func TestParseDocumentedReports(t *testing.T) {
	jest := `{"numTotalTests":4,"testResults":[
	 {"name":"/p/sum.test.js","status":"failed","message":"","assertionResults":[
	  {"ancestorTitles":["sum"],"title":"adds","status":"passed","failureMessages":[]},
	  {"ancestorTitles":["sum"],"title":"adds wrong","status":"failed","failureMessages":["\u001b[2mexpect(\u001b[22mreceived\u001b[2m).toBe(\u001b[22mexpected\u001b[2m)\u001b[22m\n\nExpected: 5\nReceived: 4"],"location":{"line":7,"column":3}},
	  {"ancestorTitles":[],"title":"later","status":"pending","failureMessages":[]},
	  {"ancestorTitles":[],"title":"some day","status":"todo","failureMessages":[]}]},
	 {"name":"/p/broken.test.js","status":"failed","message":"SyntaxError: Unexpected token (3:1)","assertionResults":[]}]}`
	vitest := `<?xml version="1.0" encoding="UTF-8" ?>
<testsuites name="vitest tests" tests="3" failures="1" errors="0" time="0.01">
    <testsuite name="src/sum.test.ts" timestamp="2026-01-01T00:00:00" hostname="h" tests="3" failures="1" errors="0" skipped="1" time="0.005">
        <testcase classname="src/sum.test.ts" name="sum &gt; adds" time="0.001">
        </testcase>
        <testcase classname="src/sum.test.ts" name="sum &gt; adds wrong" time="0.002">
            <failure message="expected 4 to be 5 // Object.is equality" type="AssertionError">
AssertionError: expected 4 to be 5 // Object.is equality
 ❯ src/sum.test.ts:9:22
            </failure>
        </testcase>
        <testcase classname="src/sum.test.ts" name="later" time="0">
            <skipped/>
        </testcase>
    </testsuite>
</testsuites>`
	cargo := `   Compiling calc v0.1.0 (/p)
    Finished test [unoptimized + debuginfo] target(s) in 0.50s
     Running unittests src/lib.rs (target/debug/deps/calc-1234)

running 4 tests
test tests::adds ... ok
test tests::later ... ignored, not here
test tests::adds_wrong ... FAILED
test tests::panics ... FAILED

failures:

---- tests::adds_wrong stdout ----
thread 'tests::adds_wrong' panicked at src/lib.rs:12:9:
assertion ` + "`left == right`" + ` failed
  left: 4
 right: 5
note: run with ` + "`RUST_BACKTRACE=1`" + ` environment variable to display a backtrace

---- tests::panics stdout ----
thread 'tests::panics' panicked at src/lib.rs:17:9:
boom

failures:
    tests::adds_wrong
    tests::panics

test result: FAILED. 1 passed; 2 failed; 1 ignored; 0 measured; 0 filtered out; finished in 0.00s

error: test failed, to rerun pass ` + "`--lib`" + `
`
	cargoBuild := `   Compiling calc v0.1.0 (/p)
error[E0425]: cannot find function ` + "`nope`" + ` in this scope
 --> src/lib.rs:3:5
  |
3 |     nope()
  |     ^^^^ not found in this scope

For more information about this error, try ` + "`rustc --explain E0425`" + `.
error: could not compile ` + "`calc`" + ` (lib test) due to 1 previous error
`
	for _, c := range []struct {
		name, framework, report string
		want                    summary
	}{
		{"jest", "jest", jest, summary{Total: 4, Passed: 1, Failed: 1, Skipped: 2, Errors: 1, Failures: []failure{
			{Name: "/p/broken.test.js", File: "/p/broken.test.js", Error: true, Message: "SyntaxError: Unexpected token (3:1)"},
			{Name: "sum > adds wrong", File: "/p/sum.test.js", Line: 7, Message: "expect(received).toBe(expected)\n\nExpected: 5\nReceived: 4"},
		}}},
		{"vitest", "vitest", vitest, summary{Total: 3, Passed: 1, Failed: 1, Skipped: 1, Failures: []failure{
			{Name: "sum > adds wrong", Suite: "src/sum.test.ts", File: "src/sum.test.ts", Line: 9, Message: "expected 4 to be 5 // Object.is equality"},
		}}},
		{"cargo", "cargo", cargo, summary{Total: 4, Passed: 1, Failed: 2, Skipped: 1, Failures: []failure{
			{Name: "tests::adds_wrong", File: "src/lib.rs", Line: 12, Message: "thread 'tests::adds_wrong' panicked at src/lib.rs:12:9:\nassertion `left == right` failed\n  left: 4\n right: 5\nnote: run with `RUST_BACKTRACE=1` environment variable to display a backtrace"},
			{Name: "tests::panics", File: "src/lib.rs", Line: 17, Message: "thread 'tests::panics' panicked at src/lib.rs:17:9:\nboom"},
		}}},
		{"cargo build error", "cargo", cargoBuild, summary{Errors: 1, Failures: []failure{
			{Name: "cargo build", Error: true, Message: "error[E0425]: cannot find function `nope` in this scope\nerror: could not compile `calc` (lib test) due to 1 previous error"},
		}}},
	} {
		t.Run(c.name, func(t *testing.T) {
			got, err := parse(c.framework, []byte(c.report))
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, c.want) {
				t.Errorf("\n got %+v\nwant %+v", got, c.want)
			}
		})
	}
}

// A report that is missing, empty or not the format never yields counts.
func TestParseRefusesWhatIsNotAReport(t *testing.T) {
	for _, c := range []struct{ framework, report string }{
		{"go", ""},
		{"go", "go: cannot find main module\n"},
		{"pytest", ""},
		{"pytest", "not xml at all"},
		{"node", "<testsuites><testcase name=\"a\"><failure>"},
		{"jest", ""},
		{"jest", "{\"x\": 1}"},
		{"cargo", "error: no such command: `test`\n"},
		{"vitest", "<html></html>"},
	} {
		if s, err := parse(c.framework, []byte(c.report)); err == nil {
			t.Errorf("parse(%s, %q) = %+v, want an error", c.framework, c.report, s)
		}
	}
}

// A go test -json report cut by the scan limit keeps the tests whose
// results came before the cut.
func TestParseGoCutReport(t *testing.T) {
	data, err := os.ReadFile(filepath.Join("testdata", "go_test.json"))
	if err != nil {
		t.Fatal(err)
	}
	cut := data[:strings.Index(string(data), `"Test":"TestSkipped"`)+5]
	s, err := parse("go", cut)
	if err != nil {
		t.Fatal(err)
	}
	if s.Total != 2 || s.Passed != 1 || s.Failed != 1 {
		t.Errorf("cut report: %+v, want the two tests before the cut", s)
	}
}

func TestSelector(t *testing.T) {
	for _, ok := range []string{"TestAdd", "TestAdd|TestSub/case_1", "^TestX$", "tests/test_x.py::test_y[1-2]", "add and not slow", "adds wrong"} {
		if err := checkSelector(ok); err != nil {
			t.Errorf("checkSelector(%q) = %v, want nil", ok, err)
		}
	}
	for _, bad := range []string{"a'b", "x; rm -rf /", "$(id)x`id`", "a\nb", "-k", "--co", `a"b`, "a\\b", "a&b", "a>b", "@args", strings.Repeat("a", 513)} {
		if err := checkSelector(bad); err == nil {
			t.Errorf("checkSelector(%q) = nil, want an error", bad)
		}
	}
}

func TestCommand(t *testing.T) {
	for _, c := range []struct{ fw, sel, want string }{
		{"go", "", `go test -json ./... > "$TOOLHOST_REPORT"`},
		{"go", "TestAdd|TestSub", `go test -json -run 'TestAdd|TestSub' ./... > "$TOOLHOST_REPORT"`},
		{"pytest", "test_calc.py::test_add", pytestPython + ` -m pytest -q -p no:cacheprovider -o junit_family=xunit1 --junitxml="$TOOLHOST_REPORT" 'test_calc.py::test_add'`},
		{"pytest", "add and not slow", pytestPython + ` -m pytest -q -p no:cacheprovider -o junit_family=xunit1 --junitxml="$TOOLHOST_REPORT" -k 'add and not slow'`},
		{"node", "adds", `node --test --test-reporter=spec --test-reporter-destination=stdout --test-reporter=junit --test-reporter-destination="$TOOLHOST_REPORT" --test-name-pattern='adds'`},
		{"cargo", "tests::adds", `cargo test --no-fail-fast 'tests::adds' > "$TOOLHOST_REPORT" 2>&1`},
	} {
		if got := command(c.fw, c.sel); got != c.want {
			t.Errorf("command(%s, %q)\n got %s\nwant %s", c.fw, c.sel, got, c.want)
		}
	}
}

// decodeGoEvent reads every line the way encoding/json does, escapes
// included, and leaves to it what it does not expect.
func TestDecodeGoEventMatchesEncodingJSON(t *testing.T) {
	lines := []string{
		`{"Action":"output","Package":"p","Test":"T","Output":"tab\there \"q\" back\\slash \u00e9 \ud83d\ude00 \/ \n"}`,
		`{"Time":"2026-11-28T20:30:12.85Z","Action":"pass","Package":"p","Test":"T","Elapsed":0.003}`,
		`{"ImportPath":"p [p.test]","Action":"build-fail"}`,
		`{"Action":"fail","Package":"p","Elapsed":1e-3,"FailedBuild":"p [p.test]"}`,
		`{"Action":"output","Output":"lone \ud83d surrogate"}`,
	}
	for _, f := range []string{"go_test.json", "go_build_fail.json"} {
		data, err := os.ReadFile(filepath.Join("testdata", f))
		if err != nil {
			t.Fatal(err)
		}
		lines = append(lines, strings.Split(strings.TrimSpace(string(data)), "\n")...)
	}
	for _, l := range lines {
		var fast, slow goEvent
		if !decodeGoEvent([]byte(l), &fast) {
			t.Errorf("decodeGoEvent refused %s", l)
			continue
		}
		if err := json.Unmarshal([]byte(l), &slow); err != nil {
			t.Fatal(err)
		}
		if fast != slow {
			t.Errorf("%s\n fast %+v\n json %+v", l, fast, slow)
		}
	}
	for _, l := range []string{`{"Action":true}`, `{"Action":"x"`, `{"Action":"a\q"}`, `{"Action":{"x":1}}`} {
		var ev goEvent
		if decodeGoEvent([]byte(l), &ev) {
			t.Errorf("decodeGoEvent accepted %s as %+v", l, ev)
		}
	}
}

// Approval shows what will run: a custom command whole, the selector,
// the directory; arguments that cannot make a command are refused there
// too.
func TestApprovalSummary(t *testing.T) {
	for _, c := range []struct {
		a    args
		want string
	}{
		{args{}, "Run the tests (the project's framework)"},
		{args{Framework: "go", Path: "svc", Selector: "TestA|TestB", TimeoutMS: 5000}, "Run the tests (go)\n  in svc\n  selector \"TestA|TestB\"\n  timeout 5000 ms"},
		{args{Framework: "pytest", Command: "make check REPORT=$TOOLHOST_REPORT"}, "Run a custom test command (pytest report): make check REPORT=$TOOLHOST_REPORT"},
	} {
		if got, err := approvalSummary(c.a); err != nil || got != c.want {
			t.Errorf("approvalSummary(%+v) = %q, %v; want %q", c.a, got, err, c.want)
		}
	}
	for _, a := range []args{{Command: "true"}, {Framework: "auto", Command: "true"}, {Framework: "go", Command: "true", Selector: "x"}, {Framework: "mocha"}, {Selector: "a;b"}} {
		if _, err := approvalSummary(a); err == nil {
			t.Errorf("approvalSummary(%+v) accepted", a)
		}
	}
}
