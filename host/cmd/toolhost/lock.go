package main

import (
	"fmt"
	"os"
	"path/filepath"

	"github.com/spf13/cobra"

	"github.com/toolhost/toolhost/host"
)

// newLockCommand pins the plugin directory's modules.
func newLockCommand(g *globals) *cobra.Command {
	var check bool
	cmd := &cobra.Command{
		Use:   "lock [--plugins DIR] [--check]",
		Short: "Pin the plugins: write " + host.LockFile + " with each module's SHA-256; serve, call and batch then refuse any other",
		Long: "lock writes " + host.LockFile + " in the plugin directory with the SHA-256 of every plugin module in it\n" +
			"(each *.wasm, and each *.wasm in its immediate subdirectories). While the file exists, serve, call and\n" +
			"batch refuse a module it does not list or whose bytes changed. Review the plugins before you lock them.\n" +
			"--check compares without writing and exits 1 naming each difference.",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			dir, err := g.pluginDir()
			if err != nil {
				return err
			}
			if fi, err := os.Stat(dir); err != nil || !fi.IsDir() {
				return usageErrorf("plugin directory %s: not a directory (%v); pass --plugins DIR", dir, err)
			}
			if check {
				return checkLock(cmd, dir)
			}
			locked, err := host.Lock(dir)
			if err != nil {
				return &exitError{code: exitToolError, err: err}
			}
			out := cmd.OutOrStdout()
			for _, p := range locked {
				fmt.Fprintf(out, "%s  %s\n", p.SHA256[:12], p.Path)
			}
			fmt.Fprintf(out, "wrote %s (%d plugins)\n", filepath.Join(dir, host.LockFile), len(locked))
			return nil
		},
	}
	cmd.Flags().BoolVar(&check, "check", false, "compare the plugins with "+host.LockFile+" without writing; exit 1 naming each difference")
	return cmd
}

func checkLock(cmd *cobra.Command, dir string) error {
	problems, err := host.CheckLock(dir)
	if err != nil {
		return &exitError{code: exitToolError, err: err}
	}
	file := filepath.Join(dir, host.LockFile)
	if len(problems) == 0 {
		fmt.Fprintf(cmd.OutOrStdout(), "%s matches the plugins in %s\n", file, dir)
		return nil
	}
	for _, p := range problems {
		fmt.Fprintln(cmd.ErrOrStderr(), "toolhost:", p)
	}
	return &exitError{code: exitToolError, err: fmt.Errorf("%d plugin(s) differ from %s; review them, then run toolhost lock", len(problems), file)}
}
