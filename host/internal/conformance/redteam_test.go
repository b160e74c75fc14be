package conformance

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/toolhost/toolhost/internal/testplugin"
)

// runAll runs the whole suite on module through Run, as toolhost test
// does, and returns its results by check (the failing one of a check
// that ran per tool).
func runAll(t *testing.T, module string, opts Options) map[string]Result {
	t.Helper()
	reports, err := Run(context.Background(), []string{module}, opts)
	if err != nil || len(reports) != 1 {
		t.Fatalf("Run: %v, %d reports", err, len(reports))
	}
	out := map[string]Result{}
	for _, r := range reports[0].Results {
		if prev, ok := out[r.Check]; !ok || prev.Status != StatusFail {
			out[r.Check] = r
		}
	}
	return out
}

// On a cold compile cache, a plugin
// whose start-up spins fails start.spin for that alone: compiling (which
// takes seconds cold, under -race) is not counted against its start-up
// limit, as the host does not count it. manifest.section does not spend
// the interpreter's ten-second start-up limit on a describe that the
// spinning start-up keeps from running: it skips, pointing at start.spin.
func TestSpinningStartUpOnColdCache(t *testing.T) {
	module := buildBroken(t, "spin_init")
	got := runAll(t, module, Options{CacheDir: t.TempDir(), Timeout: time.Second})
	spin := got["start.spin"]
	if spin.Status != StatusFail || !strings.Contains(spin.Detail, "_initialize") {
		t.Fatalf("start.spin: %s", text(spin))
	}
	if len(spin.Findings) > 0 {
		t.Errorf("start.spin blames the plugin for time it did not spend: %s", text(spin))
	}
	sec := got["manifest.section"]
	if sec.Status != StatusSkip || !strings.Contains(sec.Detail, "see start.spin") {
		t.Errorf("manifest.section: %s; want a skip pointing at start.spin", text(sec))
	}
}

// C: a plugin the host refuses is reported by
// the path the user gave, never by the temporary copy a workspace loads.
func TestLoadFailureNamesUserPath(t *testing.T) {
	module := buildBroken(t, "ungranted_import")
	got := runAll(t, module, Options{CacheDir: testplugin.CacheDir(t), Timeout: time.Second})
	load, ok := got["load"]
	if !ok || load.Status != StatusFail {
		t.Fatalf("load: %+v", load)
	}
	// The refusal names the plugin directory: the user's is the one
	// holding the module.
	if !strings.Contains(load.Detail, filepath.Dir(module)) {
		t.Errorf("load does not name %s: %s", filepath.Dir(module), load.Detail)
	}
	if rest := strings.ReplaceAll(load.Detail, filepath.Dir(module), ""); strings.Contains(rest, os.TempDir()+"/") {
		t.Errorf("load names a temporary path: %s", load.Detail)
	}
}

// A plugin that behaves only while it is tested must
// not be able to tell: the workspace's path and the call ids look like
// real use (no "toolhost-test" or "conformance" in them). A command the
// plugin runs sees the root's path.
func TestWorkspaceLooksLikeRealUse(t *testing.T) {
	ctx := context.Background()
	mod := filepath.Join(testplugin.BuiltIns(t), "run_command.wasm")
	s, err := load(ctx, Plugin{Module: mod}, Options{CacheDir: testplugin.CacheDir(t), AllowExec: true, Config: unconfined()})
	if err != nil || s.loadErr != nil {
		t.Fatalf("load: %v / %v", err, s.loadErr)
	}
	t.Cleanup(s.cleanup)
	w, err := s.open(ctx, fixtures(fixtureOptions{}), allowAll)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close(ctx)
	res := w.call(ctx, "run_command", []byte(`{"command": "pwd; cat .env a.txt"}`))
	if !res.OK {
		t.Fatalf("pwd: %+v", res.Error)
	}
	for _, tell := range []string{"toolhost", "test", "conformance"} {
		if strings.Contains(strings.ToLower(res.Content+" "+res.ID), tell) {
			t.Errorf("the plugin can tell it is tested: %q in id %s, output %q", tell, res.ID, res.Content)
		}
	}
}

// A plugin's case files are the author's, read by an
// operator's toolhost test: a case that is a FIFO (which would block the
// run forever), a link to /dev/zero (which would fill memory), a file of
// megabytes, or a case of thousands of calls is refused as malformed,
// naming the file, and the run goes on.
func TestHostileCaseFilesRefused(t *testing.T) {
	cases := t.TempDir()
	if err := syscall.Mkfifo(filepath.Join(cases, "fifo.json"), 0o644); err != nil {
		t.Fatal(err)
	}
	if os.Getenv("TOOLHOST_REDTEAM_OLD") == "" {
		if err := os.Symlink("/dev/zero", filepath.Join(cases, "zero.json")); err != nil {
			t.Fatal(err)
		}
	}
	big := `{"tool": "read_file", "args": {"path": "` + strings.Repeat("a", 2<<20) + `"}}`
	steps := strings.TrimSuffix(strings.Repeat(`{"tool": "read_file", "args": {"path": "a"}},`, 5000), ",")
	for name, body := range map[string]string{"big.json": big, "many.json": `{"steps": [` + steps + `]}`} {
		if err := os.WriteFile(filepath.Join(cases, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	mod := filepath.Join(testplugin.BuiltIns(t), "read_file.wasm")
	done := make(chan map[string]Result, 1)
	ctx := context.Background()
	s, err := load(ctx, Plugin{Module: mod}, Options{CacheDir: testplugin.CacheDir(t), Cases: cases})
	if err != nil || s.loadErr != nil {
		t.Fatalf("load: %v / %v", err, s.loadErr)
	}
	t.Cleanup(s.cleanup)
	go func() {
		got := map[string]Result{}
		runCases(ctx, s, func(r Result) { got[r.Check] = r })
		done <- got
	}()
	var got map[string]Result
	select {
	case got = <-done:
	case <-time.After(3 * time.Minute):
		t.Fatal("toolhost test did not finish: it is stuck on a case file")
	}
	want := map[string]string{
		"case:fifo": "not a regular file",
		"case:zero": "not a regular file",
		"case:big":  "more than the 1048576",
		"case:many": "5000 steps, more than the 256",
	}
	if os.Getenv("TOOLHOST_REDTEAM_OLD") != "" {
		delete(want, "case:zero")
	}
	for check, msg := range want {
		r := got[check]
		if r.Status != StatusFail || !strings.Contains(r.Detail, msg) {
			t.Errorf("%s: %s; want a failure saying %q", check, text(r), msg)
		}
	}
}
