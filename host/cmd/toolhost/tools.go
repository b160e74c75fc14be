package main

import (
	"encoding/json"
	"os"
	"strings"

	"github.com/spf13/cobra"

	"github.com/toolhost/toolhost/host"
)

func newToolsCommand(g *globals) *cobra.Command {
	var format string
	var all bool
	cmd := &cobra.Command{
		Use:   "tools",
		Short: "Print the tool definitions a model is offered (tools.mode, minus denied tools), sorted by name",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			ctx := cmd.Context()
			h, err := openHost(ctx, g, &runFlags{})
			if err != nil {
				return err
			}
			defer h.Close(ctx)
			// What is advertised depends on tools.mode (FR-MODE-01/02).
			offered := h.Tools()
			if all {
				offered = h.Installed()
			}
			defs, err := host.Definitions(offered, format)
			if err != nil {
				return usageErrorf("%v", err)
			}
			return printJSON(defs)
		},
	}
	cmd.Flags().StringVar(&format, "format", "json", "definition format: "+strings.Join(host.Formats(), ", "))
	cmd.Flags().BoolVar(&all, "all", false, "every installed tool, including those the policy denies or tools.mode hides")
	return cmd
}

func printJSON(v any) error {
	enc := json.NewEncoder(os.Stdout)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}
