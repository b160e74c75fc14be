package server

import (
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"net"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Limits of the HTTP server when HTTPOptions leave them zero.
const (
	DefaultMaxSessions    = 64
	DefaultMaxBodyBytes   = 4 << 20
	DefaultSessionTimeout = 30 * time.Minute
	// DefaultMaxConnections bounds the connections open at once that
	// showed the token: each costs a descriptor and buffers, so a flood
	// of idle connections must not run the process out of descriptors
	// its tools need. Far above what the sessions (64), their calls and
	// the event streams (256) take. Connections that did not show it
	// have a quarter of that of their own (connLimiter).
	DefaultMaxConnections = 1024
)

// Timeouts of the HTTP server. A client must send its headers within
// headerTimeout (HTTPOptions.HeaderTimeout) and its whole request within
// readTimeout, so a slow
// client cannot hold a connection; once a request is read the deadline
// is lifted (net/http does so when it starts watching for the client
// hanging up), so long tool calls and event streams are not cut.
const (
	headerTimeout   = 10 * time.Second
	readTimeout     = time.Minute
	idleTimeout     = 2 * time.Minute
	maxHeaderBytes  = 64 << 10
	shutdownTimeout = 10 * time.Second
)

// ConversationHeader pins an HTTP request's tool calls to a conversation,
// so reads made before a reconnect still count for the stale-file rule.
const ConversationHeader = "X-Toolhost-Conversation"

// maxConversationLen bounds a conversation id taken from a header.
const maxConversationLen = 128

// HTTPOptions configure the HTTP server.
type HTTPOptions struct {
	// Token is the bearer token every request must carry, except GET
	// /v1/health. It must not be empty.
	Token string
	// MaxSessions bounds the MCP sessions open at once; 0 means
	// DefaultMaxSessions.
	MaxSessions int
	// MaxBodyBytes caps a request's body; 0 means DefaultMaxBodyBytes.
	MaxBodyBytes int64
	// SessionTimeout closes an MCP session after this long without a
	// request; its id then gets the protocol's 404. 0 means
	// DefaultSessionTimeout.
	SessionTimeout time.Duration
	// HeaderTimeout is how long a client may take to send a request's
	// headers before its connection is closed; 0 means 10 s.
	HeaderTimeout time.Duration
	// MaxConnections bounds the connections open at once that showed
	// the token; past it the server accepts no more until one closes.
	// Connections that have not shown it (new ones, health checks) are
	// bounded apart, by a quarter of it: when those are full, the oldest
	// is closed to admit a new one, so they never keep out a client
	// holding the token. 0 means DefaultMaxConnections.
	MaxConnections int
	// Ready is called once the handler is set up on the listener, the
	// console able to take logins (ConsoleLink); nil calls nothing.
	Ready func()
}

func (o HTTPOptions) withDefaults() HTTPOptions {
	if o.MaxSessions <= 0 {
		o.MaxSessions = DefaultMaxSessions
	}
	if o.MaxBodyBytes <= 0 {
		o.MaxBodyBytes = DefaultMaxBodyBytes
	}
	if o.SessionTimeout <= 0 {
		o.SessionTimeout = DefaultSessionTimeout
	}
	if o.HeaderTimeout <= 0 {
		o.HeaderTimeout = headerTimeout
	}
	if o.MaxConnections <= 0 {
		o.MaxConnections = DefaultMaxConnections
	}
	return o
}

// Listen opens the listener for addr. It refuses an address that is not
// loopback unless listenAny is set: whoever reaches the port and holds
// the token runs tools on this machine. "localhost" listens on
// 127.0.0.1, never on whatever else the name resolves to.
func Listen(addr string, listenAny bool) (net.Listener, error) {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return nil, fmt.Errorf("--http %q: want HOST:PORT, for example 127.0.0.1:8765: %w", addr, err)
	}
	if strings.EqualFold(host, "localhost") {
		host = "127.0.0.1"
	}
	if !isLoopbackIP(host) && !listenAny {
		shown := host
		if shown == "" {
			shown = "every interface"
		}
		return nil, fmt.Errorf("--http %q: %s is not a loopback address; toolhost serves on loopback (127.0.0.1, [::1]) unless --listen-any is given, because anyone who reaches the port with the token runs tools on this machine", addr, shown)
	}
	network := "tcp"
	if ip := net.ParseIP(host); ip != nil && ip.To4() != nil {
		network = "tcp4" // 0.0.0.0 is every IPv4 interface, not IPv6 too
	}
	ln, err := net.Listen(network, net.JoinHostPort(host, port))
	if err != nil {
		return nil, fmt.Errorf("--http %q: %w", addr, err)
	}
	return ln, nil
}

