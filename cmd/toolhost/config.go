package main

import (
	"errors"
	"fmt"
	"io/fs"
	"os"

	"github.com/spf13/cobra"

	"github.com/toolhost/toolhost/host/config"
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
			if st.File != "" {
				fmt.Printf("# file: %s\n", st.File)
			} else {
				fmt.Println("# no configuration file: defaults and environment only")
			}
			fmt.Print(st.Show())
			return nil
		},
	}
	var force bool
	initCmd := &cobra.Command{
		Use:   "init [FILE]",
		Short: "Write a commented toolhost.toml holding every key's default",
		Args:  cobra.MaximumNArgs(1),
		RunE: func(_ *cobra.Command, args []string) error {
			path := "toolhost.toml"
			if len(args) == 1 {
				path = args[0]
			}
			flags := os.O_WRONLY | os.O_CREATE | os.O_EXCL
			if force {
				flags = os.O_WRONLY | os.O_CREATE | os.O_TRUNC
			}
			f, err := os.OpenFile(path, flags, 0o644)
			if errors.Is(err, fs.ErrExist) {
				return usageErrorf("%s already exists; pass --force to replace it", path)
			}
			if err != nil {
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
