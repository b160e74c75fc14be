package main

import (
	"github.com/spf13/cobra"

	"github.com/toolhost/toolhost/host/server"
)

type serveFlags struct {
	runFlags
	stdio        bool
	http         string
	conversation string
}

func newServeCommand(g *globals) *cobra.Command {
	f := &serveFlags{}
	cmd := &cobra.Command{
		Use:   "serve --stdio",
		Short: "Serve the tools to an agent over MCP",
		Long: `Serve the tools to an agent over the Model Context Protocol.

--stdio speaks MCP on stdin and stdout (logs go to stderr): an agent starts
"toolhost serve --stdio --root DIR" as its MCP server. tools/list offers the tools the
policy allows; each tools/call runs as a one-call batch under the same policy as
"toolhost call". A call that needs approval is asked about by MCP elicitation; a client
that cannot be asked gets the call denied, with how to allow the tool in configuration.
Each session is one conversation for stale-file protection; --conversation pins one across
reconnects.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return runServe(cmd, g, f) },
	}
	fl := cmd.Flags()
	fl.BoolVar(&f.stdio, "stdio", false, "speak MCP on stdin and stdout")
	fl.StringVar(&f.http, "http", "", "serve MCP and the batch API over HTTP at `ADDR` (not built yet)")
	fl.StringVar(&f.conversation, "conversation", "", "conversation id every session uses, so reads count across reconnects (default: one per session)")
	f.runFlags.register(fl)
	fl.MarkHidden("stream")
	return cmd
}

func runServe(cmd *cobra.Command, g *globals, f *serveFlags) error {
	switch {
	case cmd.Flags().Changed("http"):
		return usageErrorf("serve --http is not built yet; use serve --stdio")
	case !f.stdio:
		return usageErrorf("serve needs a transport: pass --stdio (MCP on stdin and stdout)")
	}
	ctx := cmd.Context()
	h, err := openHost(ctx, g, &f.runFlags)
	if err != nil {
		return err
	}
	defer h.Close(ctx)
	s, err := server.New(h, server.Options{Conversation: f.conversation, Allow: f.allow, Logger: g.logger()})
	if err != nil {
		return err
	}
	return s.ServeStdio(ctx)
}