// IsLoopback reports whether a listener's address is loopback only.
func IsLoopback(addr net.Addr) bool {
	host, _, err := net.SplitHostPort(addr.String())
	return err == nil && isLoopbackIP(host)
}

// URL is where a client on this machine reaches a server listening at
// addr: a loopback host even when it listens on every interface.
func URL(addr net.Addr, path string) string {
	host, port, _ := net.SplitHostPort(addr.String())
	if ip := net.ParseIP(host); ip == nil || ip.IsUnspecified() {
		host = "127.0.0.1"
	}
	return "http://" + net.JoinHostPort(host, port) + path
}

// ServeHTTPOn serves MCP streamable HTTP at /mcp and the batch API under
// /v1 on ln until ctx ends, then shuts down: it stops accepting, cancels the
// running calls (a command's process group is killed), answers the
// requests in flight with their results, closes the sessions and
// returns nil. Shutdown is bounded; connections still open after it are
// closed.
func (s *Server) ServeHTTPOn(ctx context.Context, ln net.Listener, o HTTPOptions) error {
	o = o.withDefaults()
	h, err := s.newHTTPHandler(ln.Addr(), o)
	if err != nil {
		ln.Close()
		return err
	}
	srv := &http.Server{
		Handler:           h,
		ReadHeaderTimeout: o.HeaderTimeout,
		ReadTimeout:       readTimeout,
		IdleTimeout:       idleTimeout,
		MaxHeaderBytes:    maxHeaderBytes,
		ConnContext:       func(ctx context.Context, c net.Conn) context.Context { return withConn(ctx, c) },
		ConnState:         connState,
	}
	served := make(chan error, 1)
	go func() { served <- srv.Serve(limitConnections(ln, o.MaxConnections, o.MaxConnections/4)) }()
	if o.Ready != nil {
		o.Ready()
	}
	select {
	case err := <-served:
		return fmt.Errorf("serving HTTP on %s: %w", ln.Addr(), err)
	case <-ctx.Done():
	}
	s.log.Info("shutting down: no new connections; cancelling running calls")
	s.api.Store(nil) // no more calls are held for the API
	bound, cancel := context.WithTimeout(context.Background(), shutdownTimeout)
	defer cancel()
	shut := make(chan error, 1)
	go func() { shut <- srv.Shutdown(bound) }()
	s.stopCalls()
	h.drain(bound)
	// The answers are written; a client reads them on their own
	// connections, and some clients (the Go SDK's without retries) fail
	// a session's calls still unread once its event stream closes. A
	// moment lets them arrive first.
	select {
	case <-time.After(answerGrace):
	case <-bound.Done():
	}
	// Event streams (GET /mcp) never go idle by themselves: closing the
	// sessions ends them, which lets Shutdown finish.
	for _, ss := range s.sessions() {
		ss.Close()
	}
	if err := <-shut; err != nil {
		s.log.Warn("shutdown: closing connections still open", "err", err)
		srv.Close()
	}
	<-served
	return nil
}

// httpHandler is the server's HTTP face: the guard in front of every
// path, then /mcp and the batch API under /v1.
type httpHandler struct {
	http.Handler
	inflight atomic.Int64 // POST /mcp requests not yet answered
}

// drain waits until every POST /mcp in flight is answered, or ctx ends.
// answerGrace is how long shutdown waits, once every call in flight is
// answered, before it closes the sessions' event streams.
const answerGrace = 100 * time.Millisecond

