package extism

import (
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"sync"

	"github.com/gobwas/glob"
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
		if h == "" || strings.ContainsAny(h, "/:@ ") {
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
	if host == "" {
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

// guard is the transport of http.DefaultClient once Guard ran: it checks
// every request a plugin loaded here makes, redirects included, against
// that plugin's allow-list, and passes everything else through.
type guard struct{ next http.RoundTripper }

func (g guard) RoundTrip(r *http.Request) (*http.Response, error) {
	st := stateOf(r.Context())
	if st == nil {
		return g.next.RoundTrip(r)
	}
	host := r.URL.Hostname()
	if r.URL.Scheme != "http" && r.URL.Scheme != "https" {
		return nil, &NetDeniedError{Plugin: st.mod.name, Host: host, Why: fmt.Sprintf("scheme %q is not http or https", r.URL.Scheme)}
	}
	if !st.mod.hosts.allows(host) {
		return nil, &NetDeniedError{Plugin: st.mod.name, Host: host}
	}
	return g.next.RoundTrip(r)
}

// guardOnce installs the guard once per process. It is package state
// because go-sdk sends every plugin request with http.DefaultClient,
// checking the allow-list on the first request only and then following
// redirects anywhere: that client is the only place a check on every hop
// can go.
var guardOnce sync.Once

// Guard makes http.DefaultClient re-check every request an Extism plugin
// loaded by this package makes, redirects included. NewLoader calls it;
// requests of anything else pass through unchanged.
func Guard() {
	guardOnce.Do(func() {
		next := http.DefaultClient.Transport
		if next == nil {
			next = http.DefaultTransport
		}
		http.DefaultClient.Transport = guard{next: next}
	})
}

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
