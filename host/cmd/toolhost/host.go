package main

import (
	"context"
	"slices"

	"github.com/spf13/pflag"

	"github.com/toolhost/toolhost/host"
	"github.com/toolhost/toolhost/host/internal/config"
)

// runFlags are the flags of commands that run tool calls.
type runFlags struct {
	roots  []string
	allow  []string
	stream bool
}

func (rf *runFlags) register(fl *pflag.FlagSet) {
	fl.StringArrayVar(&rf.roots, "root", nil, "allowed root directory (repeatable; the first is the working directory; default: tools.sandbox.allowed_roots)")
	fl.StringArrayVar(&rf.allow, "allow", nil, "approve this tool's calls without asking, even if denylisted (repeatable); never covers a call only a person may approve (a write laying out a git repository)")
	fl.BoolVar(&rf.stream, "stream", false, "copy streamed output (run_command's stdout and stderr) to stderr as it arrives")
}

// openHost loads the configuration and opens a host on it. --root
// replaces the configured roots; --allow TOOL lifts the denylist for TOOL:
// the person at the terminal is the approver. The caller closes the host.
func openHost(ctx context.Context, g *globals, rf *runFlags) (*host.Host, error) {
	loaded, err := g.settings()
	if err != nil {
		return nil, err
	}
	return openHostWith(ctx, g, rf, loaded)
}

// openHostWith is openHost on a configuration already loaded.
func openHostWith(ctx context.Context, g *globals, rf *runFlags, loaded *config.Loaded) (*host.Host, error) {
	cfg := loaded.Config
	if len(rf.roots) > 0 {
		cfg.Tools.Sandbox.AllowedRoots = rf.roots
	}
	cfg.Tools.Approval.Denylist = slices.DeleteFunc(slices.Clone(cfg.Tools.Approval.Denylist), func(t string) bool { return slices.Contains(rf.allow, t) })
	stateDir, err := g.state()
	if err != nil {
		return nil, usageErrorf("%v", err)
	}
	dir, err := g.pluginDir()
	if err != nil {
		return nil, err
	}
	// The operator's configuration, wherever its links lead, and the trust
	// list are out of every tool's reach.
	protected := loaded.ProtectedPaths()
	h, err := host.Open(ctx, host.Options{PluginDir: dir, Config: cfg, CacheDir: g.cache(), StateDir: stateDir, Protected: protected, Launcher: "/proc/self/exe", Logger: g.logger()})
	if err != nil {
		return nil, usageErrorf("%v", err)
	}
	return h, nil
}
