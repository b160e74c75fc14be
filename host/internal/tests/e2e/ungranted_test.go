package e2e

import (
	"strings"
	"testing"

	"github.com/toolhost/toolhost/internal/testplugin"
)

// A plugin importing a host function its manifest does not grant keeps
// the whole plugin directory from loading, with a message that names the
// plugin and the function.
func TestUngrantedImportRefusedByCLI(t *testing.T) {
	dir := t.TempDir()
	testplugin.Build(t, dir, "host/internal/runtime/testdata/ungranted")
	w := newWorkspace(t)
	out, stderr, code := w.run(t, "--plugins", dir, "tools")
	if code != 2 || out != "" {
		t.Fatalf("exit %d, stdout %q", code, out)
	}
	for _, want := range []string{"ungranted", "fs_write", "capabilities"} {
		if !strings.Contains(stderr, want) {
			t.Errorf("stderr %q does not mention %q", stderr, want)
		}
	}
}
