package confine

import (
	"os"
	"path/filepath"
	"testing"
)

// TestMain makes the test binary the launcher when a test starts it as
// one, as cmd/toolhost does for the toolhost binary.
func TestMain(m *testing.M) {
	if len(os.Args) > 1 && os.Args[1] == LauncherArg {
		os.Exit(Main(os.Args))
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
