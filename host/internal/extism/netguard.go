package extism

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/gobwas/glob"

	"github.com/toolhost/toolhost/host/internal/netguard"
)

// NetDeniedError is a plugin's HTTP request to a host its configuration
// does not allow-list.
type NetDeniedError struct {
	Plugin string // the plugin's name, as in its configuration key
	Host   string
	Why    string // "" for a host not listed; else what else is wrong
}

func (e *NetDeniedError) Error() string {
	if e.Why != "" {
		return fmt.Sprintf("plugin %s may not send this request to %q: %s", e.Plugin, e.Host, e.Why)
	}
	return fmt.Sprintf("plugin %s may not reach host %q: it is not in extism.%s.allowed_hosts in toolhost's configuration; an operator who trusts the plugin with that host adds it there",
		e.Plugin, e.Host, e.Plugin)
}

// hostPatterns is a plugin's allow-list, compiled.
type hostPatterns struct {
	exact map[string]bool
	globs []glob.Glob
}

// compileHosts checks and compiles allowed_hosts entries: host names or
// glob patterns (go-sdk's syntax: "*.example.com"), never URLs, since
// go-sdk compiles each pattern when a request is made and panics on a bad
// one.
func compileHosts(plugin string, hosts []string) (hostPatterns, error) {
	hp := hostPatterns{exact: map[string]bool{}}
	for _, h := range hosts {
		if h == "" || strings.ContainsAny(h, "/:@ %") {
			return hostPatterns{}, fmt.Errorf("extism.%s.allowed_hosts: %q is not a host name or pattern (write api.example.com, not a URL)", plugin, h)
		}
		g, err := glob.Compile(strings.ToLower(h))
		if err != nil {
			return hostPatterns{}, fmt.Errorf("extism.%s.allowed_hosts: %q is not a valid pattern: %w", plugin, h, err)
		}
		hp.exact[strings.ToLower(h)] = true
		hp.globs = append(hp.globs, g)
	}
	return hp, nil
}

func (hp hostPatterns) allows(host string) bool {
	host = strings.ToLower(host)
	// An IPv6 zone ("[::1%25.example.com]") is not part of a host name,
	// yet it would let a pattern like *.example.com match an address.
	if host == "" || strings.Contains(host, "%") {
		return false
	}
	if hp.exact[host] {
		return true
	}
	for _, g := range hp.globs {
		if g.Match(host) {
			return true
		}
	}
	return false
}

// privateOK tells whether the allow-list names host itself, so that the
// operator meant the plugin to reach it even at an internal address: the
// entry is that literal address, or "localhost" for localhost. A pattern
// never counts: "*" does not grant the metadata service or a loopback
// port.
func (hp hostPatterns) privateOK(host string) bool {
	host = strings.ToLower(host)
	if !hp.exact[host] {
		return false
	}
	if host == "localhost" {
		return true
	}
	_, err := netip.ParseAddr(host)
	return err == nil
}

// netPolicy is one plugin's network: its allow-list and a transport of
// its own, whose connections no other plugin's request can reuse and
// whose dialer refuses internal addresses the allow-list does not name.
type netPolicy struct {
	plugin    string
	hosts     hostPatterns
	transport *http.Transport
}

func newNetPolicy(plugin string, hosts hostPatterns) *netPolicy {
	np := &netPolicy{plugin: plugin, hosts: hosts}
	tr := &http.Transport{
		// The operator's proxy settings apply; the proxy then resolves
		// names, so only what toolhost itself dials is checked here.
		Proxy:                 http.ProxyFromEnvironment,
		DialContext:           np.dial,
		ForceAttemptHTTP2:     true,
		MaxIdleConns:          16,
		IdleConnTimeout:       90 * time.Second,
		TLSHandshakeTimeout:   10 * time.Second,
		ExpectContinueTimeout: time.Second,
	}
	np.transport = tr
	return np
}

// proxyKey holds, in a request's context, the proxy host it goes through:
// dialing the operator's proxy is not the plugin reaching an address.
type proxyKey struct{}

// roundTrip checks r against the plugin's allow-list and sends it on the
// plugin's own transport.
func (np *netPolicy) roundTrip(r *http.Request) (*http.Response, error) {
	host := r.URL.Hostname()
	if r.URL.Scheme != "http" && r.URL.Scheme != "https" {
		return nil, &NetDeniedError{Plugin: np.plugin, Host: host, Why: fmt.Sprintf("scheme %q is not http or https", r.URL.Scheme)}
	}
	if !np.hosts.allows(host) {
		return nil, &NetDeniedError{Plugin: np.plugin, Host: host}
	}
	// An address written in the URL is checked before a pooled
	// connection could be reused for it; names are checked where they
	// are dialed.
	if a, err := netip.ParseAddr(host); err == nil && netguard.IsInternal(a) && !np.hosts.privateOK(host) {
		return nil, np.internalError(host, a)
	}
	if proxy, err := np.transport.Proxy(r); err == nil && proxy != nil {
		r = r.WithContext(context.WithValue(r.Context(), proxyKey{}, proxy.Hostname()))
	}
	return np.transport.RoundTrip(r)
}

