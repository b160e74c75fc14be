// Package server offers a Host's tools over the Model Context Protocol:
// tools/list gives the tools the policy offers, tools/call
// runs each call as a one-call batch through the Host, and a call that
// needs confirmation is asked about by MCP elicitation.
//
// It knows the Host, the engine's types and the MCP SDK, never the plugin
// runtime or the sandbox: every call goes through Host.Process, so the
// server enforces exactly the policy the command line does. It writes
// nothing but protocol to its transport; logs go to the Logger.
package server

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"os"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolhost/toolhost/abi"
	"github.com/toolhost/toolhost/host"
	"github.com/toolhost/toolhost/host/internal/engine"
	"github.com/toolhost/toolhost/host/internal/inside"
	"github.com/toolhost/toolhost/host/internal/journal"
)

// Options configure a Server.
type Options struct {
	// Conversation pins every session to this conversation, so reads made
	// before a reconnect still count for the stale-file rule; "" gives
	// each session a conversation of its own.
	Conversation string
	// Allow approves these tools' calls without asking (the operator's
	// --allow), except calls only a person may approve.
	Allow []string
	// Narrowing restricts the configured policy for every call and for
	// what tools/list offers; it can never widen it.
	Narrowing engine.Narrowing
	// Profiles are more MCP endpoints, each offering the tools its
	// narrowing allows: over HTTP, profile NAME is
	// served at /mcp/NAME. The batch API and /mcp keep Narrowing.
	Profiles map[string]engine.Narrowing
	// ProgressInterval is the longest a call whose request carries a
	// progress token goes without a progress notification; 0 means DefaultProgressInterval.
	ProgressInterval time.Duration
	// HoldTimeout is how long a call that needs approval, from an MCP
	// client that cannot be asked, is held for a decision through the
	// batch API before it is denied; 0 means
	// DefaultHoldTimeout, a negative value denies such calls at once. A
	// call is held only while the server serves HTTP, where the API is.
	HoldTimeout time.Duration
	// Approvals says where a call that needs a person's decision is
	// asked about: "" or ApprovalsElicitation asks the MCP client,
	// ApprovalsConsole never does, ApprovalsBoth does both at once.
	Approvals Approvals
	// ConsoleProfiles are the profiles whose calls are decided as under
	// ApprovalsConsole, whatever Approvals says.
	ConsoleProfiles map[string]bool
	// AskTimeout is how long an elicitation waits for the client's
	// answer before the call is denied; 0 means DefaultAskTimeout. A
	// client that says it can be asked but never answers must not hold
	// its calls forever.
	AskTimeout time.Duration
	// Version is reported to clients as the server's version; ""
	// means host.Version(), the version and commit of this build.
	Version string
	// Logger receives the server's logs; nil discards them.
	Logger *slog.Logger
}

// Server serves one Host's tools over MCP. It is safe for concurrent use.
type Server struct {
	h    *host.Host
	opts Options
	log  *slog.Logger
	mcp  *mcp.Server // offers the tools opts.Narrowing allows
	// profiles are the profiles' MCP servers, by name.
	profiles map[string]*mcp.Server

	structured map[string]bool // tools whose JSON results also go as structuredContent
	stdioTools map[string]bool // the tools the main endpoint (stdio, /mcp) offers

	// stopping ends when the server shuts down; stopCalls ends it, which
	// cancels every running call.
	stopping  context.Context
	stopCalls context.CancelFunc

	mu            sync.Mutex
	conversations map[*mcp.ServerSession]string

	// batches are the batch API's batches and the held MCP calls; api is
	// the API's base URL (http://HOST:PORT) while the server serves
	// HTTP, "" otherwise.
	batches *registry
	api     atomic.Pointer[string]
	// console holds the web console's login codes and sessions.
	console *consoleAuth

	// warm is the progress of WarmUp; nil until it is asked for.
	warm atomic.Pointer[warmup]
	// listed is closed once a client's first tools/list is answered: the
	// warm-up starts then (or after warmupDelay), so it never competes
	// with a starting agent's handshake for the CPU.
	listed     chan struct{}
	listedOnce sync.Once
}

