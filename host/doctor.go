package host

import (
	"context"
	"io"
	"os"

	"github.com/toolhost/toolhost/host/internal/config"
	"github.com/toolhost/toolhost/host/internal/confine"
)

// SandboxDoctor probes what this kernel allows run_command's sandbox and
// writes toolhost sandbox doctor's report to w: one line per piece, the
// fix for each missing one, and the verdict for cfg's [tools.run_command]
// sandbox and network (nil: the defaults). It returns the exit status: 0
// when commands run confined as configured (or the operator turned the
// sandbox off), 1 when run_command would refuse them or the report could
// not be written. When commands run confined it also starts the
// launcher server and one launcher, and says how long that took.
func SandboxDoctor(ctx context.Context, w io.Writer, cfg *Config) int {
	if cfg == nil {
		cfg = config.Default()
	}
	rc := cfg.Tools.RunCommand
	if err := confine.Doctor(w, confine.Probe(ctx), confine.Mode(rc.Sandbox), confine.Network(rc.Network)); err != nil {
		return 1
	}
	if confine.Mode(rc.Sandbox) != confine.ModeOff {
		// Commands run confined without the launchers started ahead of
		// need, only slower: not a failure.
		small := ""
		if exe, err := os.Executable(); err == nil {
			small = confine.SmallLauncherBeside(exe)
		}
		confine.DoctorLaunchers(w, "/proc/self/exe", small, confine.Network(rc.Network))
	}
	return 0
}
