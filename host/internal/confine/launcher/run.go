package launcher

import "github.com/toolhost/toolhost/host/internal/confine/spec"

// Run runs the launcher, the warm launcher or the launcher server when
// args (a program's os.Args) ask for one, and reports whether they did:
// a program that confines commands calls it first thing in main and
// exits with code when ok.
func Run(args []string) (code int, ok bool) {
	if len(args) < 2 {
		return 0, false
	}
	switch args[1] {
	case spec.LauncherArg:
		return Main(args), true
	case spec.WarmLauncherArg:
		return MainWarm(args), true
	case spec.LaunchersArg:
		return ServeLaunchers(args), true
	}
	return 0, false
}
