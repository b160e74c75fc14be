package egress

import (
	"fmt"
	"net/netip"
	"strings"
)

// Rules say which hosts a command may reach through the proxy: the
// operator's [tools.run_command] allowed_domains and denied_domains.
// Each entry is a host name ("api.example.com"), a pattern
// ("*.example.com": every name ending in ".example.com", at any depth,
// not example.com itself) or a literal IP address. Case and a trailing
// dot do not matter. A host matching Denied is refused even when Allowed
// matches it too; an empty Allowed allows nothing.
//
// A host at an internal address (loopback, private, link-local,
// unique-local, CGNAT, multicast, unspecified, cloud metadata; see
// netguard) is refused unless Allowed lists that very name or address,
// not a pattern covering it: "127.0.0.1" lets a command reach a server
// the user runs on 127.0.0.1, "*" or "*.internal" never does.
type Rules struct {
	Allowed []string
	Denied  []string
}

// CheckDomain tells whether pattern is a valid entry of allowed_domains
// or denied_domains, with an error that says what is wrong and what to
// write instead. The configuration calls it for each entry, naming the
// key around it.
func CheckDomain(pattern string) error {
	_, err := normalizePattern(pattern)
	return err
}

// ParseRules checks every entry of allowed and denied and returns the
// rules with each entry in its canonical form (lower case, no trailing
// dot, IPv6 addresses in their shortest form), so that a host can be
// compared with them as a string.
func ParseRules(allowed, denied []string) (Rules, error) {
	var r Rules
	var err error
	if r.Allowed, err = normalizeList("allowed_domains", allowed); err != nil {
		return Rules{}, err
	}
	if r.Denied, err = normalizeList("denied_domains", denied); err != nil {
		return Rules{}, err
	}
	return r, nil
}

func normalizeList(key string, patterns []string) ([]string, error) {
	out := make([]string, 0, len(patterns))
	for i, p := range patterns {
		n, err := normalizePattern(p)
		if err != nil {
			return nil, fmt.Errorf("[tools.run_command] %s[%d]: %w", key, i, err)
		}
		out = append(out, n)
	}
	return out, nil
}

// maxName is the longest DNS name, without its trailing dot.
const maxName = 253

// normalizePattern checks one entry and returns its canonical form.
func normalizePattern(pattern string) (string, error) {
	if strings.TrimSpace(pattern) != pattern {
		return "", fmt.Errorf("%q has spaces around it; write the host name alone", pattern)
	}
	p := strings.ToLower(pattern)
	if a, ok := parseAddr(p); ok {
		if a.Zone() != "" {
			return "", fmt.Errorf("%q has an IPv6 zone; write the address without %%zone", pattern)
		}
		return a.String(), nil
	}
	p = strings.TrimSuffix(p, ".")
	switch {
	case p == "":
		return "", fmt.Errorf("%q is empty; write a host name such as api.example.com or a pattern such as *.example.com", pattern)
	case p == "*" || p == "*.":
		return "", fmt.Errorf("%q would match every host; list the domains a command needs (pattern *.example.com), or set network = \"on\" to give commands the host's whole network", pattern)
	case strings.ContainsAny(p, "/@?#"):
		return "", fmt.Errorf("%q is not a host name or pattern; write api.example.com or *.example.com, without a scheme, port, path or user", pattern)
	case strings.ContainsAny(p, "[]"):
		return "", fmt.Errorf("%q is not an IP address (a bracket without its pair, or text around the brackets); write the address alone, e.g. ::1 or [::1]", pattern)
	case hasPort(p):
		return "", fmt.Errorf("%q has a port; the proxy allows any port of a listed host, so write the host alone, without a scheme, port, path or user", pattern)
	case strings.Contains(p, ":"):
		return "", fmt.Errorf("%q is neither an IP address nor a host name; write the address as ::1 or the name as api.example.com", pattern)
	}
	name := p
	if rest, ok := strings.CutPrefix(p, "*."); ok {
		name = rest
	}
	if strings.Contains(name, "*") {
		return "", fmt.Errorf("%q has a * that is not the whole first label; the only pattern is *.example.com (every name under example.com)", pattern)
	}
	if len(name) > maxName {
		return "", fmt.Errorf("%q is longer than a DNS name can be (%d characters)", pattern, maxName)
	}
	for label := range strings.SplitSeq(name, ".") {
		if err := checkLabel(label); err != nil {
			return "", fmt.Errorf("%q is not a host name: %w", pattern, err)
		}
	}
	if name != p {
		if _, ok := parseAddr(name); ok || looksNumeric(name) {
			return "", fmt.Errorf("%q puts a pattern on an IP address; list the address itself", pattern)
		}
	}
	return p, nil
}

