//go:build !linux

package launcher

import (
	"fmt"
	"os"
	"runtime"

	"github.com/toolhost/toolhost/host/internal/confine/spec"
)

// Main refuses to run anything: the launcher needs Linux namespaces,
// Landlock and seccomp. The host side fails closed before it would start
// one here.
func Main(args []string) int {
	fmt.Fprintf(os.Stderr, "toolhost: commands cannot be confined on %s (the launcher needs Linux namespaces, Landlock and seccomp); run toolhost on Linux, or set [tools.run_command] sandbox = \"off\" in the operator's configuration\n", runtime.GOOS)
	return spec.ExitLaunchFailed
}

// MainWarm refuses, as Main does.
func MainWarm(args []string) int { return Main(args) }

// ServeLaunchers refuses, as Main does.
func ServeLaunchers(args []string) int { return Main(args) }
