package main

import (
	"fmt"
	"os"

	"github.com/spf13/cobra"

	"github.com/toolhost/toolhost/host"
)

// newSandboxCommand is toolhost sandbox: what confines run_command's
// commands on this machine.
func newSandboxCommand(g *globals) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "sandbox",
		Short: "Inspect the kernel sandbox run_command's commands run in",
	}
	cmd.AddCommand(&cobra.Command{
		Use:   "doctor",
		Short: "Show what this kernel allows the command sandbox (Landlock, namespaces, AppArmor, seccomp, cgroups), the fix for each missing piece, and whether run_command can confine commands as configured; exit 1 when it cannot",
		Args:  cobra.NoArgs,
		RunE: func(c *cobra.Command, _ []string) error {
			loaded, err := g.settings()
			if err != nil {
				return err
			}
			rc := loaded.Config.Tools.RunCommand
			fmt.Printf("configuration: tools.run_command.sandbox = %q (%s), tools.run_command.network = %q (%s)\n",
				rc.Sandbox, loaded.Sources["tools.run_command.sandbox"], rc.Network, loaded.Sources["tools.run_command.network"])
			if code := host.SandboxDoctor(c.Context(), os.Stdout, loaded.Config); code != exitOK {
				return &exitError{code: code, err: errSilent}
			}
			return nil
		},
	})
	return cmd
}
