// Package conformance runs `toolhost test` on deliberately broken plugins:
// each plugin under broken/ is wrong in exactly one way,
// and the suite must fail it in the check that covers that way, naming
// the reason, and in no check that does not.
package conformance

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/toolhost/toolhost/internal/testplugin"
)

// toolhost is the binary under test: $TOOLHOST_BIN (what `make build`
// produced), or one TestMain builds when the tests run on their own.
var toolhost string

func TestMain(m *testing.M) { testplugin.Main(m, &toolhost, nil) }

// staticChecks read the module and its manifest only: a plugin broken in
// its behaviour, or in another part of its manifest, must pass each.
var staticChecks = []string{
	"abi.exports", "abi.version", "abi.imports", "abi.least-privilege",
	"manifest.fields", "manifest.schema", "manifest.path-args", "manifest.effects", "manifest.section",
}

// callChecks are the dynamic checks: a correct plugin runs every one.
// Where a broken plugin cannot load or start, or every call spins, they
// are skipped with a pointer to the check that failed, not failed again.
var callChecks = []string{
	"start.spin", "call.generated", "call.invalid", "call.escape", "call.huge", "call.output-cap",
	"call.deadline", "call.deterministic", "call.unnamed-files",
}

// brokenPlugins are the plugins under broken/: the check
// each must fail, what that check's detail or findings must say (regular
// expressions, case-insensitive, each matched on its own), and the other
// checks its one fault may also fail. Any other failing check is the suite
// blaming a plugin for something it did not do.
var brokenPlugins = []struct {
	name    string
	check   string
	reasons []string
	also    []string
}{
	{
		name: "ungranted_import", check: "abi.imports",
		reasons: []string{`toolhost_v1\.proc_run`, `proc\.exec`},
		// The host refuses to load it, so nothing can be called.
		also: []string{"load"},
	},
	{name: "unused_capability", check: "abi.least-privilege", reasons: []string{`fs\.write`, `unused|no import uses`}},
	{name: "lying_manifest", check: "manifest.effects", reasons: []string{`fs\.write`, `side_effecting`, `risk_level`}},
	{
		name: "unchecked_path", check: "manifest.path-args", reasons: []string{`"path"`, `path_args`},
		// The suite attacks a path-like argument as a declared one: an
		// escaping value reaches fs_read before the sandbox refuses it.
		also: []string{"call.escape"},
	},
	{
		name: "spin_loop", check: "call.deadline", reasons: []string{`deadline`, `stopped|timed out`},
	},
	{
		// Its describe never runs, so manifest.section skips, pointing
		// at start.spin, rather than fail again (red team item b).
		name: "spin_init", check: "start.spin", reasons: []string{`_initialize`, `did not finish|ran past`},
	},
	{name: "trap_bad_input", check: "call.generated", reasons: []string{`"word":\s*""`, `panic|trap`}},
	{name: "output_flood", check: "call.output-cap", reasons: []string{`\d+ bytes or more`, `cap of 65536`, `no_truncate`}},
	{
		name: "escape_attempt", check: "call.escape",
		reasons: []string{`\.\./\.\./etc/passwd`, `(^|[^./])/etc/passwd`, `\.\./state`},
		// Reading files no argument names is the same fault seen from
		// inside the root.
		also: []string{"call.unnamed-files"},
	},
	{name: "unnamed_write", check: "call.unnamed-files", reasons: []string{`fs_write "?other\.txt`}},
	{name: "summary_io", check: "summary.pure", reasons: []string{`fs_stat`}},
	{name: "nondeterministic_liar", check: "call.deterministic", reasons: []string{`lucky \d+`, `nondeterministic`}},
}

// TestBrokenPluginsFailForTheirReason runs the real `toolhost test` on each
// deliberately broken plugin: exit status 1, the
// plugin's own check failed with its reason in the output, every static
// check it is not broken in passed, and no unrelated check failed.
func TestBrokenPluginsFailForTheirReason(t *testing.T) {
	for _, tc := range brokenPlugins {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			wasm := buildBroken(t, tc.name)
			rep, code, stderr := runTest(t, wasm)
			if code != 1 {
				t.Errorf("exit status %d, want 1 (a check failed)\nstderr: %s", code, stderr)
			}
			results := rep.results()
			got, ok := find(results, tc.check)
			switch {
			case !ok:
				t.Fatalf("no %s result; results:\n%s", tc.check, describe(results))
			case got.Status != "fail":
				t.Fatalf("%s is %s, want fail: %s\nall results:\n%s", tc.check, got.Status, got.text(), describe(results))
			}
			for _, reason := range tc.reasons {
				if !regexp.MustCompile("(?i)" + reason).MatchString(got.text()) {
					t.Errorf("%s failed without naming %s:\n%s", tc.check, reason, got.text())
				}
			}
			for _, r := range results {
				if r.Status != "fail" || r.Check == tc.check || slices.Contains(tc.also, r.Check) {
					continue
				}
				t.Errorf("%s also failed %s, which its fault does not explain: %s", tc.name, r.Check, r.text())
			}
			for _, c := range staticChecks {
				if c == tc.check || slices.Contains(tc.also, c) {
					continue
				}
				if _, ok := find(results, c); !ok {
					t.Errorf("no %s result: the static checks must run on a plugin broken elsewhere; results:\n%s", c, describe(results))
				}
			}
		})
	}
}

