package egress

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestConnectTLS: an HTTPS request through CONNECT reaches an
// allow-listed TLS server, bytes passing both ways.
func TestConnectTLS(t *testing.T) {
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		fmt.Fprintf(w, "got %s", body)
	}))
	defer srv.Close()
	p := proxyFor(t, Rules{Allowed: []string{"127.0.0.1"}}, nil, nil)
	c := proxyClient(p)
	c.Transport.(*http.Transport).TLSClientConfig = srv.Client().Transport.(*http.Transport).TLSClientConfig
	resp, err := c.Post(srv.URL, "text/plain", strings.NewReader("ping"))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != 200 || string(body) != "got ping" {
		t.Fatalf("through the proxy: %s %q", resp.Status, body)
	}
}

// TestConnectTunnel: a raw CONNECT tunnel to an allow-listed TCP server
// passes bytes both ways, and a half-close reaches the server while the
// other direction stays open.
func TestConnectTunnel(t *testing.T) {
	echo := echoServer(t, "127.0.0.1:0")
	p := proxyFor(t, Rules{Allowed: []string{"127.0.0.1"}}, nil, nil)
	status, body, c := rawConnect(t, p, echo)
	if status != 200 {
		t.Fatalf("CONNECT %s: %d %s", echo, status, body)
	}
	roundTrip(t, c, "hello")
	roundTrip(t, c, strings.Repeat("x", 1<<20))
	if _, err := io.WriteString(c, "last"); err != nil {
		t.Fatal(err)
	}
	if err := c.(*net.UnixConn).CloseWrite(); err != nil {
		t.Fatal(err)
	}
	_ = c.SetDeadline(time.Now().Add(10 * time.Second))
	rest, err := io.ReadAll(c)
	if err != nil || string(rest) != "last" {
		t.Fatalf("after half-close: %q, %v", rest, err)
	}
}

// TestPlainHTTP: an absolute-URI GET is forwarded to an allow-listed
// server, with the Host header of the URL's host: a Host naming another
// site must not reach it through a shared server.
func TestPlainHTTP(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintf(w, "host=%s path=%s", r.Host, r.URL.Path)
	}))
	defer srv.Close()
	p := proxyFor(t, Rules{Allowed: []string{"127.0.0.1"}}, nil, nil)
	// Go's client would put the Host in the request line itself: a raw
	// request it is.
	c, err := net.Dial("unix", p.Addr())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(10 * time.Second))
	fmt.Fprintf(c, "GET %s/a/b HTTP/1.1\r\nHost: evil.example.com\r\n\r\n", srv.URL)
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	want := "host=" + strings.TrimPrefix(srv.URL, "http://") + " path=/a/b"
	if resp.StatusCode != 200 || string(body) != want {
		t.Fatalf("got %s %q, want %q", resp.Status, body, want)
	}
}

// TestSOCKS5: a SOCKS5 CONNECT by name, IPv4 and IPv6 address reaches
// an allow-listed server (ALL_PROXY=socks5h://).
func TestSOCKS5(t *testing.T) {
	echo4 := echoServer(t, "127.0.0.1:0")
	ln6, err := net.Listen("tcp", "[::1]:0")
	if err != nil {
		t.Fatalf("this machine has no IPv6 loopback, which the IPv6 case needs: %v", err)
	}
	ln6.Close()
	echo6 := echoServer(t, "[::1]:0")
	p := proxyFor(t, Rules{Allowed: []string{"127.0.0.1", "::1", "localhost"}}, nil, nil)
	for _, tc := range []struct {
		name string
		atyp byte
		host string
		port int
	}{
		{"ipv4", socksAtypIPv4, "127.0.0.1", portOf(t, echo4)},
		{"ipv6", socksAtypIPv6, "::1", portOf(t, echo6)},
		{"name", socksAtypName, "localhost", portOf(t, echo4)},
		{"name that is an address", socksAtypName, "127.0.0.1", portOf(t, echo4)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, c := socksConnect(t, p, tc.atyp, tc.host, tc.port)
			if code != socksSucceeded {
				t.Fatalf("reply %d", code)
			}
			roundTrip(t, c, "hello "+tc.name)
		})
	}
}

