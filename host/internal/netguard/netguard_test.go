package netguard

import (
	"net/netip"
	"testing"
)

// TestClass covers each internal range, the IPv4-mapped and embedded
// forms that reach them, and public addresses.
func TestClass(t *testing.T) {
	for _, tc := range []struct {
		addr, class string
	}{
		{"127.0.0.1", "loopback"},
		{"127.8.9.10", "loopback"},
		{"::1", "loopback"},
		{"::ffff:127.0.0.1", "loopback"},
		{"0.0.0.0", "unspecified"},
		{"::", "unspecified"},
		{"0.1.2.3", "this network"},
		{"10.1.2.3", "private"},
		{"172.16.0.1", "private"},
		{"192.168.1.1", "private"},
		{"::ffff:192.168.1.1", "private"},
		{"fd00:ec2::254", "private"},
		{"169.254.169.254", "link-local"},
		{"fe80::1", "link-local"},
		{"100.100.100.200", "carrier-grade NAT"},
		{"192.0.0.192", "IETF protocol assignments"},
		{"224.0.0.1", "multicast"},
		{"ff02::1", "multicast"},
		{"255.255.255.255", "reserved"},
		{"::127.0.0.1", "IPv4-compatible"},
		{"::ffff:0:7f00:1", "IPv4-translated"},
		{"64:ff9b::7f00:1", "loopback (through NAT64)"},
		{"64:ff9b::a9fe:a9fe", "link-local (through NAT64)"},
		{"2002:7f00:1::1", "loopback (through 6to4)"},
		{"2001:db8::1", "documentation"},
		{"1.1.1.1", ""},
		{"93.184.216.34", ""},
		{"::ffff:1.1.1.1", ""},
		{"64:ff9b::101:101", ""},
		{"2606:4700:4700::1111", ""},
	} {
		a := netip.MustParseAddr(tc.addr)
		if got := Class(a); got != tc.class {
			t.Errorf("Class(%s) = %q, want %q", tc.addr, got, tc.class)
		}
		if got := IsInternal(a); got != (tc.class != "") {
			t.Errorf("IsInternal(%s) = %v", tc.addr, got)
		}
	}
	if Class(netip.Addr{}) == "" {
		t.Error("the zero Addr is public")
	}
}

// The reserved ranges are no package state: a
// caller changing the list it got does not change what Class refuses.
func TestReservedIsNotShared(t *testing.T) {
	r := reserved()
	for i := range r {
		r[i].prefix = netip.MustParsePrefix("0.0.0.0/32")
	}
	if got := Class(netip.MustParseAddr("100.100.100.200")); got != "carrier-grade NAT" {
		t.Errorf("after changing a copy, Class(100.100.100.200) = %q", got)
	}
}
