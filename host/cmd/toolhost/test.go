package main

import (
	"cmp"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"time"

	"github.com/spf13/cobra"

	"github.com/toolhost/toolhost/host/internal/conformance"
)

// testFlags are toolhost test's flags.
type testFlags struct {
	format  string
	output  string
	cases   string
	timeout time.Duration
	// allowExec lets the suite run commands (proc.exec tools).
	allowExec bool
}

// newTestCommand is `toolhost test`, the conformance suite a plugin must
// pass before an operator trusts it.
func newTestCommand(g *globals) *cobra.Command {
	tf := &testFlags{}
	cmd := &cobra.Command{
		Use:   "test PLUGIN.wasm|DIR...",
		Short: "Check that plugins are fit to run: ABI, manifest honesty, behaviour under attack, their own cases",
		Long: `Check each plugin (a module, or every plugin in a directory) in fresh temporary
sandboxes: its exports and imports, whether its manifest is honest about what its
capabilities allow, how it behaves when called as a hostile model would call it, and
its own cases (conformance/*.json beside it). Exit status 0 when every check passes,
1 when one fails, 2 on a usage error.

The suite approves every call it makes. Tools that run commands (proc.exec) are
therefore not called unless --allow-exec is given: a command chosen by a plugin
or a case file would run as you. With --allow-exec, commands start in the
workspace's root with HOME and the XDG directories pointing into a temporary
directory, but they run with your rights and may name any path.`,
		Args: cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, paths []string) error {
			return runTest(cmd, g, tf, paths)
		},
	}
	f := cmd.Flags()
	f.StringVar(&tf.format, "format", "text", "report format: text, json or junit")
	f.StringVarP(&tf.output, "output", "o", "", "write the report to `file` (text still streams to stdout with json or junit)")
	f.StringVar(&tf.cases, "cases", "", "read case files (*.json) from `dir` instead of conformance/ beside each plugin")
	f.DurationVar(&tf.timeout, "timeout", time.Second, "the deadline the short-deadline check gives a call")
	f.BoolVar(&tf.allowExec, "allow-exec", false, "call tools that run commands (proc.exec) and run their cases: the suite approves every call, so the commands a plugin or case file chooses run as you, in the workspace; only for plugins and cases you trust")
	return cmd
}

func runTest(cmd *cobra.Command, g *globals, tf *testFlags, paths []string) error {
	switch tf.format {
	case "text", "json", "junit":
	default:
		return usageErrorf("--format %q: want text, json or junit", tf.format)
	}
	if tf.timeout <= 0 {
		return usageErrorf("--timeout %v: want a positive duration such as 1s", tf.timeout)
	}
	if tf.cases != "" {
		if info, err := os.Stat(tf.cases); err != nil || !info.IsDir() {
			return usageErrorf("--cases %s: not a directory of case files", tf.cases)
		}
	}
	if _, err := conformance.Discover(paths); err != nil {
		return usageErrorf("%v", err)
	}
	loaded, err := g.settings()
	if err != nil {
		return err
	}
	out := io.Writer(os.Stdout)
	var file *os.File
	if tf.output != "" {
		if file, err = os.Create(tf.output); err != nil {
			return usageErrorf("--output: %v", err)
		}
		defer file.Close() // on the way out early; the report's end checks it
		out = file
	}
	// The text lines stream where the report goes, or to stdout when a
	// file takes a json or junit report.
	var text *conformance.Text
	switch {
	case tf.format == "text":
		text = &conformance.Text{W: out}
	case tf.output != "":
		text = &conformance.Text{W: os.Stdout}
	}
	// The hosts under test log what the attacks provoke; only a
	// --log-level the user asked for shows it.
	logger := slog.New(slog.DiscardHandler)
	if cmd.Flags().Changed("log-level") {
		logger = g.logger()
	}
	opts := conformance.Options{CacheDir: g.cache(), Cases: tf.cases, Timeout: tf.timeout, Config: loaded.Config, Logger: logger, AllowExec: tf.allowExec, Launcher: "/proc/self/exe"}
	if tf.allowExec {
		restore, err := isolateHome()
		if err != nil {
			return err
		}
		defer restore()
	}
	if text != nil {
		opts.Report, opts.Done = text.Result, text.Plugin
	}
	reports, err := conformance.Run(cmd.Context(), paths, opts)
	if err != nil {
		// Interrupted: what ran is reported below; the run did not pass.
		if cmd.Context().Err() == nil {
			return usageErrorf("%v", err)
		}
		defer fmt.Fprintf(os.Stderr, "toolhost: test interrupted after %d plugin(s)\n", len(reports))
	}
	switch tf.format {
	case "text":
		text.Total(reports)
	case "json":
		err = conformance.WriteJSON(out, reports)
	case "junit":
		err = conformance.WriteJUnit(out, reports)
	}
	if err == nil && file != nil {
		err = file.Close() // a full disk may only show here
	}
	if err != nil {
		return fmt.Errorf("write the report to %s: %w", cmp.Or(tf.output, "stdout"), err)
	}
	if text != nil && tf.format != "text" {
		text.Total(reports)
	}
	if conformance.Count(reports...).Failed > 0 || cmd.Context().Err() != nil {
		return &exitError{code: exitToolError, err: errSilent}
	}
	return nil
}

// isolateHome points HOME and the XDG base directories at a fresh
// temporary directory for the rest of the run, and returns what undoes
// it. The hosts under test copy this process's environment into the
// commands they run, so a case's "rm -rf ~" or a plugin's "cat
// ~/.ssh/id_rsa" meets an empty directory, not the user's. The
// configuration and the cache directory have been read already.
func isolateHome() (func(), error) {
	home, err := os.MkdirTemp("", "")
	if err != nil {
		return nil, fmt.Errorf("test: a temporary home for commands: %w", err)
	}
	vars := map[string]string{
		"HOME":            home,
		"XDG_CONFIG_HOME": filepath.Join(home, ".config"),
		"XDG_CACHE_HOME":  filepath.Join(home, ".cache"),
		"XDG_DATA_HOME":   filepath.Join(home, ".local", "share"),
		"XDG_STATE_HOME":  filepath.Join(home, ".local", "state"),
	}
	old := map[string]*string{}
	for k, v := range vars {
		if prev, ok := os.LookupEnv(k); ok {
			old[k] = &prev
		} else {
			old[k] = nil
		}
		os.Setenv(k, v)
	}
	return func() {
		for k, prev := range old {
			if prev == nil {
				os.Unsetenv(k)
			} else {
				os.Setenv(k, *prev)
			}
		}
		os.RemoveAll(home)
	}, nil
}
