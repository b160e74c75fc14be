package egress

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"strconv"

	"github.com/toolhost/toolhost/host/internal/netguard"
)

// RefusedError is a connection the rules do not allow. Its message is
// what the client is told: one line naming the host and what the
// operator can do.
type RefusedError struct {
	Host string // as the client asked for it
	Why  string // says why, and what would change it
}

func (e *RefusedError) Error() string {
	return fmt.Sprintf("toolhost refused a connection to %q: %s", e.Host, e.Why)
}

// check decides whether host may be reached and returns the addresses
// to dial: the very ones it checked, so that a name resolving elsewhere
// the second time (DNS rebinding) gains nothing.
func (p *Proxy) check(ctx context.Context, host string) ([]netip.Addr, error) {
	h := canonicalHost(host)
	if h == "" {
		return nil, &RefusedError{Host: host, Why: "it is not a host name or IP address"}
	}
	if d := matchAny(p.rules.Denied, h); d != "" {
		return nil, &RefusedError{Host: host, Why: fmt.Sprintf(
			"it matches %q of [tools.run_command] denied_domains, which wins over allowed_domains; only the operator's configuration can change that", d)}
	}
	if matchAny(p.rules.Allowed, h) == "" {
		return nil, &RefusedError{Host: host, Why: "it is not in [tools.run_command] allowed_domains; an operator who wants commands to reach it adds it there in toolhost's configuration"}
	}
	addrs, err := p.resolve(ctx, h)
	if err != nil {
		return nil, err
	}
	exact := listedExactly(p.rules.Allowed, h)
	for _, a := range addrs {
		if d := matchAny(p.rules.Denied, a.String()); d != "" || matchAny(p.rules.Denied, a.Unmap().String()) != "" {
			return nil, &RefusedError{Host: host, Why: fmt.Sprintf(
				"it resolves to %s, which [tools.run_command] denied_domains lists; a denied entry wins over allowed_domains", a)}
		}
		if c := netguard.Class(a); c != "" && !exact {
			return nil, &RefusedError{Host: host, Why: fmt.Sprintf(
				"it is at %s, an internal address (%s); a command reaches one only when [tools.run_command] allowed_domains in the operator's configuration lists %q itself, not a pattern covering it",
				a, c, h)}
		}
	}
	return addrs, nil
}

// resolve returns host's addresses: itself for a literal address.
func (p *Proxy) resolve(ctx context.Context, host string) ([]netip.Addr, error) {
	if a, ok := parseAddr(host); ok {
		return []netip.Addr{a}, nil
	}
	ctx, cancel := context.WithTimeout(ctx, p.set.resolve)
	defer cancel()
	addrs, err := p.set.resolver.LookupNetIP(ctx, "ip", host)
	if err != nil {
		return nil, fmt.Errorf("resolve %q: %w", host, err)
	}
	if len(addrs) == 0 {
		return nil, fmt.Errorf("resolve %q: no address", host)
	}
	return addrs, nil
}

// dial connects to hostport ("host:port") if the rules allow it, trying
// each checked address in turn. proto names the client's protocol in
// the log. A refusal is a *RefusedError, and is logged.
func (p *Proxy) dial(ctx context.Context, proto, hostport string) (net.Conn, error) {
	host, portText, err := net.SplitHostPort(hostport)
	if err != nil {
		return nil, &RefusedError{Host: hostport, Why: "it is not host:port"}
	}
	port, err := strconv.ParseUint(portText, 10, 16)
	if err != nil || port == 0 {
		return nil, &RefusedError{Host: hostport, Why: fmt.Sprintf("port %q is not a number from 1 to 65535", portText)}
	}
	addrs, err := p.check(ctx, host)
	if err != nil {
		if re := (*RefusedError)(nil); errors.As(err, &re) {
			p.log.Warn("egress refused", "proto", proto, "host", host, "port", port, "why", re.Why)
		} else {
			p.log.Warn("egress failed", "proto", proto, "host", host, "port", port, "err", err)
		}
		return nil, err
	}
	var last error
	for _, a := range addrs {
		d := net.Dialer{Timeout: p.set.dial, KeepAlive: p.set.keepAlive}
		c, err := d.DialContext(ctx, "tcp", netip.AddrPortFrom(a.Unmap(), uint16(port)).String())
		if err == nil {
			p.log.Debug("egress", "proto", proto, "host", host, "addr", c.RemoteAddr().String())
			return p.track(c)
		}
		last = err
	}
	p.log.Warn("egress failed", "proto", proto, "host", host, "port", port, "err", last)
	return nil, last
}