func (h *httpHandler) drain(ctx context.Context) {
	tick := time.NewTicker(5 * time.Millisecond)
	defer tick.Stop()
	for h.inflight.Load() > 0 {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
	}
}

func (s *Server) newHTTPHandler(addr net.Addr, o HTTPOptions) (*httpHandler, error) {
	if o.Token == "" {
		return nil, errors.New("HTTP server: no bearer token; every request but /v1/health must carry one")
	}
	o = o.withDefaults()
	g, err := newGuard(addr, o.Token, o.MaxBodyBytes)
	if err != nil {
		return nil, err
	}
	g.console = s.console
	h := &httpHandler{}
	mux := http.NewServeMux()
	// Each endpoint has a handler of its own, so a session opened on one
	// profile can never be used on another path; the limit counts them
	// all.
	lim := &sessionLimit{max: o.MaxSessions}
	endpoint := func(m *mcp.Server) http.Handler {
		streamable := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return m }, &mcp.StreamableHTTPOptions{
			Logger:              s.log,
			SessionTimeout:      o.SessionTimeout,
			MaxRequestBodyBytes: o.MaxBodyBytes,
		})
		return s.mcpEndpoint(streamable, lim, &h.inflight)
	}
	mux.Handle("/mcp", endpoint(s.mcp))
	for name, m := range s.profiles {
		mux.Handle("/mcp/"+name, endpoint(m))
	}
	s.handleAPI(mux)
	s.handleConsole(mux)
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		writeError(w, http.StatusNotFound, "NotFound", fmt.Sprintf("%s %s: no such endpoint; MCP is served at /mcp%s, the batch API under /v1 (GET /v1/openapi.json describes it)", r.Method, r.URL.Path, s.profilePaths()))
	})
	h.Handler = g.wrap(mux)
	// From now on a call from a client that cannot be asked is held for
	// a decision through this API.
	base := URL(addr, "")
	s.api.Store(&base)
	return h, nil
}

// mcpEndpoint serves MCP, opening a session only while fewer than the
// limit are open. A session's place and its conversation are released
// when it ends: closed by the client (DELETE, released before the answer
// is complete, so the client may open another at once), expired, or shut
// down.
func (s *Server) mcpEndpoint(next http.Handler, lim *sessionLimit, inflight *atomic.Int64) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if c := r.Header.Get(ConversationHeader); c != "" && !validConversation(c) {
			writeError(w, http.StatusBadRequest, "InvalidConversation", fmt.Sprintf("header %s: %q is not a conversation id: use 1 to %d letters, digits, '.', '_', ':' or '-'", ConversationHeader, truncate(c, 40), maxConversationLen))
			return
		}
		id := r.Header.Get("Mcp-Session-Id")
		switch {
		case r.Method == http.MethodDelete:
			// Only a DELETE this endpoint answered with success closed a
			// session: an id of another endpoint's session (a profile's)
			// gets 404 here and must keep its place, or deleting ids
			// across endpoints would open sessions without bound.
			sw := &statusWriter{ResponseWriter: w}
			next.ServeHTTP(sw, r)
			if sw.status/100 == 2 {
				lim.end(id)
			}
			return
		case r.Method != http.MethodPost:
			next.ServeHTTP(w, r)
			return
		}
		inflight.Add(1)
		defer inflight.Add(-1)
		if id != "" {
			next.ServeHTTP(w, r)
			return
		}
		// A POST without a session id opens a session.
		release, ok := lim.acquire()
		if !ok {
			w.Header().Set("Retry-After", "5")
			writeError(w, http.StatusServiceUnavailable, "TooManySessions", fmt.Sprintf("%d MCP sessions are open, the most this server allows: close one (DELETE /mcp with its Mcp-Session-Id), wait for an idle one to expire, or restart toolhost serve with a higher --max-sessions", lim.max))
			return
		}
		next.ServeHTTP(w, r)
		ss := s.session(w.Header().Get("Mcp-Session-Id"))
		if ss == nil {
			release()
			return
		}
		lim.hold(ss.ID(), release)
		go func() {
			ss.Wait()
			s.forget(ss)
			lim.end(ss.ID())
		}()
	})
}

