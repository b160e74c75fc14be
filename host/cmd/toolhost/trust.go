package main

import (
	"fmt"
	"os"

	"github.com/spf13/cobra"

	"github.com/toolhost/toolhost/host/internal/config"
)

// newTrustCommand manages the directories whose project configuration file
// may narrow the operator's policy. The list lives in
// the user configuration directory, which no tool can read or write.
func newTrustCommand(*globals) *cobra.Command {
	var list, remove bool
	cmd := &cobra.Command{
		Use:   "trust [DIR]",
		Short: "Let DIR's toolhost.toml narrow the policy (--list shows trusted directories, --remove forgets one)",
		Long: `A toolhost.toml, .yaml or .yml in the working directory is ignored unless
its directory is trusted. A trusted directory's file may only make the
operator's configuration ($XDG_CONFIG_HOME/toolhost/toolhost.toml, --config or
$TOOLHOST_CONFIG) stricter; anything that would widen it is ignored with a
warning. Trust a directory only if you have read its configuration file.`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(_ *cobra.Command, args []string) error {
			dir := userDir()
			if dir == "" {
				return usageErrorf("no user configuration directory to keep the trust list in: set $XDG_CONFIG_HOME or $HOME")
			}
			switch {
			case list && (remove || len(args) > 0):
				return usageErrorf("--list takes no directory and no --remove")
			case list:
				return listTrusted(dir)
			case len(args) == 0:
				return usageErrorf("name the directory to trust (or --remove), or pass --list")
			case remove:
				canon, was, err := config.Untrust(dir, args[0])
				if err != nil {
					return usageErrorf("trust --remove %s: %v", args[0], err)
				}
				if !was {
					return usageErrorf("%s is not trusted (toolhost trust --list shows the trusted directories)", canon)
				}
				fmt.Fprintf(os.Stderr, "no longer trusted: %s\n", canon)
				return nil
			}
			canon, err := config.Trust(dir, args[0])
			if err != nil {
				return usageErrorf("trust %s: %v", args[0], err)
			}
			fmt.Fprintf(os.Stderr, "trusted: %s (its toolhost.toml may only narrow the policy)\n", canon)
			return nil
		},
	}
	cmd.Flags().BoolVar(&list, "list", false, "print the trusted directories, one a line")
	cmd.Flags().BoolVar(&remove, "remove", false, "forget DIR")
	return cmd
}

func listTrusted(userDir string) error {
	dirs, err := config.Trusted(userDir)
	if err != nil {
		return usageErrorf("%v", err)
	}
	for _, d := range dirs {
		fmt.Println(d)
	}
	return nil
}
