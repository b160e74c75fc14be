package main

import (
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"runtime/pprof"

	"github.com/spf13/cobra"

	"github.com/toolhost/toolhost/host"
	"github.com/toolhost/toolhost/host/config"
)

// globals are the flags every command shares.
type globals struct {
	plugins  string
	cacheDir string
	stateDir string
	logLevel string
	profile  string
	config   string
}

func newRootCommand() *cobra.Command {
	g := &globals{}
	root := &cobra.Command{
		Use:           "toolhost",
		Short:         "Execute LLM tool calls as sandboxed WebAssembly plugins",
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	root.SetFlagErrorFunc(func(_ *cobra.Command, err error) error { return usageErrorf("%v", err) })
	f := root.PersistentFlags()
	f.StringVar(&g.plugins, "plugins", "", "plugin directory (default: $TOOLHOST_PLUGINS, else plugins/ beside the toolhost binary)")
	f.StringVar(&g.cacheDir, "cache-dir", "", "compiled-code and manifest cache (default: $TOOLHOST_CACHE_DIR, else the user cache dir)")
	f.StringVar(&g.stateDir, "state-dir", "", "toolhost's state: read caches (default: $TOOLHOST_STATE_DIR, else $XDG_STATE_HOME/toolhost)")
	f.StringVar(&g.logLevel, "log-level", "warn", "log level: debug, info, warn, error")
	f.StringVar(&g.config, "config", "", "configuration file (default: $TOOLHOST_CONFIG, else toolhost.toml or toolhost.yaml in the working directory)")
	f.StringVar(&g.profile, "cpuprofile", "", "write a CPU profile of this run to `file`")
	f.MarkHidden("cpuprofile")
	var stopProfile func()
	root.PersistentPreRunE = func(*cobra.Command, []string) error {
		if g.profile == "" {
			return nil
		}
		f, err := os.Create(g.profile)
		if err != nil {
			return usageErrorf("--cpuprofile: %v", err)
		}
		if err := pprof.StartCPUProfile(f); err != nil {
			f.Close()
			return usageErrorf("--cpuprofile: %v", err)
		}
		stopProfile = func() { pprof.StopCPUProfile(); f.Close() }
		return nil
	}
	root.PersistentPostRun = func(*cobra.Command, []string) {
		if stopProfile != nil {
			stopProfile()
		}
	}
	root.AddCommand(newToolsCommand(g), newCallCommand(g), newBatchCommand(g), newConfigCommand(g), newPluginCommand(g))
	return root
}

func (g *globals) logger() *slog.Logger {
	var level slog.Level
	if err := level.UnmarshalText([]byte(g.logLevel)); err != nil {
		level = slog.LevelWarn
	}
	return slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: level}))
}

func (g *globals) pluginDir() (string, error) {
	if g.plugins != "" {
		return g.plugins, nil
	}
	if dir := os.Getenv("TOOLHOST_PLUGINS"); dir != "" {
		return dir, nil
	}
	exe, err := os.Executable()
	if err != nil {
		return "", usageErrorf("cannot locate the toolhost binary to find its plugins: %v; pass --plugins", err)
	}
	if resolved, err := filepath.EvalSymlinks(exe); err == nil {
		exe = resolved
	}
	return filepath.Join(filepath.Dir(exe), "plugins"), nil
}

func (g *globals) cache() string {
	switch {
	case g.cacheDir != "":
		return g.cacheDir
	case os.Getenv("TOOLHOST_CACHE_DIR") != "":
		return os.Getenv("TOOLHOST_CACHE_DIR")
	}
	return host.DefaultCacheDir()
}

func (g *globals) state() (string, error) {
	switch {
	case g.stateDir != "":
		return filepath.Abs(g.stateDir)
	case os.Getenv("TOOLHOST_STATE_DIR") != "":
		return filepath.Abs(os.Getenv("TOOLHOST_STATE_DIR"))
	case os.Getenv("XDG_STATE_HOME") != "":
		return filepath.Join(os.Getenv("XDG_STATE_HOME"), "toolhost"), nil
	}
	home, err := os.UserHomeDir()
	if err != nil {
		return "", fmt.Errorf("no state directory: %w; pass --state-dir", err)
	}
	return filepath.Join(home, ".local", "state", "toolhost"), nil
}

// configFile is --config, else $TOOLHOST_CONFIG; "" means toolhost.toml
// (or .yaml) in the working directory, if there is one.
func (g *globals) configFile() string {
	if g.config != "" {
		return g.config
	}
	return os.Getenv("TOOLHOST_CONFIG")
}

// settings loads the configuration: defaults, then the file, then
// TOOLHOST_* variables.
func (g *globals) settings() (*config.Loaded, error) {
	wd, err := os.Getwd()
	if err != nil {
		return nil, usageErrorf("working directory: %v", err)
	}
	l, err := config.Load(config.Options{File: g.configFile(), Dir: wd, Environ: os.Environ()})
	if err != nil {
		return nil, usageErrorf("configuration: %v", err)
	}
	return l, nil
}
