package main

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"runtime/debug"
	"time"

	"github.com/spf13/cobra"

	"github.com/toolhost/toolhost/host"
	"github.com/toolhost/toolhost/host/internal/config"
	"github.com/toolhost/toolhost/host/internal/engine"
	"github.com/toolhost/toolhost/host/internal/server"
)

type serveFlags struct {
	runFlags
	stdio          bool
	http           string
	listenAny      bool
	maxSessions    int
	sessionTimeout time.Duration
	conversation   string
	profile        string
	progressEvery  time.Duration
	hold           time.Duration
	warm           bool
	approvals      string
	consoleLink    bool
}

// tokenEnv fixes the HTTP server's bearer token instead of a new one
// at each start.
const tokenEnv = "TOOLHOST_TOKEN"

func newServeCommand(g *globals) *cobra.Command {
	f := &serveFlags{}
	cmd := &cobra.Command{
		Use:   "serve (--stdio | --http ADDR | --stdio --http ADDR)",
		Short: "Serve the tools to an agent over MCP",
		Long: `Serve the tools to an agent over the Model Context Protocol.

--stdio speaks MCP on stdin and stdout (logs go to stderr): an agent starts
"toolhost serve --stdio --root DIR" as its MCP server.

--http ADDR serves MCP streamable HTTP at http://ADDR/mcp (127.0.0.1:8765 is the usual
address; port 0 picks a free one). It listens on loopback only unless --listen-any is
given. Every request but GET /v1/health needs "Authorization: Bearer TOKEN": the token is
made at start and printed once to stderr with the URL and a line to connect an agent, or
fixed by $TOOLHOST_TOKEN or server.token in the configuration. Requests naming another
Host or a foreign Origin are refused, so web pages cannot reach the server. An
X-Toolhost-Conversation header pins a request's calls to a conversation across reconnects.
SIGINT or SIGTERM stops accepting, cancels running calls (their processes are killed),
answers them, and exits 0.

--http also serves the batch API under /v1 (described at GET /v1/openapi.json) for agents
that run their own model loop: POST /v1/batches plans a batch, POST
/v1/batches/ID/decision approves or denies it, GET /v1/batches/ID/events streams its
events. --stdio and --http together serve MCP on stdin and stdout and the HTTP server
beside it, so a stdio agent's calls can be approved through /v1; the server ends when
the stdio client does.

tools/list offers the tools the policy allows; each tools/call runs as a one-call batch
under the same policy as "toolhost call". A call that needs approval is asked about by MCP
elicitation, with the diff of a dry run for write_file and apply_patch. A call from a
client that cannot be asked is held, while the HTTP server runs, for a decision in the
web console at http://ADDR/console (serve prints a login link), with "toolhost approve",
or through POST /v1/batches/ID/decision, for up to --hold, then denied with how to approve
it and how to allow the tool in configuration; without --http it is denied at once.
--approvals console holds every such call and never asks the client (for agents that
answer questions by themselves); --approvals both asks and holds at once. A request with a progress token gets run_command's output as progress
notifications, and a notification at least every --progress-interval while the call runs
or waits for approval. Each session is one conversation for stale-file protection;
--conversation pins one for every session.

--allow TOOL approves that tool's calls without asking on every transport served: stdio,
/mcp and batches posted to /v1 alike; a call only a person may approve (a write laying out
a git repository) is still asked about, or waits for a decision through /v1.

At start the server compiles the plugins of the tools it serves, and starts one instance
of each, in the background: tools/list answers at once, a call for a plugin still compiling
waits for that compile, and GET /v1/health (or the log, at --log-level info) says when the
warm-up is done; from then on no first call waits 1-3 s for a compile. The compilation
cache (--cache-dir) makes the next start's warm-up take milliseconds per plugin.
--warm=false leaves each plugin to its first call.

Profiles ([profiles.NAME] in the configuration: the tools one agent role may use, and
stricter approval) are served over --http at /mcp/NAME; --profile NAME instead narrows
everything served (stdio, /mcp and /v1) to that profile.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return runServe(cmd, g, f) },
	}
	fl := cmd.Flags()
	fl.BoolVar(&f.stdio, "stdio", false, "speak MCP on stdin and stdout")
	fl.StringVar(&f.http, "http", "", "serve MCP over streamable HTTP at `ADDR`/mcp, for example 127.0.0.1:8765")
	fl.BoolVar(&f.listenAny, "listen-any", false, "let --http listen on an address that is not loopback (anyone reaching it with the token runs tools)")
	fl.IntVar(&f.maxSessions, "max-sessions", server.DefaultMaxSessions, "most MCP sessions open at once over --http; more are refused with 503")
	fl.DurationVar(&f.sessionTimeout, "session-timeout", server.DefaultSessionTimeout, "close an MCP session over --http idle this long")
	fl.StringVar(&f.conversation, "conversation", "", "conversation id every session uses, so reads count across reconnects (default: one per session)")
	fl.DurationVar(&f.progressEvery, "progress-interval", server.DefaultProgressInterval, "longest a call whose request has a progress token goes without a progress notification (keeps clients' request timers alive)")
	fl.DurationVar(&f.hold, "hold", 0, "how long a call held for a decision (its client cannot be asked, or --approvals console) waits for one in the web console, toolhost approve or the batch API (--http) before it is denied; 0 denies at once (default: server.approval_hold_seconds, 10m)")
	fl.StringVar(&f.approvals, "approvals", "", "who decides a call that needs approval: elicitation (ask the MCP client; hold the call for the console when it cannot be asked), console (never ask the client: hold every such call for the web console, toolhost approve or /v1), or both (the first answer wins) (default: server.approvals, elicitation)")
	fl.BoolVar(&f.consoleLink, "console-link", false, "print a fresh login link for the web console of the server running at --http ADDR (its token from $TOOLHOST_TOKEN or server.token), and exit")
	fl.BoolVar(&f.warm, "warm", true, "compile the plugins of the tools served, and start one instance of each, in the background from the start (GET /v1/health says when it is done), so no agent's first call waits 1-3 s for a compile; --warm=false compiles each plugin on its first call")
	fl.StringVar(&f.profile, "profile", "", "offer only the tools of the configured profile `NAME` ([profiles.NAME]), on stdio, /mcp and /v1 (without it, --http serves each profile at /mcp/NAME)")
	f.runFlags.register(fl)
	fl.MarkHidden("stream")
	return cmd
}

func runServe(cmd *cobra.Command, g *globals, f *serveFlags) error {
	tuneGC()
	useHTTP := cmd.Flags().Changed("http")
	switch {
	case f.consoleLink && !useHTTP:
		return usageErrorf("--console-link needs --http ADDR, the address of the running server to ask for a link")
	case f.consoleLink:
	case !useHTTP && !f.stdio:
		return usageErrorf("serve needs a transport: pass --stdio (MCP on stdin and stdout) or --http 127.0.0.1:8765 (MCP over HTTP)")
	case f.maxSessions < 1:
		return usageErrorf("--max-sessions %d: want at least 1", f.maxSessions)
	case f.sessionTimeout <= 0:
		return usageErrorf("--session-timeout %v: want a positive duration, for example 30m", f.sessionTimeout)
	case f.progressEvery <= 0:
		return usageErrorf("--progress-interval %v: want a positive duration, for example 10s", f.progressEvery)
	case f.approvals == string(server.ApprovalsConsole) && !useHTTP:
		return usageErrorf("--approvals console holds every call needing approval for the web console, toolhost approve or /v1, which need --http ADDR: give --stdio --http 127.0.0.1:8765, or leave --approvals out to ask the MCP client")
	case f.hold < 0:
		return usageErrorf("--hold %v: want a duration, for example 2m, or 0 to deny at once the calls of clients that cannot be asked", f.hold)
	}
	ctx := cmd.Context()
	// Loaded once: each load logs the files it ignored.
	loaded, err := g.settings()
	if err != nil {
		return err
	}
	if f.consoleLink {
		return printConsoleLink(ctx, cmd.OutOrStdout(), f.http, loaded.Config.Server.Token)
	}
	if !useHTTP {
		s, done, err := newServer(ctx, g, f, loaded, cmd.Flags().Changed("hold"))
		if err != nil {
			return err
		}
		defer done()
		return s.ServeStdio(ctx)
	}
	token, from, err := serveToken(loaded.Config.Server.Token)
	if err != nil {
		return err
	}
	// Listen before loading the host, so a refused address is reported
	// at once, and the address printed is the one really bound.
	ln, err := server.Listen(f.http, f.listenAny)
	if err != nil {
		return usageErrorf("%v", err)
	}
	s, done, err := newServer(ctx, g, f, loaded, cmd.Flags().Changed("hold"))
	if err != nil {
		ln.Close()
		return err
	}
	defer done()
	printEndpoint(cmd.ErrOrStderr(), ln.Addr(), token, from, s.Profiles())
	opts := server.HTTPOptions{Token: token, MaxSessions: f.maxSessions, SessionTimeout: f.sessionTimeout,
		Ready: func() {
			fmt.Fprintf(cmd.ErrOrStderr(), "toolhost serve: web console: %s (works once, for 10 minutes; toolhost serve --console-link --http %s prints another)\n", s.ConsoleLink(), ln.Addr())
		}}
	if !f.stdio {
		return s.ServeHTTPOn(ctx, ln, opts)
	}
	return serveBoth(ctx, s, ln, opts)
}

// serveBoth serves MCP on stdin and stdout and HTTP on ln, so the calls
// of a stdio agent that cannot be asked can be approved through the
// batch API. The stdio client is the one that started the server: when
// it leaves, the HTTP server shuts down too.
func serveBoth(ctx context.Context, s *server.Server, ln net.Listener, opts server.HTTPOptions) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	served := make(chan error, 1)
	go func() { served <- s.ServeHTTPOn(ctx, ln, opts) }()
	stdioErr := s.ServeStdio(ctx)
	cancel()
	return errors.Join(stdioErr, <-served)
}

// newServer opens the host and the MCP server on it, under the loaded
// configuration, and starts warming the plugins up unless --warm=false;
// done stops the warm-up and closes the host.
func newServer(ctx context.Context, g *globals, f *serveFlags, loaded *config.Loaded, holdSet bool) (*server.Server, func(), error) {
	opts, err := serverOptions(loaded.Config, f, holdSet)
	if err != nil {
		return nil, nil, err
	}
	opts.Logger = g.logger()
	h, err := openHostWith(ctx, g, &f.runFlags, loaded)
	if err != nil {
		return nil, nil, err
	}
	s, err := server.New(h, opts)
	if err != nil {
		h.Close(ctx)
		return nil, nil, err
	}
	if !f.warm {
		return s, func() { h.Close(context.WithoutCancel(ctx)) }, nil
	}
	// The warm-up ends with the server: it stops after the plugin it is
	// compiling, which must finish before the host closes its runtime.
	warmCtx, stopWarm := context.WithCancel(ctx)
	warmed := s.WarmUp(warmCtx)
	return s, func() {
		stopWarm()
		<-warmed
		h.Close(context.WithoutCancel(ctx))
	}, nil
}

// serverOptions are the server's options from the flags and the
// configuration: --profile narrows everything served to one profile;
// without it each profile gets an endpoint of its own.
func serverOptions(cfg *config.Config, f *serveFlags, holdSet bool) (server.Options, error) {
	hold := time.Duration(cfg.Server.ApprovalHoldSeconds) * time.Second
	if holdSet {
		hold = f.hold
	}
	if hold == 0 {
		hold = -1 // 0 is "do not hold" here; the option's 0 is the default
	}
	approvals := cfg.Server.Approvals
	if f.approvals != "" {
		approvals = f.approvals
	}
	mode, err := server.ParseApprovals(approvals)
	if err != nil {
		return server.Options{}, usageErrorf("--approvals: %v", err)
	}
	opts := server.Options{Conversation: f.conversation, Allow: f.allow, ProgressInterval: f.progressEvery, HoldTimeout: hold, Approvals: mode}
	if f.profile != "" {
		n, err := host.Profile(cfg, f.profile)
		if err != nil {
			return server.Options{}, usageErrorf("--profile: %v", err)
		}
		opts.Narrowing = n
		if cfg.Profiles[f.profile].Approvals == string(server.ApprovalsConsole) {
			opts.Approvals = server.ApprovalsConsole
		}
		return opts, nil
	}
	opts.ConsoleProfiles = map[string]bool{}
	opts.Profiles = map[string]engine.Narrowing{}
	for _, name := range host.ProfileNames(cfg) {
		n, err := host.Profile(cfg, name)
		if err != nil {
			return server.Options{}, err
		}
		opts.Profiles[name] = n
		opts.ConsoleProfiles[name] = cfg.Profiles[name].Approvals == string(server.ApprovalsConsole)
	}
	return opts, nil
}

// serveToken is the bearer token: $TOOLHOST_TOKEN if set, else the
// configuration's server.token, else 130 random bits; from says where a
// fixed one came from ("" for a new one).
func serveToken(configured string) (token, from string, err error) {
	if t, ok := os.LookupEnv(tokenEnv); ok {
		if len(t) < config.MinTokenLen {
			return "", "", usageErrorf("$%s has %d characters: a bearer token needs at least %d; unset it to have one made at start", tokenEnv, len(t), config.MinTokenLen)
		}
		return t, "$" + tokenEnv, nil
	}
	if configured != "" {
		return configured, "server.token in the configuration", nil
	}
	return rand.Text(), "", nil
}

// printEndpoint tells the operator, once, where the server is and how to
// connect an agent. A fixed token is not echoed: the operator has it,
// and logs need not.
func printEndpoint(w io.Writer, addr net.Addr, token, from string, profiles []string) {
	url := server.URL(addr, "/mcp")
	if !server.IsLoopback(addr) {
		fmt.Fprintf(w, "toolhost serve: WARNING: listening on %s, beyond loopback (--listen-any): anyone who reaches it with the token runs tools on this machine\n", addr)
	}
	fmt.Fprintf(w, "toolhost serve: MCP at %s (health: %s)\n", url, server.URL(addr, "/v1/health"))
	for _, p := range profiles {
		fmt.Fprintf(w, "toolhost serve: profile %s at %s\n", p, server.URL(addr, "/mcp/"+p))
	}
	fmt.Fprintf(w, "toolhost serve: batch API at %s (described at %s)\n", server.URL(addr, "/v1/batches"), server.URL(addr, "/v1/openapi.json"))
	header := "Authorization: Bearer " + token
	switch from {
	case "":
		fmt.Fprintf(w, "toolhost serve: bearer token: %s (made at start; set $%s or server.token to fix one)\n", token, tokenEnv)
	case "$" + tokenEnv:
		fmt.Fprintf(w, "toolhost serve: bearer token: from %s\n", from)
		header = "Authorization: Bearer $" + tokenEnv
	default:
		fmt.Fprintf(w, "toolhost serve: bearer token: from %s\n", from)
		header = "Authorization: Bearer <server.token>"
	}
	fmt.Fprintf(w, "toolhost serve: connect Claude Code: claude mcp add --transport http toolhost %s --header \"%s\"\n", url, header)
}

// tuneGC lets the heap grow to five times what is live before a
// collection, unless the operator set GOGC. A server's live heap is a
// few megabytes and each call leaves about a hundred kilobytes of
// garbage, so the default collects every few calls: measured over stdio
// that is a tenth of the CPU, for a few megabytes more memory. A server
// keeping batches holds up to hundreds of MiB, five times which is
// gigabytes, so the heap is also held to server.MemoryLimit (twice what
// the batches may keep), unless the operator set GOMEMLIMIT: past it
// the runtime collects sooner rather than growing.
func tuneGC() {
	if _, set := os.LookupEnv("GOGC"); !set {
		debug.SetGCPercent(400)
	}
	if _, set := os.LookupEnv("GOMEMLIMIT"); !set {
		debug.SetMemoryLimit(server.MemoryLimit)
	}
}

// printConsoleLink asks the server running at addr for a console login
// link and prints it.
func printConsoleLink(ctx context.Context, w io.Writer, addr, configured string) error {
	token, from, err := serveToken(configured)
	if err != nil {
		return err
	}
	if from == "" {
		return usageErrorf("--console-link needs the running server's token: set $%s, or server.token in the configuration, to the token it printed", tokenEnv)
	}
	url := "http://" + addr + "/v1/console/links"
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, nil)
	if err != nil {
		return usageErrorf("--http %s: %v", addr, err)
	}
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return &exitError{code: exitToolError, err: fmt.Errorf("asking %s for a console link: %w (is toolhost serve --http %s running?)", url, err, addr)}
	}
	defer resp.Body.Close()
	var body struct {
		URL       string    `json:"url"`
		ExpiresAt time.Time `json:"expires_at"`
		Error     struct {
			Message string `json:"message"`
		} `json:"error"`
	}
	if err := json.NewDecoder(io.LimitReader(resp.Body, 1<<20)).Decode(&body); err != nil || resp.StatusCode != http.StatusCreated {
		if body.Error.Message != "" {
			return &exitError{code: exitToolError, err: fmt.Errorf("asking %s for a console link: %s (the token came from %s)", url, body.Error.Message, from)}
		}
		return &exitError{code: exitToolError, err: fmt.Errorf("asking %s for a console link: %s", url, resp.Status)}
	}
	fmt.Fprintf(w, "%s\n(works once, until %s)\n", body.URL, body.ExpiresAt.Local().Format(time.Kitchen))
	return nil
}
