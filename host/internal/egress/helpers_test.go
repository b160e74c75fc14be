package egress

import (
	"bufio"
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// proxyFor starts a proxy on a socket in a temporary directory, with the
// default settings changed by mod (nil: none). It is closed when the
// test ends.
func proxyFor(t testing.TB, rules Rules, log *slog.Logger, mod func(*settings)) *Proxy {
	t.Helper()
	set := defaultSettings()
	if mod != nil {
		mod(&set)
	}
	p, err := listen(context.Background(), filepath.Join(t.TempDir(), "egress.sock"), rules, log, set)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := p.Close(); err != nil {
			t.Error(err)
		}
	})
	return p
}

// proxyClient is an HTTP client that sends through the proxy's socket,
// as curl or Go's own client does once HTTP_PROXY points at the relay.
func proxyClient(p *Proxy) *http.Client {
	return &http.Client{
		Transport: &http.Transport{
			Proxy: http.ProxyURL(&url.URL{Scheme: "http", Host: "egress.invalid"}),
			DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
				var d net.Dialer
				return d.DialContext(ctx, "unix", p.Addr())
			},
			DisableKeepAlives: true,
		},
		Timeout: 10 * time.Second,
	}
}

// echoServer listens on addr ("127.0.0.1:0") and sends back what each
// connection sends. It returns the address it listens on.
func echoServer(t testing.TB, addr string) string {
	t.Helper()
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	t.Cleanup(func() {
		ln.Close()
		wg.Wait()
	})
	wg.Go(func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			wg.Go(func() {
				defer c.Close()
				_, _ = io.Copy(c, c)
			})
		}
	})
	return ln.Addr().String()
}

// rawConnect sends CONNECT hostport on a new connection to the proxy
// and returns the response's status, its body and the connection (the
// tunnel, when the status is 200).
func rawConnect(t testing.TB, p *Proxy, hostport string) (int, string, net.Conn) {
	t.Helper()
	c, err := net.Dial("unix", p.Addr())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	_ = c.SetDeadline(time.Now().Add(10 * time.Second))
	fmt.Fprintf(c, "CONNECT %s HTTP/1.1\r\nHost: %s\r\n\r\n", hostport, hostport)
	br := bufio.NewReader(c)
	resp, err := http.ReadResponse(br, &http.Request{Method: http.MethodConnect})
	if err != nil {
		t.Fatalf("CONNECT %s: %v", hostport, err)
	}
	if resp.StatusCode != http.StatusOK {
		body, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(body), c
	}
	_ = c.SetDeadline(time.Time{})
	if br.Buffered() > 0 {
		t.Fatalf("CONNECT %s: %d bytes after the response", hostport, br.Buffered())
	}
	return resp.StatusCode, "", c
}

// socksConnect sends a SOCKS5 greeting and a CONNECT request for host
// (as the address type atyp) and port, and returns the reply code and
// the connection.
func socksConnect(t testing.TB, p *Proxy, atyp byte, host string, port int) (byte, net.Conn) {
	t.Helper()
	c, err := net.Dial("unix", p.Addr())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	_ = c.SetDeadline(time.Now().Add(10 * time.Second))
	if _, err := c.Write([]byte{5, 1, 0}); err != nil {
		t.Fatal(err)
	}
	var sel [2]byte
	if _, err := io.ReadFull(c, sel[:]); err != nil || sel != [2]byte{5, 0} {
		t.Fatalf("socks5 method selection: %v %v", sel, err)
	}
	req := []byte{5, 1, 0, atyp}
	switch atyp {
	case socksAtypName:
		req = append(append(req, byte(len(host))), host...)
	case socksAtypIPv4:
		b := netip.MustParseAddr(host).As4()
		req = append(req, b[:]...)
	case socksAtypIPv6:
		b := netip.MustParseAddr(host).As16() // an IPv4 address in its mapped form
		req = append(req, b[:]...)
	}
	req = binary.BigEndian.AppendUint16(req, uint16(port))
	if _, err := c.Write(req); err != nil {
		t.Fatal(err)
	}
	var rep [4]byte
	if _, err := io.ReadFull(c, rep[:]); err != nil {
		t.Fatalf("socks5 reply: %v", err)
	}
	n := 4
	if rep[3] == socksAtypIPv6 {
		n = 16
	}
	bound := make([]byte, n+2)
	if _, err := io.ReadFull(c, bound); err != nil {
		t.Fatalf("socks5 reply address: %v", err)
	}
	// The reply's bound address would be the
	// host's outbound address, which a confined command has no business
	// learning; every reply says 0.0.0.0:0.
	if rep[3] != socksAtypIPv4 || !bytes.Equal(bound, make([]byte, 6)) {
		t.Errorf("socks5 reply bound address: type %d, %v; want 0.0.0.0:0", rep[3], bound)
	}
	_ = c.SetDeadline(time.Time{})
	return rep[1], c
}