// statusWriter records the status a handler answered with.
type statusWriter struct {
	http.ResponseWriter
	status int
}

func (w *statusWriter) WriteHeader(status int) {
	if w.status == 0 {
		w.status = status
	}
	w.ResponseWriter.WriteHeader(status)
}

func (w *statusWriter) Write(b []byte) (int, error) {
	if w.status == 0 {
		w.status = http.StatusOK
	}
	return w.ResponseWriter.Write(b)
}

// Unwrap lets http.ResponseController reach the connection.
func (w *statusWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// profilePaths names the profiles' endpoints for an error message.
func (s *Server) profilePaths() string {
	if len(s.profiles) == 0 {
		return ""
	}
	var paths []string
	for _, name := range slices.Sorted(maps.Keys(s.profiles)) {
		paths = append(paths, "/mcp/"+name)
	}
	return " (profiles: " + strings.Join(paths, ", ") + ")"
}

// session is the open session with this id, nil if there is none.
func (s *Server) session(id string) *mcp.ServerSession {
	if id == "" {
		return nil
	}
	for _, ss := range s.sessions() {
		if ss.ID() == id {
			return ss
		}
	}
	return nil
}

// sessionLimit counts the MCP sessions open or being opened.
type sessionLimit struct {
	max  int
	mu   sync.Mutex
	n    int
	open map[string]func() // each open session's release, by id
}

// acquire takes a place for a session being opened; release gives it
// back, once however often it is called.
func (l *sessionLimit) acquire() (release func(), ok bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.n >= l.max {
		return nil, false
	}
	l.n++
	return sync.OnceFunc(func() {
		l.mu.Lock()
		defer l.mu.Unlock()
		l.n--
	}), true
}

// hold keeps a place for the open session id until end(id).
func (l *sessionLimit) hold(id string, release func()) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.open == nil {
		l.open = map[string]func(){}
	}
	l.open[id] = release
}

// end releases the place of session id, if it holds one.
func (l *sessionLimit) end(id string) {
	l.mu.Lock()
	release := l.open[id]
	delete(l.open, id)
	l.mu.Unlock()
	if release != nil {
		release()
	}
}

// guard checks every request before it reaches a handler: the Host and
// Origin (a web page the user visits must not reach the server through
// DNS rebinding or a cross-site request), the bearer token, and the
// body's size.
type guard struct {
	port     string
	loopback bool   // the server listens on loopback only
	ip       net.IP // the address it listens on, nil when every interface
	token    [sha256.Size]byte
	maxBody  int64
	// console admits the web console's sessions; nil admits none.
	console *consoleAuth
}

func newGuard(addr net.Addr, token string, maxBody int64) (guard, error) {
	host, port, err := net.SplitHostPort(addr.String())
	if err != nil {
		return guard{}, fmt.Errorf("HTTP server: listen address %s: %w", addr, err)
	}
	g := guard{port: port, loopback: isLoopbackIP(host), token: sha256.Sum256([]byte(token)), maxBody: maxBody}
	if ip := net.ParseIP(host); ip != nil && !ip.IsUnspecified() {
		g.ip = ip
	}
	return g, nil
}

