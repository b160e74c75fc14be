// Package netguard classifies network addresses: which lead inside the
// machine or its network (loopback, private, link-local, cloud metadata,
// reserved) rather than to a public service. The Extism plugins' HTTP
// guard and run_command's egress proxy refuse such addresses unless the
// operator named them. It never resolves or dials anything.
package netguard

import "net/netip"

// reservedRange is a range of addresses and the name of its class.
type reservedRange struct {
	prefix netip.Prefix
	class  string
}

// reserved returns the ranges, beyond those netip.Addr's own predicates
// name, that lead inside a network rather than to a public service: a
// fresh slice each time, so that no caller can change what the next one
// is refused. Cloud metadata services live in them too: 169.254.169.254
// and fd00:ec2::254 (link-local, unique-local), 100.100.100.200 (CGNAT),
// 192.0.0.192 (IETF assignments).
func reserved() []reservedRange {
	return []reservedRange{
		{netip.MustParsePrefix("0.0.0.0/8"), "this network"}, // 0.0.0.0 reaches localhost
		{netip.MustParsePrefix("100.64.0.0/10"), "carrier-grade NAT"},
		{netip.MustParsePrefix("192.0.0.0/24"), "IETF protocol assignments"},
		{netip.MustParsePrefix("198.18.0.0/15"), "benchmarking"},
		{netip.MustParsePrefix("240.0.0.0/4"), "reserved"}, // and broadcast
		{netip.MustParsePrefix("fec0::/10"), "site-local"}, // deprecated, still routed by some
		{netip.MustParsePrefix("64:ff9b:1::/48"), "local-use NAT64"},
		{netip.MustParsePrefix("2001:db8::/32"), "documentation"},
		{netip.MustParsePrefix("100::/64"), "discard"},
		// IPv4-compatible (deprecated) and IPv4-translated forms: nothing
		// public answers there, and some stacks route them to the IPv4
		// address they embed.
		{netip.MustParsePrefix("::/96"), "IPv4-compatible"},
		{netip.MustParsePrefix("::ffff:0:0:0/96"), "IPv4-translated"},
	}
}

// Embedding prefixes whose IPv4 address a gateway dials: NAT64's
// well-known prefix and 6to4. The embedded address is classified.
func nat64() netip.Prefix  { return netip.MustParsePrefix("64:ff9b::/96") }
func sixTo4() netip.Prefix { return netip.MustParsePrefix("2002::/16") }

// Class names what kind of internal address a is ("loopback",
// "private", "link-local", ...), or "" for an address of the public
// internet. IPv4-mapped IPv6 addresses (::ffff:127.0.0.1) are classified
// as the IPv4 address they carry, and so are NAT64 and 6to4 addresses.
func Class(a netip.Addr) string {
	a = a.Unmap()
	switch {
	case !a.IsValid():
		return "invalid"
	case a.IsLoopback():
		return "loopback"
	case a.IsUnspecified():
		return "unspecified"
	case a.IsPrivate():
		return "private"
	case a.IsLinkLocalUnicast():
		return "link-local"
	case a.IsLinkLocalMulticast(), a.IsInterfaceLocalMulticast(), a.IsMulticast():
		return "multicast"
	}
	if a.Is6() {
		b := a.As16()
		switch {
		case nat64().Contains(a):
			if c := Class(netip.AddrFrom4([4]byte(b[12:16]))); c != "" {
				return c + " (through NAT64)"
			}
		case sixTo4().Contains(a):
			if c := Class(netip.AddrFrom4([4]byte(b[2:6]))); c != "" {
				return c + " (through 6to4)"
			}
		}
	}
	for _, r := range reserved() {
		if r.prefix.Contains(a) {
			return r.class
		}
	}
	return ""
}

// IsInternal tells an address inside the machine or its network: what a
// program granted some public hosts has no business dialing.
func IsInternal(a netip.Addr) bool { return Class(a) != "" }