// Approvals is where calls needing a decision are asked about
// (server.approvals).
type Approvals string

const (
	// ApprovalsElicitation asks the MCP client by elicitation, and holds
	// the call for the console, toolhost approve and /v1 when the client
	// cannot be asked.
	ApprovalsElicitation Approvals = "elicitation"
	// ApprovalsConsole never asks the MCP client: every call needing a
	// decision is held for the console, toolhost approve or /v1. A client
	// that answers questions by itself (a hook, a permissive sandbox
	// mode) then cannot approve anything.
	ApprovalsConsole Approvals = "console"
	// ApprovalsBoth asks the client and holds the call at once; the first
	// answer wins.
	ApprovalsBoth Approvals = "both"
)

// ParseApprovals is the Approvals a setting names; "" is elicitation.
func ParseApprovals(s string) (Approvals, error) {
	switch a := Approvals(s); a {
	case "":
		return ApprovalsElicitation, nil
	case ApprovalsElicitation, ApprovalsConsole, ApprovalsBoth:
		return a, nil
	}
	return "", fmt.Errorf("approvals %q is not elicitation, console or both", s)
}

// DefaultHoldTimeout is how long a call held for a decision waits for
// one in the console, toolhost approve or the batch API: time for a
// person to notice, read the diff and decide. A client whose requests
// time out sooner is kept waiting by progress notifications.
const DefaultHoldTimeout = 10 * time.Minute

// DefaultAskTimeout is how long an elicitation waits for its answer:
// far longer than a person takes to read a diff and decide, so only a
// client that never answers reaches it.
const DefaultAskTimeout = 10 * time.Minute

// supportedProtocols caps what the server negotiates at 2025-11-25. From
// 2026-07-28 on, a server asks the client for input by returning
// InputRequests and the client answers in its next request, carrying
// RequestState back; the SDK trusts that state as it comes, so a client
// could send an approval nobody was asked for and have a write run with
// no prompt. Until the server signs and verifies RequestState, approvals
// happen only by in-request elicitation, which the older revisions have.
var supportedProtocols = []string{"2025-11-25", "2025-06-18", "2025-03-26", "2024-11-05"}

// New builds a Server offering the tools h offers under opts.Narrowing.
func New(h *host.Host, opts Options) (*Server, error) {
	log := opts.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	version := opts.Version
	if version == "" {
		version = host.Version()
	}
	opts.Version = version
	if opts.HoldTimeout == 0 {
		opts.HoldTimeout = DefaultHoldTimeout
	}
	if opts.AskTimeout <= 0 {
		opts.AskTimeout = DefaultAskTimeout
	}
	if opts.Approvals == "" {
		opts.Approvals = ApprovalsElicitation
	}
	if _, err := ParseApprovals(string(opts.Approvals)); err != nil {
		return nil, err
	}
	s := &Server{h: h, opts: opts, log: log, structured: map[string]bool{}, conversations: map[*mcp.ServerSession]string{}, batches: newRegistry(),
		listed: make(chan struct{}), console: newConsoleAuth()}
	s.stopping, s.stopCalls = context.WithCancel(context.Background())
	var err error
	if s.mcp, err = s.newMCP(version, opts.Narrowing, opts.Approvals); err != nil {
		return nil, err
	}
	s.stdioTools = map[string]bool{}
	for _, m := range h.Inside(inside.Key{}).Engine.Advertised(opts.Narrowing) {
		s.stdioTools[m.Name] = true
	}
	s.profiles = make(map[string]*mcp.Server, len(opts.Profiles))
	for name, n := range opts.Profiles {
		mode := opts.Approvals
		if opts.ConsoleProfiles[name] {
			mode = ApprovalsConsole
		}
		if s.profiles[name], err = s.newMCP(version, n, mode); err != nil {
			return nil, fmt.Errorf("profile %s: %w", name, err)
		}
	}
	return s, nil
}

