// Package egress is run_command's way out to the network when
// [tools.run_command] network = "allowlist": a proxy
// on a Unix socket that the confined command reaches through a relay in
// its network namespace. It speaks HTTP CONNECT, plain HTTP with
// absolute-URI requests, and SOCKS5 (no authentication, CONNECT), told
// apart by the first byte.
//
// It resolves names itself and dials exactly the addresses it checked
// against the Rules, so a command can neither reach a host the operator
// did not list nor, through a listed name, an internal address (DNS
// rebinding, a name resolving to 127.0.0.1). It never dials anything it
// has not checked, never uses the environment's proxy settings, and
// never reads or changes what passes through a tunnel.
package egress

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/http/httputil"
	"os"
	"sync"
	"time"
)

// settings are the proxy's bounds, which tests shorten, and its
// resolver, which tests point at a DNS server of their own.
type settings struct {
	maxHeader int           // bytes of an HTTP request's header
	handshake time.Duration // to send an HTTP request header or the SOCKS5 handshake
	idle      time.Duration // a tunnel or an idle keep-alive connection with no traffic either way
	resolve   time.Duration // one name's resolution
	dial      time.Duration // one address's TCP connect
	keepAlive time.Duration // TCP keep-alive probes to the remote host
	maxConns  int           // client connections open at once; more wait in the listen backlog
	resolver  *net.Resolver
}

func defaultSettings() settings {
	return settings{
		maxHeader: 32 << 10,
		handshake: 10 * time.Second,
		idle:      5 * time.Minute,
		resolve:   10 * time.Second,
		dial:      10 * time.Second,
		keepAlive: 30 * time.Second,
		maxConns:  256,
		resolver:  net.DefaultResolver,
	}
}

// Proxy is a running egress proxy. Close stops it.
type Proxy struct {
	path  string
	info  os.FileInfo // the socket file, so that Close removes only its own
	rules Rules
	log   *slog.Logger
	set   settings

	ln        *net.UnixListener
	httpLn    *connListener
	srv       *http.Server
	forwarder *httputil.ReverseProxy
	transport *http.Transport

	ctx      context.Context
	cancel   context.CancelFunc
	stopCtx  func() bool
	slots    chan struct{}
	wg       sync.WaitGroup // every goroutine the proxy started
	mu       sync.Mutex
	conns    map[net.Conn]struct{} // open client and remote connections
	closed   bool
	closing  sync.Once
	closeErr error
}

// Listen starts a proxy on a new Unix socket at socketPath (absolute,
// mode 0600; a stale socket left there by a process that died is
// replaced, any other file is not). It serves until Close, or until ctx
// is done. log receives every refusal (host, why); nil discards.
func Listen(ctx context.Context, socketPath string, rules Rules, log *slog.Logger) (*Proxy, error) {
	return listen(ctx, socketPath, rules, log, defaultSettings())
}

func listen(ctx context.Context, socketPath string, rules Rules, log *slog.Logger, set settings) (*Proxy, error) {
	rules, err := ParseRules(rules.Allowed, rules.Denied)
	if err != nil {
		return nil, err
	}
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	ln, info, err := listenUnix(socketPath)
	if err != nil {
		return nil, err
	}
	p := &Proxy{
		path: socketPath, info: info, rules: rules, log: log, set: set,
		ln:     ln,
		httpLn: newConnListener(ln.Addr()),
		slots:  make(chan struct{}, set.maxConns),
		conns:  map[net.Conn]struct{}{},
	}
	p.ctx, p.cancel = context.WithCancel(context.WithoutCancel(ctx))
	p.transport = &http.Transport{
		// Never the environment's proxy: this is the way out.
		Proxy: nil,
		DialContext: func(ctx context.Context, _, addr string) (net.Conn, error) {
			return p.dial(ctx, "http", addr)
		},
		MaxIdleConns:       32,
		IdleConnTimeout:    90 * time.Second,
		DisableCompression: true,
	}
	p.forwarder = &httputil.ReverseProxy{
		Rewrite:       rewrite,
		Transport:     p.transport,
		FlushInterval: -1,
		ErrorHandler: func(w http.ResponseWriter, r *http.Request, err error) {
			answer(w, r.URL.Host, err)
		},
		ErrorLog: slog.NewLogLogger(log.Handler(), slog.LevelDebug),
	}
	p.srv = &http.Server{
		Handler:           http.HandlerFunc(p.serveHTTP),
		ReadHeaderTimeout: set.handshake,
		IdleTimeout:       set.idle,
		MaxHeaderBytes:    set.maxHeader,
		ConnState:         p.connState,
		BaseContext:       func(net.Listener) context.Context { return p.ctx },
		ErrorLog:          slog.NewLogLogger(log.Handler(), slog.LevelDebug),
	}
	p.wg.Add(2)
	go p.acceptLoop()
	go func() {
		defer p.wg.Done()
		_ = p.srv.Serve(p.httpLn) // returns ErrServerClosed on Close
	}()
	p.mu.Lock() // the function may run, and call Close, at once
	p.stopCtx = context.AfterFunc(ctx, func() { _ = p.Close() })
	p.mu.Unlock()
	return p, nil
}

// Addr is the path of the proxy's socket.
func (p *Proxy) Addr() string { return p.path }