func (g guard) wrap(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		msg, o := g.unauthorized(r), r.Header.Get("Origin")
		hostOK, originOK := g.hostAllowed(r.Host), o == "" || loopbackOrigin(o)
		auth := authBy{bearer: msg == ""}
		if msg != "" && hostOK && g.console != nil {
			if s, why := g.console.checkConsole(r, g.port); s != nil {
				msg, auth.console = "", s
			} else if why != "" {
				msg = why
			}
		}
		if msg == "" && hostOK && originOK {
			authenticated(r.Context())
			r = r.WithContext(withAuth(r.Context(), auth))
		} else {
			// Nothing more is served to a client without the token than
			// this answer: its connection closes with it rather than
			// idling in the budget of those (connLimiter).
			w.Header().Set("Connection", "close")
		}
		if !hostOK {
			writeError(w, http.StatusForbidden, "ForbiddenHost", fmt.Sprintf("Host %q is refused: this server answers only to its own address (for example 127.0.0.1:%s or localhost:%s); a web page reaching it by another name is a DNS rebinding attempt", truncate(r.Host, 80), g.port, g.port))
			return
		}
		if !originOK {
			writeError(w, http.StatusForbidden, "ForbiddenOrigin", fmt.Sprintf("Origin %q is refused: only pages served from this machine's loopback (http://localhost, http://127.0.0.1, http://[::1]) may call this server", truncate(o, 80)))
			return
		}
		if !publicPath(r) {
			if msg != "" {
				w.Header().Set("WWW-Authenticate", `Bearer realm="toolhost"`)
				writeError(w, http.StatusUnauthorized, "Unauthorized", msg)
				return
			}
		}
		if r.ContentLength > g.maxBody {
			writeError(w, http.StatusRequestEntityTooLarge, "RequestTooLarge", fmt.Sprintf("%s %s: the body has %d bytes, more than the %d this server accepts: send less at once (split a batch's calls over several batches, or a file's content over several write_file or apply_patch calls)", r.Method, r.URL.Path, r.ContentLength, g.maxBody))
			return
		}
		if r.Body != nil {
			r.Body = http.MaxBytesReader(w, r.Body, g.maxBody)
		}
		next.ServeHTTP(w, r)
	})
}

// hostAllowed reports whether a request's Host names this server: a
// loopback name with the server's port, or, for a server listening
// beyond loopback, its own IP address. A DNS name other than localhost
// is refused, since only a name can be rebound to this machine.
func (g guard) hostAllowed(hostport string) bool {
	host, port, err := net.SplitHostPort(hostport)
	if err != nil || port != g.port {
		return false
	}
	if strings.EqualFold(host, "localhost") || isLoopbackIP(host) {
		return true
	}
	ip := net.ParseIP(host)
	if g.loopback || ip == nil {
		return false
	}
	return g.ip == nil || g.ip.Equal(ip)
}

// unauthorized says what is wrong with a request's bearer token, "" if
// it carries this server's. The tokens are compared by their hashes, in
// constant time, so the time taken says nothing about the token.
func (g guard) unauthorized(r *http.Request) string {
	const how = "send the header \"Authorization: Bearer TOKEN\" with the token toolhost serve printed when it started (or the one in $TOOLHOST_TOKEN)"
	auth := r.Header.Get("Authorization")
	if auth == "" {
		return fmt.Sprintf("%s %s has no bearer token: %s", r.Method, r.URL.Path, how)
	}
	scheme, token, ok := strings.Cut(auth, " ")
	if !ok || !strings.EqualFold(scheme, "Bearer") {
		return fmt.Sprintf("%s %s: the Authorization header is not a bearer token: %s", r.Method, r.URL.Path, how)
	}
	sum := sha256.Sum256([]byte(strings.TrimSpace(token)))
	if subtle.ConstantTimeCompare(sum[:], g.token[:]) != 1 {
		return fmt.Sprintf("%s %s: the bearer token is not this server's: %s", r.Method, r.URL.Path, how)
	}
	return ""
}

// loopbackOrigin reports whether an Origin header names a page served
// from this machine's loopback. "null" (a sandboxed or file page) is
// not one.
func loopbackOrigin(origin string) bool {
	u, err := url.Parse(origin)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return false
	}
	h := u.Hostname()
	return strings.EqualFold(h, "localhost") || isLoopbackIP(h)
}

func isLoopbackIP(host string) bool {
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// validConversation reports whether a header's conversation id is one a
// client may choose: short, and only characters that read plainly in
// logs.
func validConversation(c string) bool {
	if len(c) == 0 || len(c) > maxConversationLen {
		return false
	}
	for _, r := range c {
		ok := r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune("._:-", r)
		if !ok {
			return false
		}
	}
	return true
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}

// writeError answers with the batch API's error shape:
// {"error":{"kind","message"}}.
func writeError(w http.ResponseWriter, status int, kind, message string) {
	writeJSON(w, status, map[string]any{"error": map[string]string{"kind": kind, "message": message}})
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(status)
	json.NewEncoder(w).Encode(v)
}