// newMCP is an MCP server offering the tools n allows, each of whose
// calls runs under n, its approvals taken as mode says.
func (s *Server) newMCP(version string, n engine.Narrowing, mode Approvals) (*mcp.Server, error) {
	m := mcp.NewServer(&mcp.Implementation{Name: "toolhost", Version: version}, &mcp.ServerOptions{
		Logger:                    s.log,
		Capabilities:              &mcp.ServerCapabilities{Tools: &mcp.ToolCapabilities{}},
		SupportedProtocolVersions: supportedProtocols,
	})
	m.AddReceivingMiddleware(func(next mcp.MethodHandler) mcp.MethodHandler {
		return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
			r, err := next(ctx, method, req)
			if method == "tools/list" {
				s.listedOnce.Do(func() { close(s.listed) })
			}
			return r, err
		}
	})
	handler := func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return s.callTool(ctx, req, n, mode)
	}
	for _, man := range s.h.Inside(inside.Key{}).Engine.Advertised(n) {
		t, err := toolFor(man)
		if err != nil {
			return nil, err
		}
		m.AddTool(t, handler)
		s.structured[man.Name] = composesOutput(man)
	}
	return m, nil
}

// Profiles names the profiles served at /mcp/NAME, sorted.
func (s *Server) Profiles() []string { return slices.Sorted(maps.Keys(s.profiles)) }

// sessions are the open sessions of every endpoint.
func (s *Server) sessions() []*mcp.ServerSession {
	var out []*mcp.ServerSession
	for _, m := range append([]*mcp.Server{s.mcp}, slices.Collect(maps.Values(s.profiles))...) {
		out = append(out, slices.Collect(m.Sessions())...)
	}
	return out
}

// ServeStdio serves one session on the process's stdin and stdout until
// the client closes it or ctx ends; tools/call is answered on the fast
// path (stdio.go).
func (s *Server) ServeStdio(ctx context.Context) error {
	return s.serveStdio(ctx, os.Stdin, os.Stdout)
}

// Serve serves one session on t until the client closes it or ctx ends.
func (s *Server) Serve(ctx context.Context, t mcp.Transport) error {
	return s.serve(ctx, t, nil)
}

// serve is Serve, telling connected the session once there is one.
func (s *Server) serve(ctx context.Context, t mcp.Transport, connected func(*mcp.ServerSession)) error {
	ss, err := s.mcp.Connect(ctx, t, nil)
	if err != nil {
		return fmt.Errorf("mcp session: %w", err)
	}
	if connected != nil {
		connected(ss)
	}
	defer s.forget(ss)
	done := make(chan error, 1)
	go func() { done <- ss.Wait() }()
	select {
	case err = <-done:
	case <-ctx.Done():
		ss.Close()
		err = <-done
	}
	if err != nil && !errors.Is(err, context.Canceled) && !isClosed(err) {
		return fmt.Errorf("mcp session: %w", err)
	}
	return nil
}

// isClosed reports an error that only says the client hung up.
func isClosed(err error) bool {
	return errors.Is(err, mcp.ErrConnectionClosed) || errors.Is(err, os.ErrClosed)
}

// conversation is a call's conversation: the one the operator pinned,
// else the one its HTTP request names in ConversationHeader (checked by
// the HTTP server), else its session's own, made when it first calls a
// tool.
func (s *Server) conversation(req *mcp.CallToolRequest) string {
	if s.opts.Conversation != "" {
		return s.opts.Conversation
	}
	if req.Extra != nil {
		if c := req.Extra.Header.Get(ConversationHeader); c != "" {
			return c
		}
	}
	ss := req.Session
	s.mu.Lock()
	defer s.mu.Unlock()
	c, ok := s.conversations[ss]
	if !ok {
		c = newConversationID()
		s.conversations[ss] = c
		s.log.Info("new MCP session", "conversation", c)
	}
	return c
}

