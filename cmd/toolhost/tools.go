package main

import (
	"encoding/json"
	"os"
	"strings"

	"github.com/spf13/cobra"

	"github.com/toolhost/toolhost/host/registry"
)

func newToolsCommand(g *globals) *cobra.Command {
	var format string
	cmd := &cobra.Command{
		Use:   "tools",
		Short: "Print the tool definitions, sorted by name",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			ctx := cmd.Context()
			rt, reg, err := loadRegistry(ctx, g, g.logger())
			if err != nil {
				return err
			}
			defer rt.Close(ctx)
			defs, err := reg.Definitions(format)
			if err != nil {
				return usageErrorf("%v", err)
			}
			return printJSON(defs)
		},
	}
	cmd.Flags().StringVar(&format, "format", "json", "definition format: "+strings.Join(registry.Formats(), ", "))
	return cmd
}

func printJSON(v any) error {
	enc := json.NewEncoder(os.Stdout)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}