// TestRefused: each host the rules do not allow is refused, by CONNECT
// with a 403 naming the host and allowed_domains, by SOCKS5 with reply
// 2, by a plain GET with a 403, and is logged.
func TestRefused(t *testing.T) {
	echo := echoServer(t, "127.0.0.1:0")
	port := portOf(t, echo)
	resolver := dnsServer(t, map[string][]netip.Addr{
		"loop.test":       {netip.MustParseAddr("127.0.0.1")},
		"private.test":    {netip.MustParseAddr("10.1.2.3")},
		"metadata.test":   {netip.MustParseAddr("169.254.169.254")},
		"mixed.test":      {netip.MustParseAddr("93.184.216.34"), netip.MustParseAddr("127.0.0.1")},
		"mapped.test":     {netip.MustParseAddr("::ffff:127.0.0.1")},
		"public.test":     {netip.MustParseAddr("93.184.216.34")},
		"a.example.test":  {netip.MustParseAddr("93.184.216.34")},
		"ab.example.test": {netip.MustParseAddr("93.184.216.34")},
	})
	for _, tc := range []struct {
		name    string
		rules   Rules
		host    string
		atyp    byte   // how SOCKS5 asks for host
		why     string // in the refusal
		allowed bool
	}{
		{"unlisted address", Rules{Allowed: []string{"example.com"}}, "127.0.0.1", socksAtypIPv4, "not in [tools.run_command] allowed_domains", false},
		{"empty allowed", Rules{}, "public.test", socksAtypName, "not in [tools.run_command] allowed_domains", false},
		{"denied wins over exact", Rules{Allowed: []string{"a.example.test"}, Denied: []string{"*.example.test"}}, "a.example.test", socksAtypName, `matches "*.example.test" of [tools.run_command] denied_domains`, false},
		{"denied wins over pattern", Rules{Allowed: []string{"*.example.test"}, Denied: []string{"ab.example.test"}}, "ab.example.test", socksAtypName, "denied_domains", false},
		{"denied address of a listed name", Rules{Allowed: []string{"public.test"}, Denied: []string{"93.184.216.34"}}, "public.test", socksAtypName, "resolves to 93.184.216.34", false},
		{"pattern does not match the apex", Rules{Allowed: []string{"*.example.test"}}, "example.test", socksAtypName, "not in", false},
		{"pattern is not a suffix match", Rules{Allowed: []string{"*.b.example.test"}}, "ab.example.test", socksAtypName, "not in", false},
		{"loopback by pattern", Rules{Allowed: []string{"*.test"}}, "loop.test", socksAtypName, "127.0.0.1, an internal address (loopback)", false},
		{"loopback by name listed", Rules{Allowed: []string{"loop.test"}}, "loop.test", socksAtypName, "", true},
		{"private by pattern", Rules{Allowed: []string{"*.test"}}, "private.test", socksAtypName, "(private)", false},
		{"metadata by pattern", Rules{Allowed: []string{"*.test"}}, "metadata.test", socksAtypName, "169.254.169.254, an internal address (link-local)", false},
		{"one internal address of several", Rules{Allowed: []string{"*.test"}}, "mixed.test", socksAtypName, "127.0.0.1", false},
		{"mapped loopback by pattern", Rules{Allowed: []string{"*.test"}}, "mapped.test", socksAtypName, "(loopback)", false},
		{"127.0.0.1 listed", Rules{Allowed: []string{"127.0.0.1"}}, "127.0.0.1", socksAtypIPv4, "", true},
		{"127.0.0.1 listed, asked for its mapped form", Rules{Allowed: []string{"127.0.0.1"}}, "::ffff:127.0.0.1", socksAtypIPv6, "not in", false},
		{"127.0.0.1 listed, asked for localhost", Rules{Allowed: []string{"127.0.0.1"}}, "localhost", socksAtypName, "not in", false},
		{"localhost unlisted", Rules{Allowed: []string{"*.localhost", "example.com"}}, "localhost", socksAtypName, "not in", false},
		{"localhost listed", Rules{Allowed: []string{"localhost"}}, "localhost", socksAtypName, "", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var log logBuffer
			p := proxyFor(t, tc.rules, slog.New(slog.NewTextHandler(&log, nil)), func(s *settings) { s.resolver = resolver })
			hostport := net.JoinHostPort(tc.host, fmt.Sprint(port))

			status, body, c := rawConnect(t, p, hostport)
			code, sc := socksConnect(t, p, tc.atyp, tc.host, port)
			if tc.allowed {
				if status != 200 || code != socksSucceeded {
					t.Fatalf("CONNECT %s: %d %q; SOCKS5: %d", hostport, status, body, code)
				}
				roundTrip(t, c, "connect")
				roundTrip(t, sc, "socks")
				return
			}
			if status != http.StatusForbidden || !strings.Contains(body, fmt.Sprintf("%q", tc.host)) ||
				!strings.Contains(body, tc.why) || !strings.Contains(body, "allowed_domains") ||
				strings.Count(body, "\n") != 1 || !strings.HasSuffix(body, "\n") {
				t.Errorf("CONNECT %s: %d %q; want 403, one line naming the host and %q", hostport, status, body, tc.why)
			}
			if code != socksNotAllowed {
				t.Errorf("SOCKS5 %s: reply %d, want %d", hostport, code, socksNotAllowed)
			}
			resp, err := proxyClient(p).Get("http://" + hostport + "/")
			if err != nil {
				t.Fatal(err)
			}
			got, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != http.StatusForbidden || !strings.Contains(string(got), tc.why) {
				t.Errorf("GET http://%s/: %s %q", hostport, resp.Status, got)
			}
			logged := log.String()
			if n := strings.Count(logged, "egress refused"); n != 3 || !strings.Contains(logged, "host="+tc.host) && !strings.Contains(logged, `host="`+tc.host) {
				t.Errorf("log has %d refusals, want 3 naming %s:\n%s", n, tc.host, logged)
			}
		})
	}
}

