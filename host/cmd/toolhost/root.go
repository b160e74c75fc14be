package main

import (
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"runtime/pprof"

	"github.com/spf13/cobra"

	"github.com/toolhost/toolhost/host"
	"github.com/toolhost/toolhost/host/internal/config"
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
		Version:       host.Version(),
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	// --version prints what MCP clients get as serverInfo.version.
	root.SetVersionTemplate("toolhost {{.Version}}\n")
	root.SetFlagErrorFunc(func(_ *cobra.Command, err error) error { return usageErrorf("%v", err) })
	f := root.PersistentFlags()
	f.StringVar(&g.plugins, "plugins", "", "plugin directory (default: $TOOLHOST_PLUGINS, else plugins/ beside the toolhost binary)")
	f.StringVar(&g.cacheDir, "cache-dir", "", "compiled-code and manifest cache (default: $TOOLHOST_CACHE_DIR, else the user cache dir)")
	f.StringVar(&g.stateDir, "state-dir", "", "toolhost's state: read caches (default: $TOOLHOST_STATE_DIR, else $XDG_STATE_HOME/toolhost)")
	f.StringVar(&g.logLevel, "log-level", "warn", "log level: debug, info, warn, error")
	f.StringVar(&g.config, "config", "", "the operator's configuration file (default: $TOOLHOST_CONFIG, else toolhost.toml, .yaml or .yml in $XDG_CONFIG_HOME/toolhost); one in the working directory may only narrow it, once trusted with \"toolhost trust\"")
	f.StringVar(&g.profile, "cpuprofile", "", "write a CPU profile of this run to `file`")
	f.MarkHidden("cpuprofile")
	var stopProfile func()
	root.PersistentPreRunE = func(*cobra.Command, []string) error {
		var level slog.Level
		if err := level.UnmarshalText([]byte(g.logLevel)); err != nil {
			return usageErrorf("--log-level %q: want debug, info, warn or error", g.logLevel)
		}
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
	root.AddCommand(newToolsCommand(g), newCallCommand(g), newBatchCommand(g), newConfigCommand(g), newPluginCommand(g), newTrustCommand(g), newServeCommand(g), newJournalCommand(g), newUndoCommand(g))
	root.AddCommand(newLockCommand(g))
	root.AddCommand(newNewCommand(g))
	root.AddCommand(newTestCommand(g))
	root.AddCommand(newSandboxCommand(g))
	root.AddCommand(newApproveCommand(g))
	return root
}

// logger logs at --log-level, which PersistentPreRunE checked.
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

// configFile is --config, else $TOOLHOST_CONFIG; "" means the file in the
// user configuration directory, if there is one.
func (g *globals) configFile() string {
	if g.config != "" {
		return g.config
	}
	return os.Getenv("TOOLHOST_CONFIG")
}

// userDir is the user's toolhost configuration directory
// ($XDG_CONFIG_HOME/toolhost, else ~/.config/toolhost): the operator's
// file and the trust list. "" when neither variable gives one.
func userDir() string {
	dir, err := os.UserConfigDir()
	if err != nil {
		return ""
	}
	return filepath.Join(dir, "toolhost")
}

// settings loads the configuration: defaults, then the operator's file,
// then TOOLHOST_* variables, then a trusted project file's narrowing.
// Project files and settings that were ignored are logged as warnings
// saying what to do.
func (g *globals) settings() (*config.Loaded, error) {
	wd, err := os.Getwd()
	if err != nil {
		return nil, usageErrorf("working directory: %v", err)
	}
	l, err := config.Load(config.Options{File: g.configFile(), UserDir: userDir(), Dir: wd, Environ: os.Environ()})
	if err != nil {
		return nil, usageErrorf("configuration: %v", err)
	}
	log := g.logger()
	for _, f := range l.Files {
		if !f.Read && f.Role == config.RoleProject {
			log.Warn("configuration file ignored", "file", f.Path, "reason", f.Why)
		}
	}
	for _, s := range l.Ignored {
		log.Warn("project configuration setting ignored: it would widen the operator's policy", "setting", s)
	}
	return l, nil
}