// forget ends a session's own conversation: its background jobs are
// killed after tools.jobs.session_end_grace_seconds. A conversation the
// operator pinned (Options.Conversation) or an HTTP request named
// (ConversationHeader) may go on in another session, so its jobs are left
// to their own end: max_seconds, job_kill or the server's stop.
func (s *Server) forget(ss *mcp.ServerSession) {
	s.mu.Lock()
	conv, own := s.conversations[ss]
	delete(s.conversations, ss)
	s.mu.Unlock()
	if own {
		m := s.h.Inside(inside.Key{}).Jobs
		m.EndConversation(conv, m.SessionEndGrace())
	}
}

// callTool runs one tools/call as a one-call batch. The request's ctx
// ends when the client cancels it, and the call is cancelled too when
// the server shuts down; either stops it (a command's process group is
// killed) and its result is still the answer. A request with a progress
// token gets the call's output and keepalives as progress notifications
// until just before its result.
func (s *Server) callTool(ctx context.Context, req *mcp.CallToolRequest, n engine.Narrowing, mode Approvals) (*mcp.CallToolResult, error) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	defer context.AfterFunc(s.stopping, cancel)()
	args := req.Params.Arguments
	if len(args) == 0 || string(args) == "null" {
		args = []byte("{}")
	}
	conv := s.conversation(req)
	// tools/call gives a call no id of its own, so the call is named by
	// its journal id, which no call of another session or server run
	// shares; its batch is named first for that.
	b := engine.Batch{ID: engine.NewBatchID(), Conversation: conv}
	call := engine.Call{ID: journal.CallJournalID(b.ID, 1), Name: req.Params.Name, Arguments: args}
	b.Calls = []engine.Call{call}
	a := &approver{session: req.Session, allow: s.opts.Allow, log: s.log, timeout: s.opts.AskTimeout,
		view: func(ctx context.Context, c engine.Confirmation) engine.Approval {
			return s.h.Inside(inside.Key{}).Engine.Approval(ctx, c, engine.ApprovalOptions{Conversation: conv, Narrowing: n,
				FullAt: "the tools/call request the MCP client sent"})
		}}
	prog := newProgress(ctx, req.Session, req.Params.GetProgressToken(), call.ID, s.opts.ProgressInterval)
	events := prog.sink()
	// A call a client that cannot be asked makes may be held for a
	// decision through the batch API, under its batch id, and its events
	// go to the held batch's log too.
	var held atomic.Pointer[batch]
	a.mode = mode
	a.holding = func() bool { return s.apiBase() != "" }
	if s.opts.HoldTimeout > 0 && (a.mode != ApprovalsElicitation || cannotElicit(req.Session) != "") {
		a.hold = s.holder(b.ID, conv, n, a.mode, call, &held)
		events = teeSink{next: events, held: &held}
	}
	p, results := s.h.Process(ctx, b, host.BatchOptions{Approver: a, Events: events, Narrowing: n})
	prog.close()
	r := results[0]
	if s.stopping.Err() != nil && !r.OK && r.Error != nil && r.Error.Kind == abi.KindCancelled {
		r.Error.Message = "toolhost serve is shutting down (it got SIGINT or SIGTERM): the call was stopped, any command it started was killed; retry once the server is back"
	} else if ctx.Err() != nil && stoppedByClient(&r, context.Cause(ctx)) {
		s.log.Info("tools/call stopped by its client", "call", r.ID, "tool", r.Name, "result", errorText(r.Error))
	}
	// Only now is the result final: a held batch publishes it to the
	// batch API, whose readers must not see it reworded under them.
	if hb := held.Load(); hb != nil {
		results[0] = r
		hb.finish(results)
	}
	s.log.Debug("tools/call", "call", r.ID, "tool", r.Name, "ok", r.OK, "disposition", p.Calls[0].Disposition)
	return toResult(r, s.structured[r.Name]), nil
}