// TestResolvedOnce: the proxy dials the addresses it checked, never
// the name again, so a name that resolves elsewhere the second time
// (DNS rebinding) cannot lead past the check: one connection, one
// resolution (an A and an AAAA query), and the name is unknown to the
// system's resolver, so dialing it by name would fail.
func TestResolvedOnce(t *testing.T) {
	echo := echoServer(t, "127.0.0.1:0")
	resolver, queries := countingDNSServer(t, map[string][]netip.Addr{
		"loop.test": {netip.MustParseAddr("127.0.0.1")},
	})
	p := proxyFor(t, Rules{Allowed: []string{"loop.test"}}, nil, func(s *settings) { s.resolver = resolver })
	status, body, c := rawConnect(t, p, net.JoinHostPort("loop.test", fmt.Sprint(portOf(t, echo))))
	if status != 200 {
		t.Fatalf("CONNECT loop.test: %d %q", status, body)
	}
	roundTrip(t, c, "once")
	if n := queries(); n != 2 {
		t.Errorf("%d DNS queries for one connection, want 2 (A and AAAA)", n)
	}
}

// TestIPv6Literal: a bracketed IPv6 literal in CONNECT is one host; the
// loopback ::1 is refused unless listed exactly.
func TestIPv6Literal(t *testing.T) {
	p := proxyFor(t, Rules{Allowed: []string{"127.0.0.1"}}, nil, nil)
	for _, host := range []string{"[::1]:80", "[::ffff:127.0.0.1]:80", "[::ffff:7f00:1]:80", "[fe80::1%25lo]:80"} {
		status, body, _ := rawConnect(t, p, host)
		if status != http.StatusForbidden {
			t.Errorf("CONNECT %s: %d %q", host, status, body)
		}
	}
}