func (np *netPolicy) internalError(host string, a netip.Addr) error {
	return &NetDeniedError{Plugin: np.plugin, Host: host, Why: fmt.Sprintf(
		"it is at %s, an internal address (loopback, private, link-local or reserved); toolhost lets a plugin reach one only when extism.%s.allowed_hosts lists that address itself (or localhost), never through a pattern or a name that resolves there",
		a, np.plugin)}
}

// dial connects to addr, refusing, at the moment of connecting (so a name
// that resolves differently the second time gains nothing), an internal
// address the allow-list does not name.
func (np *netPolicy) dial(ctx context.Context, network, addr string) (net.Conn, error) {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return nil, err
	}
	proxy, _ := ctx.Value(proxyKey{}).(string)
	exempt := host == proxy || np.hosts.privateOK(host)
	d := net.Dialer{Timeout: 30 * time.Second, KeepAlive: 30 * time.Second,
		ControlContext: func(_ context.Context, _, address string, _ syscall.RawConn) error {
			ap, err := netip.ParseAddrPort(address)
			if err != nil {
				return fmt.Errorf("plugin %s: cannot check the address %q it dials: %w", np.plugin, address, err)
			}
			if netguard.IsInternal(ap.Addr()) && !exempt {
				return np.internalError(host, ap.Addr().Unmap())
			}
			return nil
		}}
	return d.DialContext(ctx, network, addr)
}

func (np *netPolicy) close() { np.transport.CloseIdleConnections() }

// guard is the transport of http.DefaultClient once Guard ran: it sends
// every request a plugin loaded here makes, redirects included, through
// that plugin's netPolicy, and passes everything else through.
type guard struct{ next http.RoundTripper }

func (g guard) RoundTrip(r *http.Request) (*http.Response, error) {
	st := stateOf(r.Context())
	if st == nil {
		return g.next.RoundTrip(r)
	}
	return st.mod.net.roundTrip(r)
}

// guardMu serializes installing the guard. The guard is package state
// because go-sdk sends every plugin request with http.DefaultClient,
// checking the allow-list on the first request only and then following
// redirects anywhere: that client is the only place a check on every hop
// can go.
var guardMu sync.Mutex

// Guard makes http.DefaultClient re-check every request an Extism plugin
// loaded by this package makes, redirects included; requests of anything
// else pass through unchanged. NewLoader calls it. A program that replaces
// http.DefaultClient or its Transport afterwards must call it again:
// until it does, plugins granted hosts are refused their calls (see
// guarded), since their requests would go out unchecked.
func Guard() {
	guardMu.Lock()
	defer guardMu.Unlock()
	if guarded() {
		return
	}
	next := http.DefaultClient.Transport
	if next == nil {
		next = http.DefaultTransport
	}
	http.DefaultClient.Transport = guard{next: next}
}

// guarded tells whether http.DefaultClient still sends through the guard.
func guarded() bool {
	_, ok := http.DefaultClient.Transport.(guard)
	return ok
}

// errUnguarded refuses a call of a plugin granted hosts while
// http.DefaultClient does not send through the guard.
var errUnguarded = errors.New("http.DefaultClient no longer sends through toolhost's guard (the program replaced the client or its transport after loading plugins), so this plugin's requests would go unchecked; call extism.Guard after replacing it")

// sdkDenied matches go-sdk's own refusal, the first check, which panics
// inside the guest.
var sdkDenied = regexp.MustCompile(`HTTP request to '([^']*)' is not allowed`)

// netDenied finds a refused request in a call's error: the guard's, or
// go-sdk's.
func netDenied(plugin string, err error) (*NetDeniedError, bool) {
	var nd *NetDeniedError
	if errors.As(err, &nd) {
		return nd, true
	}
	if m := sdkDenied.FindStringSubmatch(err.Error()); m != nil {
		host := m[1]
		if u, perr := url.Parse(m[1]); perr == nil && u.Hostname() != "" {
			host = u.Hostname()
		}
		return &NetDeniedError{Plugin: plugin, Host: host}, true
	}
	return nil, false
}
