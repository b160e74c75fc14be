package main

import (
	"fmt"
	"os"
	"time"

	"github.com/spf13/cobra"

	"github.com/toolhost/toolhost/host"
)

func newPluginCommand(g *globals) *cobra.Command {
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
	}, newWarmCommand(g))
	return cmd
}

func newWarmCommand(g *globals) *cobra.Command {
	return &cobra.Command{
		Use:   "warm [DIR]",
		Short: "Compile every plugin in DIR (default: the plugin directory) into the compilation cache, so a server's first calls do not wait 1-3 s for it",
		Long: `Compile every plugin in DIR (default: --plugins, $TOOLHOST_PLUGINS, else plugins/
beside the binary) into the compilation cache (--cache-dir, $TOOLHOST_CACHE_DIR, else
the user cache directory), and start each once to check it. "toolhost serve" warms up
its plugins itself at start; with a warm cache that takes tens of milliseconds per
plugin instead of seconds. "make build" runs it after building the plugins.`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if len(args) == 1 {
				g.plugins = args[0]
			}
			cache := g.cache()
			if cache == "" {
				return usageErrorf("plugin warm: no cache directory to fill: the user cache directory is unknown; pass --cache-dir or set $TOOLHOST_CACHE_DIR")
			}
			ctx := cmd.Context()
			h, err := openHost(ctx, g, &runFlags{})
			if err != nil {
				return err
			}
			defer h.Close(ctx)
			var tools []string
			for _, m := range h.Installed() {
				tools = append(tools, m.Name)
			}
			start := time.Now()
			n, err := h.WarmUp(ctx, tools)
			if err != nil {
				return &exitError{code: exitToolError, err: fmt.Errorf("plugin warm: %d plugins compiled into %s; %w", n, cache, err)}
			}
			fmt.Fprintf(cmd.ErrOrStderr(), "toolhost plugin warm: %d plugins compiled into %s in %.1fs\n", n, cache, time.Since(start).Seconds())
			return nil
		},
	}
}