// TestOversizedHeader: a request header beyond the limit is answered
// with 431 and the connection closed.
func TestOversizedHeader(t *testing.T) {
	p := proxyFor(t, Rules{Allowed: []string{"127.0.0.1"}}, nil, nil)
	c, err := net.Dial("unix", p.Addr())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(10 * time.Second))
	go func() {
		fmt.Fprintf(c, "CONNECT 127.0.0.1:1 HTTP/1.1\r\nHost: 127.0.0.1:1\r\n")
		big := "X-Big: " + strings.Repeat("a", 1000) + "\r\n"
		for range 100 { // 100 KB, three times the limit
			if _, err := io.WriteString(c, big); err != nil {
				return
			}
		}
		io.WriteString(c, "\r\n")
	}()
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != http.StatusRequestHeaderFieldsTooLarge && resp.StatusCode != http.StatusBadRequest {
		t.Fatalf("status %s, want 431", resp.Status)
	}
}

// TestBadRequests: what is not a proxy request gets a 400 that says what
// the proxy takes; a SOCKS5 command other than CONNECT gets reply 7.
func TestBadRequests(t *testing.T) {
	p := proxyFor(t, Rules{Allowed: []string{"127.0.0.1"}}, nil, nil)
	for _, req := range []string{
		"GET / HTTP/1.1\r\nHost: x\r\n\r\n",
		"GET https://127.0.0.1/ HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n",
		"CONNECT 127.0.0.1 HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n",
		"CONNECT 127.0.0.1:0 HTTP/1.1\r\nHost: 127.0.0.1:0\r\n\r\n",
	} {
		c, err := net.Dial("unix", p.Addr())
		if err != nil {
			t.Fatal(err)
		}
		_ = c.SetDeadline(time.Now().Add(10 * time.Second))
		io.WriteString(c, req)
		resp, err := http.ReadResponse(bufio.NewReader(c), nil)
		c.Close()
		if err != nil {
			t.Fatalf("%q: %v", req, err)
		}
		if resp.StatusCode != http.StatusBadRequest && resp.StatusCode != http.StatusForbidden {
			t.Errorf("%q: %s", req, resp.Status)
		}
	}

	c, err := net.Dial("unix", p.Addr())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(10 * time.Second))
	c.Write([]byte{5, 1, 0, 5, 2, 0, 1, 127, 0, 0, 1, 0, 80}) // BIND
	rep := make([]byte, 12)
	if _, err := io.ReadFull(c, rep); err != nil || rep[3] != socksBadCmd {
		t.Fatalf("SOCKS5 BIND: %v %v", rep, err)
	}
}

// TestCloseEndsTunnel: Close ends an open tunnel, and returns, within a
// bound, even when the remote host sends nothing.
func TestCloseEndsTunnel(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() { // a server that accepts and stays silent
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			t.Cleanup(func() { c.Close() })
		}
	}()
	p, err := Listen(context.Background(), filepath.Join(t.TempDir(), "p.sock"), Rules{Allowed: []string{"127.0.0.1"}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	status, _, c := rawConnect(t, p, ln.Addr().String())
	if status != 200 {
		t.Fatal(status)
	}
	if code, _ := socksConnect(t, p, socksAtypIPv4, "127.0.0.1", portOf(t, ln.Addr().String())); code != socksSucceeded {
		t.Fatal(code)
	}
	_, sc := socksConnect(t, p, socksAtypIPv4, "127.0.0.1", portOf(t, ln.Addr().String()))
	idle, err := net.Dial("unix", p.Addr()) // a client that never speaks
	if err != nil {
		t.Fatal(err)
	}
	defer idle.Close()

	closed := make(chan error, 1)
	start := time.Now()
	go func() { closed <- p.Close() }()
	select {
	case err := <-closed:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("Close did not return within 5s with a tunnel open")
	}
	for _, conn := range []net.Conn{c, sc, idle} {
		_ = conn.SetReadDeadline(time.Now().Add(5 * time.Second))
		var ne net.Error
		if _, err := conn.Read(make([]byte, 1)); err == nil || errors.As(err, &ne) && ne.Timeout() {
			t.Errorf("read from a client after Close: %v, want the end of the connection", err)
		}
	}
	t.Logf("Close took %v", time.Since(start))
	if _, err := os.Lstat(p.Addr()); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("socket file after Close: %v", err)
	}
}