// Close stops the proxy: it closes the listener and every open
// connection, tunnels included, waits for the proxy's goroutines to end,
// and removes the socket file.
func (p *Proxy) Close() error {
	p.closing.Do(func() {
		p.mu.Lock()
		if p.stopCtx != nil {
			p.stopCtx()
		}
		p.closed = true
		conns := make([]net.Conn, 0, len(p.conns))
		for c := range p.conns {
			conns = append(conns, c)
		}
		p.mu.Unlock()
		p.cancel()
		err := p.ln.Close()
		_ = p.httpLn.Close()
		_ = p.srv.Close()
		for _, c := range conns {
			_ = c.Close()
		}
		p.transport.CloseIdleConnections()
		p.wg.Wait()
		if fi, serr := os.Lstat(p.path); serr == nil && os.SameFile(fi, p.info) {
			if rerr := os.Remove(p.path); rerr != nil && err == nil {
				err = rerr
			}
		}
		if err != nil {
			p.closeErr = fmt.Errorf("close egress proxy %s: %w", p.path, err)
		}
	})
	return p.closeErr
}

// acceptLoop takes a connection slot, then a client, and serves it.
func (p *Proxy) acceptLoop() {
	defer p.wg.Done()
	var backoff time.Duration
	for {
		select {
		case p.slots <- struct{}{}:
		case <-p.ctx.Done():
			return
		}
		c, err := p.ln.Accept()
		if err != nil {
			<-p.slots
			if errors.Is(err, net.ErrClosed) || p.ctx.Err() != nil {
				return
			}
			// Out of file descriptors, say: wait, as net/http does.
			backoff = min(max(2*backoff, 5*time.Millisecond), time.Second)
			p.log.Warn("egress: accept", "err", err, "retry_in", backoff)
			select {
			case <-time.After(backoff):
			case <-p.ctx.Done():
				return
			}
			continue
		}
		backoff = 0
		tc, err := p.trackClient(c)
		if err != nil {
			continue
		}
		p.wg.Add(1)
		go p.serveConn(tc)
	}
}

// serveConn reads the first byte: 5 is SOCKS5's version, anything else
// starts an HTTP request.
func (p *Proxy) serveConn(c net.Conn) {
	defer p.wg.Done()
	_ = c.SetDeadline(time.Now().Add(p.set.handshake))
	br := bufio.NewReader(c)
	first, err := br.Peek(1)
	if err != nil {
		_ = c.Close()
		return
	}
	if first[0] == socksVersion {
		p.serveSOCKS(c, br)
		return
	}
	// The HTTP server sets its own read deadlines, and none for writes:
	// a long download must not be cut by the handshake's.
	_ = c.SetDeadline(time.Time{})
	if !p.httpLn.push(&bufferedConn{Conn: c, r: br}) {
		_ = c.Close()
	}
}

// connState counts the HTTP server's connection goroutines, so that
// Close waits for them.
func (p *Proxy) connState(_ net.Conn, s http.ConnState) {
	switch s {
	case http.StateNew:
		p.wg.Add(1)
	case http.StateClosed, http.StateHijacked:
		p.wg.Done()
	}
}

// errClosed is what a connection made while the proxy closes gets.
var errClosed = errors.New("egress proxy is closed")

// trackClient records a client connection, which holds a slot until it
// is closed.
func (p *Proxy) trackClient(c net.Conn) (net.Conn, error) {
	return p.register(&trackedConn{Conn: c, p: p, slot: true})
}

// track records a connection to a remote host, so that Close ends it.
func (p *Proxy) track(c net.Conn) (net.Conn, error) {
	return p.register(&trackedConn{Conn: c, p: p})
}

func (p *Proxy) register(tc *trackedConn) (net.Conn, error) {
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		_ = tc.Close()
		return nil, errClosed
	}
	p.conns[tc] = struct{}{}
	p.mu.Unlock()
	return tc, nil
}

// trackedConn leaves the proxy's set, and gives back its slot, when
// closed.
type trackedConn struct {
	net.Conn
	p    *Proxy
	slot bool
	once sync.Once
}

func (c *trackedConn) Close() error {
	err := c.Conn.Close()
	c.once.Do(func() {
		c.p.mu.Lock()
		delete(c.p.conns, c)
		c.p.mu.Unlock()
		if c.slot {
			<-c.p.slots
		}
	})
	return err
}

// CloseWrite half-closes the connection where it can, so that a tunnel
// passes on an end of input without ending the other direction.
func (c *trackedConn) CloseWrite() error {
	if cw, ok := c.Conn.(interface{ CloseWrite() error }); ok {
		return cw.CloseWrite()
	}
	return c.Close()
}

// bufferedConn is a client connection whose first bytes were read ahead.
type bufferedConn struct {
	net.Conn
	r *bufio.Reader
}

func (c *bufferedConn) Read(b []byte) (int, error) { return c.r.Read(b) }

func (c *bufferedConn) CloseWrite() error {
	if cw, ok := c.Conn.(interface{ CloseWrite() error }); ok {
		return cw.CloseWrite()
	}
	return c.Close()
}

// connListener hands the connections that start with an HTTP request
// to the HTTP server.
type connListener struct {
	addr net.Addr
	ch   chan net.Conn
	done chan struct{}
	once sync.Once
}

func newConnListener(addr net.Addr) *connListener {
	return &connListener{addr: addr, ch: make(chan net.Conn), done: make(chan struct{})}
}

func (l *connListener) push(c net.Conn) bool {
	select {
	case l.ch <- c:
		return true
	case <-l.done:
		return false
	}
}

func (l *connListener) Accept() (net.Conn, error) {
	select {
	case c := <-l.ch:
		return c, nil
	case <-l.done:
		return nil, net.ErrClosed
	}
}

func (l *connListener) Close() error {
	l.once.Do(func() { close(l.done) })
	return nil
}

func (l *connListener) Addr() net.Addr { return l.addr }
