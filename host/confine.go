package host

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/user"
	"path/filepath"
	"slices"

	"github.com/toolhost/toolhost/host/internal/config"
	"github.com/toolhost/toolhost/host/internal/confine"
	"github.com/toolhost/toolhost/host/internal/egress"
)

// commandSandbox is what confines run_command's commands for one host:
// the confiner, and what it made that Close removes (a private state
// directory when the host has none).
type commandSandbox struct {
	confiner *confine.Confiner
	closers  []func() error
}

// openCommandSandbox probes the kernel and prepares the confiner of the
// configured [tools.run_command] policy. It never falls back
// to running commands unconfined: when confinement cannot be had, the
// confiner makes every command fail with the reason and the fix, and the
// host still opens, so that every other tool works.
func openCommandSandbox(ctx context.Context, cfg *config.Config, launcher, stateDir string, roots, protected, hidden []string, log *slog.Logger) (*commandSandbox, error) {
	s := commandSettings(cfg)
	home, homeErr := userHome()
	// A configuration built without config.Load (an embedder's) gets the
	// same checks of its writable directories as a file's.
	if err := cfg.Tools.RunCommand.CheckExtraWritable(home, protected); err != nil {
		return nil, fmt.Errorf("configuration: %w", err)
	}
	if s.Mode == confine.ModeOff {
		log.Warn("run_command runs commands unconfined, with toolhost's own privileges: [tools.run_command] sandbox = \"off\" in the operator's configuration")
		if !profileConfines(cfg) {
			return &commandSandbox{confiner: confine.NewConfiner(s, confine.Support{}, "", log)}, nil
		}
	}
	cs := &commandSandbox{}
	state := stateDir
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
	abs, err := filepath.Abs(state)
	if err != nil {
		cs.close()
		return nil, fmt.Errorf("run_command's sandbox: state directory %s: %w", state, err)
	}
	s.StateDir = abs
	// What is hidden is not also bound read-only: a bind below a hidden
	// directory could not be made.
	kept := slices.DeleteFunc(slices.Clone(protected), func(p string) bool { return slices.Contains(hidden, p) })
	s.Protected, s.Hidden, s.Home = slices.Concat(kept, projectFiles(roots)), hidden, home
	s.Path = os.Getenv("PATH")
	s.ProjectFileNames = config.ProjectFileNames()
	// The search for nested repositories and project files is re-done
	// only where a directory changed since the last call.
	s.Search = confine.NewSearchCache()
	support := confine.Probe(ctx)
	log.Info("run_command's sandbox", "sandbox", s.Mode, "network", s.Network, "kernel", support.Summary())
	if err := support.Require(confine.StricterMode(s.Mode, confine.ModeWorkspaceWrite), s.Network); err != nil {
		log.Error("run_command cannot confine commands here, so every confined command will be refused; `toolhost sandbox doctor` says what is missing", "err", err)
	}
	if homeErr != nil {
		// Without the home directory the secrets in it cannot be hidden
		// should a root contain it: commands must not run.
		support.Home = homeErr
	}
	cs.confiner = confine.NewConfiner(s, support, launcher, log)
	if s.Network == confine.NetworkAllowlist || profileNetwork(cfg, config.NetworkAllowlist) {
		dir, err := cs.proxyDir()
		if err != nil {
			cs.close()
			return nil, err
		}
		rules, err := commandRules(cfg)
		if err != nil {
			cs.close()
			return nil, fmt.Errorf("configuration: %w", err)
		}
		cs.confiner = cs.confiner.WithProxy(dir, rules)
	}
	// Launchers are started by Host.WarmUp or the first command, not
	// here: a host that runs no command (toolhost call read_file) would
	// start and end them for nothing. They end first at close.
	if launcher == "/proc/self/exe" {
		if exe, err := os.Executable(); err == nil {
			cs.confiner.PoolLaunchers(confine.SmallLauncherBeside(exe))
		}
	} else {
		cs.confiner.PoolLaunchers("")
	}
	confiner := cs.confiner
	cs.closers = append(cs.closers, func() error { confiner.Close(); return nil })
	return cs, nil
}

// projectFiles are the names a project configuration file may have in
// each root: a command must not rewrite the policy the next run of
// toolhost in that directory reads. Build binds those
// that exist read-only.
func projectFiles(roots []string) []string {
	var out []string
	for _, root := range roots {
		for _, name := range config.ProjectFileNames() {
			out = append(out, filepath.Join(root, name))
		}
	}
	return out
}

// userHome is the user's home directory, from $HOME or else the user
// database: the secrets the sandbox hides are found under it.
func userHome() (string, error) {
	if home, err := os.UserHomeDir(); err == nil {
		return home, nil
	}
	u, err := user.Current()
	if err != nil || u.HomeDir == "" {
		return "", fmt.Errorf("cannot tell the user's home directory (HOME is unset and the user database has none), so the secrets in it cannot be hidden from commands; set HOME: %v", err)
	}
	return u.HomeDir, nil
}

// profileNetwork reports whether a profile narrows the network to n.
func profileNetwork(cfg *config.Config, n config.CommandNetwork) bool {
	for _, p := range cfg.Profiles {
		if p.Network == n {
			return true
		}
	}
	return false
}

// profileConfines reports whether a profile asks for a sandbox the
// configuration's own mode does not have.
func profileConfines(cfg *config.Config) bool {
	for _, p := range cfg.Profiles {
		if p.Sandbox != "" && p.Sandbox != config.SandboxOff {
			return true
		}
	}
	return false
}

// commandSettings are [tools.run_command]'s settings for the confiner.
// The environment commands get comes with each call, from the engine,
// which sanitizes it once (confine.Call.Environ).
func commandSettings(cfg *config.Config) confine.Settings {
	rc := cfg.Tools.RunCommand
	return confine.Settings{
		Mode:          rc.Sandbox,
		Network:       rc.Network,
		ExtraWritable: rc.ExtraWritable,
		ShareCaches:   rc.ShareCaches,
		Limits: confine.Limits{
			CPUSeconds:    uint64(max(rc.CPUSeconds, 0)),
			FileSizeBytes: rc.MaxFileSize,
			OpenFiles:     uint64(max(rc.OpenFiles, 0)),
			MemoryBytes:   rc.MemoryMax,
			Pids:          uint64(max(rc.PidsMax, 0)),
		},
	}
}

// commandRules are [tools.run_command]'s allowed_domains and
// denied_domains as the calls' egress proxies check them.
func commandRules(cfg *config.Config) (egress.Rules, error) {
	rc := cfg.Tools.RunCommand
	return egress.ParseRules(rc.AllowedDomains, rc.DeniedDomains)
}

// proxyDir makes the directory the calls' egress proxies listen in under
// network = "allowlist": under the system's temporary
// directory, since a Unix socket's path is limited to 108 bytes, which a
// state directory's may not leave room for.
func (cs *commandSandbox) proxyDir() (string, error) {
	dir, err := os.MkdirTemp("", "toolhost-egress-")
	if err != nil {
		return "", fmt.Errorf("run_command's network proxy: %w", err)
	}
	cs.closers = append(cs.closers, func() error { return os.RemoveAll(dir) })
	return dir, nil
}

func (cs *commandSandbox) close() error {
	var errs []error
	for i := len(cs.closers) - 1; i >= 0; i-- {
		errs = append(errs, cs.closers[i]())
	}
	return errors.Join(errs...)
}