// TestContextEndsProxy: the proxy closes when Listen's context is done.
func TestContextEndsProxy(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	p, err := Listen(ctx, filepath.Join(t.TempDir(), "p.sock"), Rules{Allowed: []string{"127.0.0.1"}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	cancel()
	deadline := time.Now().Add(5 * time.Second)
	for {
		if _, err := os.Lstat(p.Addr()); errors.Is(err, os.ErrNotExist) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the proxy's socket is still there 5s after its context was cancelled")
		}
		time.Sleep(10 * time.Millisecond)
	}
	if err := p.Close(); err != nil {
		t.Fatal(err)
	}

	p, err = Listen(ctx, filepath.Join(t.TempDir(), "p.sock"), Rules{}, nil) // a context already done
	if err != nil {
		t.Fatal(err)
	}
	if err := p.Close(); err != nil {
		t.Fatal(err)
	}
}

// TestTimeouts: a client that sends nothing, and a tunnel with no
// traffic, are closed after their bounds.
func TestTimeouts(t *testing.T) {
	echo := echoServer(t, "127.0.0.1:0")
	p := proxyFor(t, Rules{Allowed: []string{"127.0.0.1"}}, nil, func(s *settings) {
		// Long enough that a loaded machine running -race finishes
		// the first round trip before the tunnel counts as idle.
		s.handshake = time.Second
		s.idle = 2 * time.Second
	})
	silent, err := net.Dial("unix", p.Addr())
	if err != nil {
		t.Fatal(err)
	}
	defer silent.Close()
	half, err := net.Dial("unix", p.Addr())
	if err != nil {
		t.Fatal(err)
	}
	defer half.Close()
	io.WriteString(half, "CONNECT 127.0.0.1:1 HTTP/1.1\r\n") // never ends its header
	status, _, tunnel := rawConnect(t, p, echo)
	if status != 200 {
		t.Fatal(status)
	}
	roundTrip(t, tunnel, "before idling")
	for name, c := range map[string]net.Conn{"silent client": silent, "unfinished header": half, "idle tunnel": tunnel} {
		_ = c.SetReadDeadline(time.Now().Add(10 * time.Second))
		_, err := io.ReadAll(c)
		var ne net.Error
		if errors.As(err, &ne) && ne.Timeout() {
			t.Errorf("%s: still open after 10s", name)
		}
	}
}

// TestMaxConns: beyond the connection limit a client waits, and is
// served once another leaves.
func TestMaxConns(t *testing.T) {
	echo := echoServer(t, "127.0.0.1:0")
	p := proxyFor(t, Rules{Allowed: []string{"127.0.0.1"}}, nil, func(s *settings) { s.maxConns = 2 })
	_, a := socksConnect(t, p, socksAtypIPv4, "127.0.0.1", portOf(t, echo))
	_, _ = socksConnect(t, p, socksAtypIPv4, "127.0.0.1", portOf(t, echo))
	third, err := net.Dial("unix", p.Addr())
	if err != nil {
		t.Fatal(err)
	}
	defer third.Close()
	third.Write([]byte{5, 1, 0})
	_ = third.SetReadDeadline(time.Now().Add(300 * time.Millisecond))
	if n, err := third.Read(make([]byte, 2)); n != 0 || err == nil {
		t.Fatalf("a third client was served with two allowed: %d bytes, %v", n, err)
	}
	a.Close()
	_ = third.SetReadDeadline(time.Now().Add(5 * time.Second))
	sel := make([]byte, 2)
	if _, err := io.ReadFull(third, sel); err != nil || sel[1] != socksNoAuth {
		t.Fatalf("the third client after one left: %v %v", sel, err)
	}
}
