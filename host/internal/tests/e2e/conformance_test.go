package e2e

import (
	"encoding/binary"
	"encoding/json"
	"encoding/xml"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
)

// builtInNames are the built-in plugins, each shipping conformance cases.
var builtInNames = []string{"apply_patch", "file_info", "glob", "list_directory", "read_file", "read_multiple_files", "run_command", "search", "write_file"}

// builtInsWithCases lays out the built-in plugins as make does: the
// modules, and each plugin's cases (plugins/NAME/conformance/FILE.json)
// as conformance/NAME-FILE.json beside them.
func builtInsWithCases(t *testing.T) string {
	t.Helper()
	_, file, _, _ := runtime.Caller(0)
	repo := filepath.Join(filepath.Dir(file), "..", "..", "..", "..")
	dir := t.TempDir()
	if err := os.Mkdir(filepath.Join(dir, "conformance"), 0o755); err != nil {
		t.Fatal(err)
	}
	for _, name := range builtInNames {
		copyFile(t, filepath.Join(filepath.Dir(toolhost), "plugins", name+".wasm"), filepath.Join(dir, name+".wasm"))
		cases, _ := filepath.Glob(filepath.Join(repo, "plugins", name, "conformance", "*.json"))
		if len(cases) == 0 {
			t.Fatalf("plugin %s ships no conformance cases", name)
		}
		for _, c := range cases {
			copyFile(t, c, filepath.Join(dir, "conformance", name+"-"+filepath.Base(c)))
		}
	}
	return dir
}

func copyFile(t *testing.T, from, to string) {
	t.Helper()
	b, err := os.ReadFile(from)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(to, b, 0o644); err != nil {
		t.Fatal(err)
	}
}

// testReport is `toolhost test --format json`.
type testReport struct {
	Plugins []struct {
		Path    string   `json:"path"`
		Tools   []string `json:"tools"`
		Results []struct {
			Check    string   `json:"check"`
			Tool     string   `json:"tool"`
			Status   string   `json:"status"`
			Detail   string   `json:"detail"`
			Findings []string `json:"findings"`
		} `json:"results"`
	} `json:"plugins"`
	Passed, Failed, Skipped int
}

// Every built-in plugin passes `toolhost test` on the
// plugin directory, its own cases included, with exit 0: one run writes
// the JSON report to a file while the text streams to stdout, a second
// the JUnit report of one plugin (a run of the whole suite costs tens of
// seconds on a loaded machine).
func TestToolhostTestPassesBuiltIns(t *testing.T) {
	dir := builtInsWithCases(t)
	w := newWorkspace(t)

	report := filepath.Join(t.TempDir(), "report.json")
	out, stderr, code := w.run(t, "test", "--allow-exec", "--format", "json", "--output", report, dir)
	if code != 0 {
		t.Fatalf("toolhost test: exit %d\n%s\n%s", code, out, stderr)
	}
	for _, name := range builtInNames {
		if !strings.Contains(out, name+": ") || !strings.Contains(out, "PASS  "+name) {
			t.Errorf("no results for %s:\n%s", name, out)
		}
	}
	if strings.Contains(out, "FAIL") || !strings.Contains(out, fmt.Sprintf("total: %d plugin(s)", len(builtInNames))) || !strings.HasSuffix(out, ": ok\n") {
		t.Errorf("text report:\n%s", out)
	}
	b, err := os.ReadFile(report)
	if err != nil {
		t.Fatal(err)
	}
	var rep testReport
	if err := json.Unmarshal(b, &rep); err != nil {
		t.Fatalf("--format json: %v\n%s", err, b)
	}
	if rep.Failed != 0 || rep.Passed == 0 || len(rep.Plugins) != len(builtInNames) {
		t.Fatalf("json counts: %d passed, %d failed, %d plugins", rep.Passed, rep.Failed, len(rep.Plugins))
	}
	for _, p := range rep.Plugins {
		cases := 0
		for _, r := range p.Results {
			if strings.HasPrefix(r.Check, "case:") && r.Status == "pass" {
				cases++
			}
		}
		if cases < 4 {
			t.Errorf("%s: %d of its own cases passed, want at least 4", p.Path, cases)
		}
	}

	out, stderr, code = w.run(t, "test", "--format", "junit", "--cases", filepath.Join(dir, "conformance"), filepath.Join(dir, "read_file.wasm"))
	if code != 0 {
		t.Fatalf("--format junit: exit %d\n%s", code, stderr)
	}
	var suites struct {
		Tests    int `xml:"tests,attr"`
		Failures int `xml:"failures,attr"`
		Suites   []struct {
			Name  string `xml:"name,attr"`
			Cases []struct {
				Name    string    `xml:"name,attr"`
				Failure *struct{} `xml:"failure"`
			} `xml:"testcase"`
		} `xml:"testsuite"`
	}
	if err := xml.Unmarshal([]byte(out), &suites); err != nil {
		t.Fatalf("junit: %v\n%s", err, out)
	}
	if suites.Failures != 0 || suites.Tests < 10 || len(suites.Suites) != 1 || suites.Suites[0].Name != "read_file" {
		t.Errorf("junit: %d tests, %d failures, suites %+v", suites.Tests, suites.Failures, suites.Suites)
	}
}