// hasPort tells a host name followed by a port ("example.com:443").
func hasPort(p string) bool {
	host, port, ok := strings.Cut(p, ":")
	return ok && host != "" && port != "" && strings.Trim(port, "0123456789") == "" && !strings.Contains(host, ":")
}

// checkLabel accepts what resolvers accept in practice: letters, digits,
// hyphens and underscores (_dmarc, service names), 1 to 63 of them.
func checkLabel(label string) error {
	if label == "" {
		return fmt.Errorf("it has an empty label (two dots in a row, or a leading dot)")
	}
	if len(label) > 63 {
		return fmt.Errorf("label %q is longer than 63 characters", label)
	}
	for _, c := range label {
		if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '-' || c == '_') {
			return fmt.Errorf("label %q has the character %q; host names hold only letters, digits, - and _", label, c)
		}
	}
	return nil
}

// looksNumeric tells a dotted run of digits ("1.2.3"), which a resolver
// may read as an IPv4 address in one of its short forms.
func looksNumeric(name string) bool {
	for label := range strings.SplitSeq(name, ".") {
		if strings.Trim(label, "0123456789") != "" {
			return false
		}
	}
	return true
}

// parseAddr reads a literal IP address, bracketed or not ("[::1]").
func parseAddr(s string) (netip.Addr, bool) {
	if b, ok := strings.CutPrefix(s, "["); ok {
		if b, ok = strings.CutSuffix(b, "]"); ok {
			s = b
		}
	}
	a, err := netip.ParseAddr(s)
	return a, err == nil
}

// canonicalHost is a requested host in the form entries are kept in,
// or "" when it cannot name a host at all. Names are not checked
// further: one that no entry matches is refused anyway.
func canonicalHost(host string) string {
	h := strings.ToLower(host)
	if a, ok := parseAddr(h); ok {
		if a.Zone() != "" {
			// A zone ("fe80::1%eth0") picks an interface; it is never
			// listed, and could otherwise smuggle text past a pattern.
			return ""
		}
		return a.String()
	}
	h = strings.TrimSuffix(h, ".")
	if h == "" || strings.ContainsAny(h, "%/:@ *") {
		return ""
	}
	return h
}

// match tells whether host (canonical) matches pattern (canonical).
func match(pattern, host string) bool {
	if suffix, ok := strings.CutPrefix(pattern, "*"); ok {
		// "*.example.com" matches "a.example.com" and "a.b.example.com",
		// never "example.com" or "badexample.com".
		return len(host) > len(suffix) && strings.HasSuffix(host, suffix)
	}
	return pattern == host
}

// matchAny returns the first entry of patterns matching host, or "".
func matchAny(patterns []string, host string) string {
	for _, p := range patterns {
		if match(p, host) {
			return p
		}
	}
	return ""
}

// listedExactly tells whether allowed names host itself, not through a
// pattern: what lets it be reached at an internal address.
func listedExactly(allowed []string, host string) bool {
	for _, p := range allowed {
		if p == host {
			return true
		}
	}
	return false
}
