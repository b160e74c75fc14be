package conformance

import (
	"context"
	"os"
	"path/filepath"
	"strings"
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

// issue 13, red team items a and b: on a cold compile cache, a plugin
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

// issue 13, red team item c: a plugin the host refuses is reported by
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

// issue 13, red team: a plugin that behaves only while it is tested must
// not be able to tell: the workspace's path and the call ids look like
// real use (no "toolhost-test" or "conformance" in them). A command the
// plugin runs sees the root's path.
func TestWorkspaceLooksLikeRealUse(t *testing.T) {
	ctx := context.Background()
	mod := filepath.Join(testplugin.BuiltIns(t), "run_command.wasm")
	s, err := load(ctx, Plugin{Module: mod}, Options{CacheDir: testplugin.CacheDir(t), AllowExec: true})
	if err != nil || s.loadErr != nil {
		t.Fatalf("load: %v / %v", err, s.loadErr)
	}
	t.Cleanup(s.cleanup)
	w, err := s.open(ctx, nil, allowAll)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close(ctx)
	res := w.call(ctx, "run_command", []byte(`{"command": "pwd"}`))
	if !res.OK {
		t.Fatalf("pwd: %+v", res.Error)
	}
	for _, tell := range []string{"toolhost", "test", "conformance"} {
		if strings.Contains(strings.ToLower(res.Content+" "+res.ID), tell) {
			t.Errorf("the plugin can tell it is tested: %q in id %s, output %q", tell, res.ID, res.Content)
		}
	}
}
