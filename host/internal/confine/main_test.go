package confine

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/toolhost/toolhost/host/internal/confine/launcher"
)

// TestMain makes the test binary the launcher when a test starts it as
// one, as cmd/toolhost does for the toolhost binary. Tests may import the
// launcher; the package itself never does.
func TestMain(m *testing.M) {
	if code, ok := launcher.Run(os.Args); ok {
		os.Exit(code)
	}
	os.Exit(m.Run())
}

// canonicalTempDir is t.TempDir without symlinks: the launcher refuses a
// mount source that passes through one.
func canonicalTempDir(t testing.TB) string {
	t.Helper()
	d, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	return d
}