// roundTrip writes msg on c and reads it back: an echo through a tunnel.
func roundTrip(t testing.TB, c net.Conn, msg string) {
	t.Helper()
	_ = c.SetDeadline(time.Now().Add(10 * time.Second))
	defer c.SetDeadline(time.Time{})
	if _, err := io.WriteString(c, msg); err != nil {
		t.Fatal(err)
	}
	got := make([]byte, len(msg))
	if _, err := io.ReadFull(c, got); err != nil {
		t.Fatalf("echo of %q: %v", msg, err)
	}
	if string(got) != msg {
		t.Fatalf("echo: got %q, want %q", got, msg)
	}
}

func portOf(t testing.TB, hostport string) int {
	t.Helper()
	_, p, err := net.SplitHostPort(hostport)
	if err != nil {
		t.Fatal(err)
	}
	n, err := strconv.Atoi(p)
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// dnsServer answers A and AAAA queries for the names in zone from a UDP
// socket on 127.0.0.1, and returns a resolver that asks only it: a real
// DNS exchange, for names the test chooses to point anywhere.
func dnsServer(t testing.TB, zone map[string][]netip.Addr) *net.Resolver {
	r, _ := countingDNSServer(t, zone)
	return r
}

// countingDNSServer is dnsServer, also returning how many queries it
// answered.
func countingDNSServer(t testing.TB, zone map[string][]netip.Addr) (*net.Resolver, func() int) {
	t.Helper()
	pc, err := net.ListenPacket("udp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	t.Cleanup(func() {
		pc.Close()
		<-done
	})
	var mu sync.Mutex
	queries := 0
	go func() {
		defer close(done)
		buf := make([]byte, 512)
		for {
			n, from, err := pc.ReadFrom(buf)
			if err != nil {
				return
			}
			if resp := dnsAnswer(buf[:n], zone); resp != nil {
				mu.Lock()
				queries++
				mu.Unlock()
				_, _ = pc.WriteTo(resp, from)
			}
		}
	}()
	addr := pc.LocalAddr().String()
	return &net.Resolver{
			PreferGo: true,
			Dial: func(ctx context.Context, _, _ string) (net.Conn, error) {
				var d net.Dialer
				return d.DialContext(ctx, "udp", addr)
			},
		}, func() int {
			mu.Lock()
			defer mu.Unlock()
			return queries
		}
}

// dnsAnswer builds the response to one query (RFC 1035 section 4).
func dnsAnswer(q []byte, zone map[string][]netip.Addr) []byte {
	if len(q) < 12 {
		return nil
	}
	var labels []string
	i := 12
	for i < len(q) && q[i] != 0 {
		n := int(q[i])
		if i+1+n > len(q) {
			return nil
		}
		labels = append(labels, string(q[i+1:i+1+n]))
		i += 1 + n
	}
	if i+5 > len(q) {
		return nil
	}
	qtype := binary.BigEndian.Uint16(q[i+1:])
	question := q[12 : i+5]
	name := strings.ToLower(strings.Join(labels, "."))
	var answers [][]byte
	for _, a := range zone[name] {
		if (qtype == 1 && a.Is4()) || (qtype == 28 && a.Is6()) {
			answers = append(answers, a.AsSlice())
		}
	}
	rcode := byte(0)
	if _, ok := zone[name]; !ok {
		rcode = 3 // NXDOMAIN
	}
	var b bytes.Buffer
	b.Write(q[:2])                      // id
	b.Write([]byte{0x81, 0x80 | rcode}) // response, recursion desired and available
	b.Write([]byte{0, 1})
	_ = binary.Write(&b, binary.BigEndian, uint16(len(answers)))
	b.Write([]byte{0, 0, 0, 0})
	b.Write(question)
	for _, rdata := range answers {
		b.Write([]byte{0xc0, 12}) // the name of the question
		_ = binary.Write(&b, binary.BigEndian, qtype)
		b.Write([]byte{0, 1, 0, 0, 0, 0}) // class IN, TTL 0
		_ = binary.Write(&b, binary.BigEndian, uint16(len(rdata)))
		b.Write(rdata)
	}
	return b.Bytes()
}

// logBuffer is a log the proxy writes to while the test reads it.
type logBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *logBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *logBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}
