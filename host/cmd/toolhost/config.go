package main

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/spf13/cobra"

	"github.com/toolhost/toolhost/host/internal/config"
)

func newConfigCommand(g *globals) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "config",
		Short: "Show the effective configuration, or write a default file",
	}
	show := &cobra.Command{
		Use:   "show",
		Short: "Print every configuration key with its value and where it came from (default, file, environment)",
		Args:  cobra.NoArgs,
		RunE: func(*cobra.Command, []string) error {
			st, err := g.settings()
			if err != nil {
				return err
			}
			fmt.Print(st.Report())
			fmt.Print(st.Show())
			return nil
		},
	}
	var force bool
	initCmd := &cobra.Command{
		Use:   "init [FILE]",
		Short: "Write a commented toolhost.toml holding every key's default (default: in $XDG_CONFIG_HOME/toolhost)",
		Args:  cobra.MaximumNArgs(1),
		RunE: func(_ *cobra.Command, args []string) error {
			path, err := initPath(args)
			if err != nil {
				return err
			}
			flags := os.O_WRONLY | os.O_CREATE | os.O_EXCL
			if force {
				flags = os.O_WRONLY | os.O_CREATE | os.O_TRUNC
			}
			f, err := os.OpenFile(path, flags, 0o600) // it may come to hold the server's token
			if errors.Is(err, fs.ErrExist) {
				return usageErrorf("%s already exists; pass --force to replace it", path)
			}
			if err != nil {
				return usageErrorf("%v", err)
			}
			// A file --force replaces keeps its mode when opened: make it
			// private before it holds anything.
			if err := f.Chmod(0o600); err != nil {
				f.Close()
				return usageErrorf("%v", err)
			}
			if _, err := f.WriteString(config.InitFile()); err != nil {
				f.Close()
				return err
			}
			if err := f.Close(); err != nil {
				return err
			}
			fmt.Fprintf(os.Stderr, "wrote %s\n", path)
			return nil
		},
	}
	initCmd.Flags().BoolVar(&force, "force", false, "replace an existing file")
	cmd.AddCommand(show, initCmd)
	return cmd
}

// initPath is FILE, else toolhost.toml in the user configuration
// directory, created 0700: the operator's file, which tools cannot reach.
func initPath(args []string) (string, error) {
	if len(args) == 1 {
		return args[0], nil
	}
	dir := userDir()
	if dir == "" {
		return "", usageErrorf("no user configuration directory ($XDG_CONFIG_HOME and $HOME are unset); name the FILE to write")
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return "", usageErrorf("user configuration directory: %v", err)
	}
	return filepath.Join(dir, "toolhost.toml"), nil
}
