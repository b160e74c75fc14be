package e2e

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// Toolhost test on a directory tests every
// module serve would load from it. A *.wasm that is a symbolic link to a
// module elsewhere is served (the registry follows it), so the suite must
// not pass over it: an operator was told "ok" for a directory whose other
// tool nobody tested.
func TestToolhostTestCoversWhatServeLoads(t *testing.T) {
	plugins := filepath.Join(filepath.Dir(toolhost), "plugins")
	dir, elsewhere := t.TempDir(), t.TempDir()
	copyFile(t, filepath.Join(plugins, "read_file.wasm"), filepath.Join(dir, "read_file.wasm"))
	copyFile(t, filepath.Join(plugins, "write_file.wasm"), filepath.Join(elsewhere, "write_file.wasm"))
	if err := os.Symlink(filepath.Join(elsewhere, "write_file.wasm"), filepath.Join(dir, "extra.wasm")); err != nil {
		t.Fatal(err)
	}
	w := newWorkspace(t)
	served, stderr, code := w.run(t, "--plugins", dir, "tools")
	if code != 0 || !strings.Contains(served, `"write_file"`) {
		t.Fatalf("toolhost tools: exit %d, want write_file served through the link\n%s%s", code, served, stderr)
	}
	out, stderr, code := w.run(t, "test", dir)
	if !strings.Contains(out, "2 plugin(s)") || !strings.Contains(out, "  write_file  ") {
		t.Errorf("toolhost test (exit %d) did not test write_file, which serve loads from %s:\n%s%s", code, dir, out, stderr)
	}
}
