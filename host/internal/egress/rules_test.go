package egress

import (
	"strings"
	"testing"
)

// TestCheckDomain: the entries the configuration accepts, in their
// canonical form, and those it refuses with a message naming the entry
// and what to write.
func TestCheckDomain(t *testing.T) {
	for _, tc := range []struct {
		in, want string // want: the canonical form, or a part of the error
		ok       bool
	}{
		{"api.example.com", "api.example.com", true},
		{"API.Example.COM.", "api.example.com", true},
		{"*.example.com", "*.example.com", true},
		{"*.Example.com.", "*.example.com", true},
		{"_dmarc.example.com", "_dmarc.example.com", true},
		{"localhost", "localhost", true},
		{"127.0.0.1", "127.0.0.1", true},
		{"::1", "::1", true},
		{"[::1]", "::1", true},
		{"0:0::1", "::1", true},
		{"::FFFF:127.0.0.1", "::ffff:127.0.0.1", true},
		{"", "is empty", false},
		{".", "is empty", false},
		{"*", "would match every host", false},
		{"https://example.com", "without a scheme, port, path or user", false},
		{"example.com:443", "has a port; the proxy allows any port", false},
		{"[::1", "a bracket without its pair", false},
		{"::1]", "a bracket without its pair", false},
		{"[::1]:443", "a bracket without its pair", false},
		{"1::2::3", "neither an IP address nor a host name", false},
		{"example.com:", "neither an IP address nor a host name", false},
		{"example.com/x", "without a scheme, port, path or user", false},
		{"user@example.com", "without a scheme, port, path or user", false},
		{" example.com", "spaces around it", false},
		{"exa mple.com", "host names hold only letters", false},
		{"a..com", "empty label", false},
		{"*.*.example.com", "not the whole first label", false},
		{"api*.example.com", "not the whole first label", false},
		{"*example.com", "not the whole first label", false},
		{"*.0.0.1", "pattern on an IP address", false},
		{"fe80::1%eth0", "IPv6 zone", false},
		{strings.Repeat("a", 64) + ".com", "longer than 63", false},
		{strings.Repeat("abcdefghi.", 26) + "com", "longer than a DNS name", false},
	} {
		got, err := normalizePattern(tc.in)
		switch {
		case tc.ok && (err != nil || got != tc.want):
			t.Errorf("%q: got %q, %v; want %q", tc.in, got, err, tc.want)
		case !tc.ok && (err == nil || !strings.Contains(err.Error(), tc.want)):
			t.Errorf("%q: got %q, %v; want an error with %q", tc.in, got, err, tc.want)
		case !tc.ok && !strings.Contains(err.Error(), strings.TrimSpace(tc.in)):
			t.Errorf("%q: the error does not name the entry: %v", tc.in, err)
		}
		if (CheckDomain(tc.in) == nil) != tc.ok {
			t.Errorf("CheckDomain(%q) disagrees with normalizePattern", tc.in)
		}
	}
}

// TestParseRules: an error names the key and the index of the bad
// entry; good entries come back canonical.
func TestParseRules(t *testing.T) {
	r, err := ParseRules([]string{"A.example.com.", "*.B.example.com"}, []string{"[::1]"})
	if err != nil {
		t.Fatal(err)
	}
	if strings.Join(r.Allowed, ",") != "a.example.com,*.b.example.com" || strings.Join(r.Denied, ",") != "::1" {
		t.Fatalf("got %+v", r)
	}
	_, err = ParseRules([]string{"ok.example.com"}, []string{"good.example.com", "http://bad"})
	if err == nil || !strings.Contains(err.Error(), "[tools.run_command] denied_domains[1]") || !strings.Contains(err.Error(), `"http://bad"`) {
		t.Fatalf("got %v", err)
	}
}

// TestMatch: a pattern matches names under its domain at any depth, not
// the domain itself nor a name that merely ends with the same letters.
func TestMatch(t *testing.T) {
	for _, tc := range []struct {
		pattern, host string
		want          bool
	}{
		{"example.com", "example.com", true},
		{"example.com", "a.example.com", false},
		{"*.example.com", "a.example.com", true},
		{"*.example.com", "a.b.example.com", true},
		{"*.example.com", "example.com", false},
		{"*.example.com", "badexample.com", false},
		{"*.example.com", ".example.com", false},
		{"127.0.0.1", "127.0.0.1", true},
	} {
		if got := match(tc.pattern, tc.host); got != tc.want {
			t.Errorf("match(%q, %q) = %v", tc.pattern, tc.host, got)
		}
	}
	for _, h := range []string{"", "a b", "a/b", "x.example.com:80", "fe80::1%lo", "*.example.com", "a@b"} {
		if c := canonicalHost(h); c != "" {
			t.Errorf("canonicalHost(%q) = %q, want none", h, c)
		}
	}
}
