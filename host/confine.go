package host

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"

	"github.com/toolhost/toolhost/host/config"
	"github.com/toolhost/toolhost/host/internal/confine"
)

// commandSandbox is what confines run_command's commands for one host:
// the confiner, and what it made that Close removes (a private state
// directory when the host has none).
type commandSandbox struct {
	confiner *confine.Confiner
	closers  []func() error
}

// openCommandSandbox probes the kernel and prepares the confiner of the
// configured [tools.run_command] policy (issue 14). It never falls back
// to running commands unconfined: when confinement cannot be had, the
// confiner makes every command fail with the reason and the fix, and the
// host still opens, so that every other tool works.
func openCommandSandbox(ctx context.Context, cfg *config.Config, opts Options, protected []string, log *slog.Logger) (*commandSandbox, error) {
	s := commandSettings(cfg)
	if s.Mode == confine.ModeOff {
		log.Warn("run_command runs commands unconfined, with toolhost's own privileges: [tools.run_command] sandbox = \"off\" in the operator's configuration")
		return &commandSandbox{confiner: confine.NewConfiner(s, confine.Support{}, "", log)}, nil
	}
	cs := &commandSandbox{}
	state := opts.StateDir
	if state == "" {
		// Per-call temporary directories and per-root caches need a home;
		// without a state directory it lasts as long as the host.
		dir, err := os.MkdirTemp("", "toolhost-state-")
		if err != nil {
			return nil, fmt.Errorf("run_command's sandbox: %w", err)
		}
		state = dir
		cs.closers = append(cs.closers, func() error { return os.RemoveAll(dir) })
	}
	s.StateDir, s.Protected = state, protected
	s.Home, _ = os.UserHomeDir()
	s.Path = os.Getenv("PATH")
	support := confine.Probe(ctx)
	if err := support.Require(s.Mode, s.Network); err != nil {
		log.Error("run_command cannot confine commands here, so every command will be refused; `toolhost sandbox doctor` says what is missing", "err", err)
	}
	cs.confiner = confine.NewConfiner(s, support, opts.Launcher, log)
	return cs, nil
}

// commandSettings are [tools.run_command]'s settings for the confiner.
func commandSettings(cfg *config.Config) confine.Settings {
	return confine.Settings{Mode: confine.ModeWorkspaceWrite, Network: confine.NetworkOff}
}

func (cs *commandSandbox) close() error {
	var errs []error
	for i := len(cs.closers) - 1; i >= 0; i-- {
		errs = append(errs, cs.closers[i]())
	}
	return errors.Join(errs...)
}