// A plugin that fails a check makes toolhost test exit
// 1, naming the check and what was expected; a bad command line exits 2.
func TestToolhostTestFails(t *testing.T) {
	dir := t.TempDir()
	copyFile(t, filepath.Join(filepath.Dir(toolhost), "plugins", "read_file.wasm"), filepath.Join(dir, "read_file.wasm"))
	cases := t.TempDir()
	if err := os.WriteFile(filepath.Join(cases, "wrong.json"), []byte(`{"files": {"a.txt": "one\n"},
		"tool": "read_file", "args": {"path": "a.txt"}, "expect": {"content": "two\n"}}`), 0o644); err != nil {
		t.Fatal(err)
	}
	w := newWorkspace(t)
	out, stderr, code := w.run(t, "test", "--cases", cases, dir)
	if code != 1 {
		t.Fatalf("exit %d, want 1\n%s\n%s", code, out, stderr)
	}
	for _, want := range []string{
		"FAIL  read_file         case:wrong",
		`        - step 1 (read_file): content: expected "two\n", got "one\n"`,
		"read_file: ", " 1 failed", ": FAILED\n",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}

	for _, args := range [][]string{
		{"test", "--format", "xml", dir},
		{"test", filepath.Join(dir, "missing.wasm")},
		{"test", t.TempDir()},
		{"test"},
		{"test", "--cases", filepath.Join(dir, "none"), dir},
	} {
		if out, stderr, code := w.run(t, args...); code != 2 {
			t.Errorf("toolhost %v: exit %d, want 2 (usage)\n%s%s", args, code, out, stderr)
		}
	}

	// A report that cannot be written is an error naming the file, not a
	// pass with a missing report.
	if _, err := os.Stat("/dev/full"); err == nil {
		out, stderr, code := w.run(t, "test", "--format", "junit", "-o", "/dev/full", filepath.Join(dir, "read_file.wasm"))
		if code == 0 || !strings.Contains(stderr, "/dev/full") {
			t.Errorf("a report to /dev/full: exit %d\n%s%s", code, out, stderr)
		}
	}
}

// What a plugin says in its manifest reaches the
// terminal with its escape sequences written out, never as escapes: a
// packed manifest carrying an OSC title sequence and a bidi override.
func TestToolhostTestSanitizesPluginText(t *testing.T) {
	dir := t.TempDir()
	module, err := os.ReadFile(filepath.Join(filepath.Dir(toolhost), "plugins", "read_file.wasm"))
	if err != nil {
		t.Fatal(err)
	}
	manifest, ok := customSection(module, "toolhost.manifest")
	if !ok {
		t.Fatal("the built-in read_file is not packed")
	}
	var m map[string]any
	if err := json.Unmarshal(manifest, &m); err != nil {
		t.Fatal(err)
	}
	m["description"] = "Reads.\x1b]0;owned\x07\u202e"
	lie, _ := json.Marshal(m)
	if err := os.WriteFile(filepath.Join(dir, "read_file.wasm"), replaceCustomSection(module, "toolhost.manifest", lie), 0o644); err != nil {
		t.Fatal(err)
	}
	w := newWorkspace(t)
	for _, format := range []string{"text", "json", "junit"} {
		out, stderr, code := w.run(t, "test", "--format", format, dir)
		if code != 1 {
			t.Errorf("%s: exit %d, want 1 (the packed manifest differs from describe)\n%s\n%s", format, code, out, stderr)
		}
		if !strings.Contains(out, "manifest.section") || !strings.Contains(out, "description") {
			t.Errorf("%s: the mismatch is not named:\n%s", format, out)
		}
		if strings.ContainsAny(out, "\x1b\x07\u202e") {
			t.Errorf("%s: a control character reached the terminal: %q", format, out)
		}
	}
}

// customSection returns the payload of the first custom section called
// name: sections are an id byte, a LEB128 size and the body; a custom
// section's body starts with its name.
func customSection(module []byte, name string) ([]byte, bool) {
	for _, s := range sections(module) {
		if n, payload, ok := customName(s); ok && n == name {
			return payload, true
		}
	}
	return nil, false
}

