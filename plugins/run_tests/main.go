// Command run_tests is the run_tests tool: run a project's tests with
// the command its framework's files call for, under the same
// confinement, limits and approval as run_command, and return the counts
// and each failure as the framework's machine-readable report gives them
// (go test -json, JUnit XML, jest --json, libtest's lines), never as
// scraped from its prose. The host runs the command (proc_exec) and hands
// back the report file it wrote ($TOOLHOST_REPORT); the plugin picks the
// command, checks the selector and reads the report.
package main

import (
	"encoding/json"
	"errors"
	"strconv"
	"strings"

	"github.com/toolhost/toolhost/abi"
	"github.com/toolhost/toolhost/sdk"
)

type args struct {
	Path      string `json:"path"`
	Framework string `json:"framework"`
	Selector  string `json:"selector"`
	Command   string `json:"command"`
	TimeoutMS int64  `json:"timeout_ms"`
}

const maxSelector = 512

const schema = `{
  "type": "object",
  "properties": {
    "path": {"type": "string", "description": "The project's directory, relative to the workspace root; the tests run there. Default: the workspace root."},
    "framework": {"enum": ["auto", "go", "pytest", "node", "jest", "vitest", "cargo"], "default": "auto", "description": "auto picks by the project's files: go.mod: go test; Cargo.toml: cargo test; package.json: jest or vitest when it uses them, else node --test; pyproject.toml, pytest.ini, setup.cfg, tox.ini or conftest.py: pytest."},
    "selector": {"type": "string", "minLength": 1, "maxLength": 512, "description": "Which tests: go: a -run pattern (TestAdd|TestSub/case); pytest: a node id (tests/test_x.py::test_y) or a -k expression (add and not slow); node, jest, vitest: a test name pattern; cargo: a test name filter. Letters, digits, spaces and _-./:|^$()[]*+?{},=@% only."},
    "command": {"type": "string", "minLength": 1, "description": "A custom test command, instead of the one framework implies: it needs framework (not auto) and must write that framework's report to the file named by $TOOLHOST_REPORT (go: go test -json events; pytest, node, vitest: JUnit XML; jest: its --json report; cargo: libtest's output). It runs like run_command's commands and is shown for approval as such."},
    "timeout_ms": {"type": "integer", "minimum": 1, "description": "Stop the tests after this many milliseconds (at most the operator's maximum). Default: the tool's deadline."}
  },
  "additionalProperties": false
}`

func init() {
	sdk.Register(sdk.Tool[args]{
		Manifest: abi.Manifest{
			Name:             "run_tests",
			Version:          "1.0.0",
			Description:      "Run the project's tests and return the counts (total, passed, failed, errors, skipped) and each failure's name, file:line and message, read from the test framework's machine-readable report (go test, pytest, node --test, jest, vitest, cargo test; picked from the project's files unless framework says). selector narrows which tests run. The command is fixed by the framework, so allowing this tool does not allow arbitrary commands, except through command, a custom test command that runs and needs approval like run_command.",
			Parameters:       []byte(schema),
			SideEffecting:    true,
			RequiresApproval: true,
			RiskLevel:        abi.RiskHigh,
			TimeoutClass:     abi.TimeoutShell,
			PathArgs:         []string{"path"},
			// It stats the project's marker files (go.mod, package.json,
			// ...) and reads package.json below the directory it is given.
			ReadsUnderPathArgs: true,
			Nondeterministic:   true,
			Capabilities:       []abi.Capability{abi.CapProcExec, abi.CapFSRead},
		},
		Summary: approvalSummary,
		Handle:  handle,
	})
}

func main() {}

// approvalSummary is what approval shows: the framework (or that it is
// picked from the files), the selector, and a custom command whole.
func approvalSummary(a args) (string, error) {
	if err := check(a); err != nil {
		return "", err
	}
	fw := a.Framework
	if fw == "" || fw == "auto" {
		fw = "the project's framework"
	}
	s := "Run the tests (" + fw + ")"
	if a.Command != "" {
		s = "Run a custom test command (" + fw + " report): " + a.Command
	}
	if a.Path != "" {
		s += "\n  in " + a.Path
	}
	if a.Selector != "" {
		s += "\n  selector " + strconv.Quote(a.Selector)
	}
	if a.TimeoutMS > 0 {
		s += "\n  timeout " + strconv.FormatInt(a.TimeoutMS, 10) + " ms"
	}
	return s, nil
}

// check refuses arguments that cannot make a command: an unknown
// framework, a custom command without one, a selector that is not plain.
func check(a args) error {
	switch a.Framework {
	case "", "auto", "go", "pytest", "node", "jest", "vitest", "cargo":
	default:
		return sdk.BadArgs("framework %q is not one of auto, go, pytest, node, jest, vitest, cargo", a.Framework)
	}
	if a.Command != "" && (a.Framework == "" || a.Framework == "auto") {
		return sdk.BadArgs("command needs framework (go, pytest, node, jest, vitest or cargo): it says how to read the report the command writes to $TOOLHOST_REPORT")
	}
	if a.Command != "" && a.Selector != "" {
		return sdk.BadArgs("selector narrows the command run_tests builds; with command, put the selection in the command itself")
	}
	return checkSelector(a.Selector)
}

