package confine

import (
	"os"
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
