package main

import (
	"fmt"
	"os"

	"github.com/spf13/cobra"

	"github.com/toolhost/toolhost/host"
)

func newPluginCommand(_ *globals) *cobra.Command {
	cmd := &cobra.Command{Use: "plugin", Short: "Work with plugin modules"}
	cmd.AddCommand(&cobra.Command{
		Use:   "pack FILE.wasm...",
		Short: "Store each plugin's manifest in its module, so hosts list it without compiling",
		Args:  cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, files []string) error {
			for _, file := range files {
				wasm, err := os.ReadFile(file)
				if err != nil {
					return usageErrorf("%v", err)
				}
				packed, err := host.PackPlugin(cmd.Context(), wasm)
				if err != nil {
					return fmt.Errorf("pack %s: %w", file, err)
				}
				if err := os.WriteFile(file, packed, 0o644); err != nil {
					return err
				}
			}
			return nil
		},
	})
	return cmd
}