// replaceCustomSection returns module with its custom sections called
// name replaced by one holding payload, at the end.
func replaceCustomSection(module []byte, name string, payload []byte) []byte {
	out := append([]byte(nil), module[:8]...)
	for _, s := range sections(module) {
		if n, _, ok := customName(s); ok && n == name {
			continue
		}
		out = append(out, s...)
	}
	body := binary.AppendUvarint(nil, uint64(len(name)))
	body = append(append(body, name...), payload...)
	out = append(out, 0)
	out = binary.AppendUvarint(out, uint64(len(body)))
	return append(out, body...)
}

// sections splits a module into its raw sections (id, size and body).
func sections(module []byte) [][]byte {
	var out [][]byte
	for rest := module[8:]; len(rest) > 0; {
		size, n := binary.Uvarint(rest[1:])
		end := 1 + n + int(size)
		if n <= 0 || end > len(rest) {
			panic(fmt.Sprintf("malformed module at byte %d", len(module)-len(rest)))
		}
		out = append(out, rest[:end])
		rest = rest[end:]
	}
	return out
}

func customName(section []byte) (string, []byte, bool) {
	if section[0] != 0 {
		return "", nil, false
	}
	_, n := binary.Uvarint(section[1:])
	body := section[1+n:]
	l, m := binary.Uvarint(body)
	return string(body[m : m+int(l)]), body[m+int(l):], true
}

// The suite approves every call it makes, so a case
// file (here from --cases, which anyone may hand an operator) calling a
// tool that runs commands would run its command as the operator. Without
// --allow-exec no command runs: the case and run_command's dynamic checks
// are skipped, saying how to run them. With it, the command runs in the
// workspace with HOME pointing into a temporary directory, not the
// operator's, and confined: its write outside the root
// is refused, so the case ends with `; true` to pass whatever the touch
// says, and neither file exists.
func TestToolhostTestRunsNoCommandUnasked(t *testing.T) {
	dir := t.TempDir()
	copyFile(t, filepath.Join(filepath.Dir(toolhost), "plugins", "run_command.wasm"), filepath.Join(dir, "run_command.wasm"))
	outside := filepath.Join(t.TempDir(), "pwned")
	home := t.TempDir()
	cases := t.TempDir()
	hostile := fmt.Sprintf(`{"tool": "run_command", "args": {"command": "touch %s \"$HOME/pwned\"; true"}}`, outside)
	if err := os.WriteFile(filepath.Join(cases, "hostile.json"), []byte(hostile), 0o644); err != nil {
		t.Fatal(err)
	}
	w := newWorkspace(t).withEnv("HOME=" + home)
	out, stderr, code := w.run(t, "test", "--cases", cases, dir)
	if _, err := os.Stat(outside); err == nil {
		t.Fatalf("toolhost test ran a case's command without --allow-exec\n%s\n%s", out, stderr)
	}
	if code != 0 || !strings.Contains(out, "SKIP  run_command       case:hostile") || !strings.Contains(out, "--allow-exec") {
		t.Errorf("exit %d; want the case skipped, naming --allow-exec:\n%s\n%s", code, out, stderr)
	}
	if strings.Contains(out, "PASS  run_command       call.") {
		t.Errorf("run_command was called without --allow-exec:\n%s", out)
	}

	out, stderr, code = w.run(t, "test", "--allow-exec", "--cases", cases, dir)
	if code != 0 || !strings.Contains(out, "PASS  run_command       case:hostile") {
		t.Fatalf("--allow-exec: exit %d\n%s\n%s", code, out, stderr)
	}
	if _, err := os.Stat(filepath.Join(home, "pwned")); err == nil {
		t.Errorf("with --allow-exec, a command's ~ was the operator's home")
	}
	if _, err := os.Stat(outside); err == nil {
		t.Errorf("with --allow-exec, a case's command wrote %s, outside the workspace: it ran unconfined", outside)
	}
}

// A plugin's file name is the author's too. One named
// with an OSC sequence, a bell and a bidi override reaches no report, in
// any format, as anything but visible text.
func TestToolhostTestSanitizesPluginFileName(t *testing.T) {
	dir := t.TempDir()
	name := "r\x1b]0;owned\x07\u202e.wasm"
	copyFile(t, filepath.Join(filepath.Dir(toolhost), "plugins", "read_file.wasm"), filepath.Join(dir, name))
	w := newWorkspace(t)
	for _, format := range []string{"text", "json", "junit"} {
		out, stderr, code := w.run(t, "test", "--format", format, dir)
		if code != 0 {
			t.Errorf("%s: exit %d, want 0 (read_file passes, whatever its file's name)\n%s\n%s", format, code, out, stderr)
		}
		if strings.ContainsAny(out+stderr, "\x1b\x07\u202e") {
			t.Errorf("%s: a control character reached the terminal: %q %q", format, out, stderr)
		}
	}
}