// checkSelector allows a conservative set of characters: enough for a
// regex over test names, a pytest node id or -k expression, and nothing
// a shell gives meaning to inside single quotes or out of them.
func checkSelector(sel string) error {
	if len(sel) > maxSelector {
		return sdk.BadArgs("selector is %d bytes, more than %d", len(sel), maxSelector)
	}
	if strings.HasPrefix(sel, "-") {
		return sdk.BadArgs("selector %q starts with '-': it would be read as an option; name tests, not flags", sel)
	}
	if strings.HasPrefix(sel, "@") {
		// pytest 8.2 and later read arguments from the file @NAME names,
		// options included.
		return sdk.BadArgs("selector %q starts with '@': pytest would read options from a file of that name; name tests", sel)
	}
	for i := 0; i < len(sel); i++ {
		c := sel[i]
		if c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || strings.IndexByte(" _-./:|^$()[]*+?{},=@%", c) >= 0 {
			continue
		}
		return sdk.BadArgs("selector %q holds %q at byte %d: only letters, digits, spaces and _-./:|^$()[]*+?{},=@%% are allowed", sel, string(c), i)
	}
	return nil
}

func join(dir, name string) string {
	dir = strings.TrimSuffix(dir, "/")
	if dir == "" || dir == "." {
		return name
	}
	return dir + "/" + name
}

// detect picks the framework from the files in dir: the first of these
// markers found.
func detect(dir string) (string, error) {
	markers := []struct{ file, framework string }{
		{"go.mod", "go"},
		{"Cargo.toml", "cargo"},
		{"package.json", "node"},
		{"pytest.ini", "pytest"},
		{"pyproject.toml", "pytest"},
		{"setup.cfg", "pytest"},
		{"tox.ini", "pytest"},
		{"conftest.py", "pytest"},
	}
	for _, m := range markers {
		_, err := sdk.Stat(join(dir, m.file))
		var he *sdk.HostError
		if errors.As(err, &he) && he.Status == abi.StatusNotFound {
			continue
		}
		if err != nil {
			return "", err
		}
		if m.framework == "node" {
			return nodeRunner(join(dir, m.file))
		}
		return m.framework, nil
	}
	where := dir
	if where == "" {
		where = "the workspace root"
	}
	return "", sdk.BadArgs("no go.mod, Cargo.toml, package.json, pytest.ini, pyproject.toml, setup.cfg, tox.ini or conftest.py in %s: give path (the project's directory) or framework", where)
}

// nodeRunner is jest or vitest when package.json's test script or
// dependencies name them, else node's own runner.
func nodeRunner(path string) (string, error) {
	_, data, err := sdk.Read(path, 0, 1<<20, 0)
	if err != nil {
		return "", err
	}
	var p struct {
		Scripts         map[string]string `json:"scripts"`
		Dependencies    map[string]string `json:"dependencies"`
		DevDependencies map[string]string `json:"devDependencies"`
	}
	if err := json.Unmarshal(data, &p); err != nil {
		return "", sdk.Failed("%s is not valid JSON (%v): fix it, or give framework", path, err)
	}
	test := p.Scripts["test"]
	for _, fw := range []string{"vitest", "jest"} {
		if strings.Contains(test, fw) {
			return fw, nil
		}
	}
	for _, fw := range []string{"vitest", "jest"} {
		if _, ok := p.DevDependencies[fw]; ok {
			return fw, nil
		}
		if _, ok := p.Dependencies[fw]; ok {
			return fw, nil
		}
	}
	return "node", nil
}

// pytestPython runs pytest with python3 when that has it, else with the
// system's /usr/bin/python3 (where the distribution's pytest package
// installs it, when python3 on PATH is another interpreter).
const pytestPython = `if python3 -c 'import pytest' >/dev/null 2>&1; then py=python3; else py=/usr/bin/python3; fi; "$py"`

// command is the shell command that runs framework's tests, writing
// their report to $TOOLHOST_REPORT; the selector is single-quoted (and
// holds no quote: checkSelector).
func command(framework, sel string) string {
	q := "'" + sel + "'"
	switch framework {
	case "go":
		c := "go test -json"
		if sel != "" {
			c += " -run " + q
		}
		return c + ` ./... > "$TOOLHOST_REPORT"`
	case "pytest":
		c := pytestPython + ` -m pytest -q -p no:cacheprovider -o junit_family=xunit1 --junitxml="$TOOLHOST_REPORT"`
		switch {
		case sel == "":
		case strings.Contains(sel, "::") || strings.Contains(sel, "/") || strings.HasSuffix(sel, ".py"):
			c += " " + q // a node id or a file
		default:
			c += " -k " + q
		}
		return c
	case "node":
		c := `node --test --test-reporter=spec --test-reporter-destination=stdout --test-reporter=junit --test-reporter-destination="$TOOLHOST_REPORT"`
		if sel != "" {
			c += " --test-name-pattern=" + q
		}
		return c
	case "jest":
		c := `npx --no-install jest --ci --json --outputFile="$TOOLHOST_REPORT"`
		if sel != "" {
			c += " -t " + q
		}
		return c
	case "vitest":
		c := `npx --no-install vitest run --reporter=junit --outputFile="$TOOLHOST_REPORT"`
		if sel != "" {
			c += " -t " + q
		}
		return c
	case "cargo":
		c := "cargo test --no-fail-fast"
		if sel != "" {
			c += " " + q
		}
		return c + ` > "$TOOLHOST_REPORT" 2>&1`
	}
	return ""
}

