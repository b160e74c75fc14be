package host

import (
	"github.com/toolhost/toolhost/host/internal/confine/launcher"
	"github.com/toolhost/toolhost/host/internal/confine/spec"
)

// RunLauncher runs the confined launcher of run_command when args (a
// program's os.Args) ask for it, and reports whether they did: a program
// that hosts tools calls it first thing in main and exits with code when
// ok. The host re-executes its own binary (/proc/self/exe) as the launcher,
// the launcher server and the warm launchers it starts, so a single
// binary confines commands with no helper to install.
func RunLauncher(args []string) (code int, ok bool) {
	if len(args) < 2 {
		return 0, false
	}
	switch args[1] {
	case spec.LauncherArg:
		return launcher.Main(args), true
	case spec.WarmLauncherArg:
		return launcher.MainWarm(args), true
	case spec.LaunchersArg:
		return launcher.ServeLaunchers(args), true
	}
	return 0, false
}