// TestGoodPluginPasses is the control for the broken plugins: a tiny correct plugin, built the same way, passes every check.
func TestGoodPluginPasses(t *testing.T) {
	wasm := buildBroken(t, "good")
	rep, code, stderr := runTest(t, wasm)
	results := rep.results()
	for _, r := range results {
		if r.Status == "fail" {
			t.Errorf("%s failed: %s", r.Check, r.text())
		}
	}
	if code != 0 {
		t.Errorf("exit status %d, want 0\nstderr: %s", code, stderr)
	}
	for _, c := range append(append(slices.Clone(staticChecks), callChecks...), "summary.pure") {
		if r, ok := find(results, c); !ok || r.Status == "skip" && c != "manifest.section" {
			t.Errorf("%s did not run on a plain file-reading tool (%+v); results:\n%s", c, r, describe(results))
		}
	}
}

// buildBroken builds broken/<name> into a fresh directory, as the
// built-in plugins are built. A plugin whose start-up never ends cannot
// describe itself, so its manifest.json is packed into the module.
func buildBroken(t *testing.T, name string) string {
	t.Helper()
	wasm := testplugin.Build(t, t.TempDir(), "host/internal/tests/conformance/broken/"+name)
	manifest, err := os.ReadFile(filepath.Join("broken", name, "manifest.json"))
	if errors.Is(err, os.ErrNotExist) {
		return wasm
	}
	if err != nil {
		t.Fatal(err)
	}
	module, err := os.ReadFile(wasm)
	if err != nil {
		t.Fatal(err)
	}
	packed := appendCustomSection(module, "toolhost.manifest", bytes.TrimSpace(manifest))
	if err := os.WriteFile(wasm, packed, 0o644); err != nil {
		t.Fatal(err)
	}
	return wasm
}

// appendCustomSection adds a WebAssembly custom section (id 0: a
// LEB128 size, then the name and the payload) at the end of module.
func appendCustomSection(module []byte, name string, payload []byte) []byte {
	body := binary.AppendUvarint(nil, uint64(len(name)))
	body = append(body, name...)
	body = append(body, payload...)
	module = append(module, 0)
	module = binary.AppendUvarint(module, uint64(len(body)))
	return append(module, body...)
}

// report is `toolhost test --format json`'s output.
type report struct {
	Plugins []struct {
		Path    string   `json:"path"`
		Tools   []string `json:"tools"`
		Results []result `json:"results"`
	} `json:"plugins"`
	Passed  int `json:"passed"`
	Failed  int `json:"failed"`
	Skipped int `json:"skipped"`
}

type result struct {
	Check    string   `json:"check"`
	Tool     string   `json:"tool"`
	Status   string   `json:"status"`
	Detail   string   `json:"detail"`
	Findings []string `json:"findings"`
}

// text is what the result says: its detail, then one finding a line.
func (r result) text() string {
	return strings.Join(append([]string{r.Detail}, r.Findings...), "\n")
}

func (rep report) results() []result {
	var out []result
	for _, p := range rep.Plugins {
		out = append(out, p.Results...)
	}
	return out
}

// find returns the result of check: a failing one if the check ran more
// than once (per tool), so that a failure is never hidden by a pass.
func find(results []result, check string) (result, bool) {
	var got result
	ok := false
	for _, r := range results {
		if r.Check == check && (!ok || r.Status == "fail") {
			got, ok = r, true
		}
	}
	return got, ok
}

func describe(results []result) string {
	var b strings.Builder
	for _, r := range results {
		fmt.Fprintf(&b, "  %-5s %-22s %s\n", r.Status, r.Check, strings.ReplaceAll(r.text(), "\n", "\n        "))
	}
	return b.String()
}

// runTest runs `toolhost test --format json wasm` and returns its report,
// exit status and standard error. A run is bounded: a check that hangs
// on a broken plugin is itself a failure.
func runTest(t *testing.T, wasm string) (report, int, string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	var stdout, stderr bytes.Buffer
	cmd := exec.CommandContext(ctx, toolhost, "test", "--format", "json", wasm)
	cmd.Dir = t.TempDir()
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	if ctx.Err() != nil {
		t.Fatalf("toolhost test %s did not finish in 5 minutes\nstderr: %s", filepath.Base(wasm), stderr.String())
	}
	var exit *exec.ExitError
	code := 0
	switch {
	case errors.As(err, &exit):
		code = exit.ExitCode()
	case err != nil:
		t.Fatalf("toolhost test: %v", err)
	}
	var rep report
	if err := json.Unmarshal(stdout.Bytes(), &rep); err != nil {
		t.Fatalf("toolhost test --format json printed no JSON report (exit %d): %v\nstdout: %s\nstderr: %s", code, err, stdout.String(), stderr.String())
	}
	return rep, code, stderr.String()
}