// reportFormat names what the report of framework is.
func reportFormat(framework string) string {
	switch framework {
	case "go":
		return "go test -json"
	case "jest":
		return "jest --json"
	case "cargo":
		return "libtest output"
	}
	return "JUnit XML"
}

// parse reads framework's report.
func parse(framework string, report []byte) (summary, error) {
	switch framework {
	case "go":
		return parseGoJSON(report)
	case "pytest":
		return parseJUnit(report, junitPytest)
	case "node":
		return parseJUnit(report, junitNode)
	case "vitest":
		return parseJUnit(report, junitVitest)
	case "jest":
		return parseJest(report)
	case "cargo":
		return parseCargo(report)
	}
	return summary{}, errors.New("no parser for framework " + framework)
}

func handle(c *sdk.Call, a args) (string, error) {
	if err := check(a); err != nil {
		return "", err
	}
	fw := a.Framework
	if fw == "" || fw == "auto" {
		var err error
		if fw, err = detect(a.Path); err != nil {
			return "", err
		}
	}
	cmd := a.Command
	if cmd == "" {
		cmd = command(fw, a.Selector)
	}
	req := abi.ExecRequest{Command: cmd, Cwd: a.Path, TimeoutMS: a.TimeoutMS, Report: true}
	if fw == "pytest" {
		// Keep the run from writing __pycache__ into the project.
		req.Env = map[string]string{"PYTHONDONTWRITEBYTECODE": "1"}
	}
	res, err := sdk.Exec(req)
	if err != nil {
		return "", err
	}
	limit := int(c.Limits.OutputLimit())
	if limit <= 0 {
		limit = 100 << 10
	}
	c.SelfLimited()
	return result(c, fw, cmd, res, limit)
}

// result shapes a finished run: the counts and failures when the report
// could be read, else what went wrong and the command's output.
func result(c *sdk.Call, fw, cmd string, res abi.ExecResult, limit int) (string, error) {
	report := []byte(res.Report)
	if len(report) == 0 && (fw == "go" || fw == "cargo") && !res.StdoutCut {
		// A custom command may print the stream rather than write it.
		report = []byte(res.Stdout + res.StdoutTail)
	}
	s, perr := parse(fw, report)
	if perr != nil && res.ReportCut && (s.Total > 0 || s.Errors > 0) {
		perr = nil // cut off mid-way: the counts cover the part that came
	}
	if perr != nil {
		why := perr.Error()
		if res.ReportBytes == 0 && res.Report == "" {
			why = "the command wrote no " + reportFormat(fw) + " report to $TOOLHOST_REPORT"
		}
		c.SetStructured(unparsedObject(fw, cmd, res, why))
		out := commandOutput(res, limit/2)
		msg := "could not read the test results: " + why
		switch {
		case res.Killed != "":
			msg += "; " + killedWhy(res)
		default:
			msg += " (exit code " + strconv.Itoa(res.ExitCode) + "); the command's output shows why"
		}
		return "", failedWith(msg, fw, cmd, res, out)
	}
	text := render(fw, s, res, limit/2)
	c.SetStructured(structured(fw, cmd, s, res, limit/2))
	if res.Killed != "" {
		return "", failedWith(killedWhy(res)+"; the results so far are in output", fw, cmd, res, text)
	}
	return text, nil
}

func killedWhy(res abi.ExecResult) string {
	switch res.Killed {
	case abi.KilledTimeout:
		return "killed: the tests ran past their timeout (" + strconv.FormatInt(res.DurationMS, 10) + " ms)"
	case abi.KilledMemory:
		return "killed: the tests reached the memory limit (tools.run_command.memory_max)"
	case abi.KilledPids:
		return "killed: the tests reached the process limit (tools.run_command.pids_max)"
	}
	return "killed: the call was cancelled"
}

// failedWith is ExecutionFailed with the run's status and output in its
// details, as run_command's failures are.
func failedWith(msg, fw, cmd string, res abi.ExecResult, out string) error {
	d := []byte(`{"tool":"run_tests","framework":`)
	d = sdk.AppendJSONString(d, fw)
	d = append(d, `,"command":`...)
	d = sdk.AppendJSONString(d, cmd)
	d = append(d, `,"exit_code":`...)
	d = strconv.AppendInt(d, int64(res.ExitCode), 10)
	if res.Killed != "" {
		d = append(d, `,"killed":`...)
		d = sdk.AppendJSONString(d, res.Killed)
	}
	d = append(d, `,"output":`...)
	d = sdk.AppendJSONString(d, out)
	d = append(d, '}')
	return &sdk.Error{Kind: abi.KindExecutionFailed, Message: msg, Details: d}
}
