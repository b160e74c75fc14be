package host

import (
	"github.com/toolhost/toolhost/host/internal/confine/launcher"
)

// RunLauncher runs the confined launcher of run_command when args (a
// program's os.Args) ask for it, and reports whether they did: a program
// that hosts tools calls it first thing in main and exits with code when
// ok. The host re-executes its own binary (/proc/self/exe) as the launcher,
// the launcher server and the warm launchers it starts, so a single
// binary confines commands with no helper to install.
func RunLauncher(args []string) (code int, ok bool) {
	return launcher.Run(args)
}
