package acl

import (
	"net/netip"
	"testing"
)

func TestAddrPatterns(t *testing.T) {
	for _, c := range []struct {
		pattern string
		in, out []string
	}{
		{"", nil, []string{"127.0.0.1", "::1"}},
		{"*", []string{"127.0.0.1", "::1", "10.1.2.3"}, nil},
		{"*.*.*.*", []string{"8.8.8.8"}, nil},
		{"127.0.0.1", []string{"127.0.0.1", "::ffff:127.0.0.1"}, []string{"127.0.0.2", "::1"}},
		{"::1", []string{"::1", "0:0:0:0:0:0:0:1"}, []string{"127.0.0.1"}},
		{"192.168.1.1,192.168.1.3", []string{"192.168.1.1", "192.168.1.3"}, []string{"192.168.1.2"}},
		{"192.168.1.{1,2,3}", []string{"192.168.1.1", "192.168.1.3"}, []string{"192.168.1.4", "192.168.2.1"}},
		{"1:2::{a,b}", []string{"1:2::a", "1:2:0:0:0:0:0:b"}, []string{"1:2::c"}},
		{"192.168.0.*", []string{"192.168.0.0", "192.168.0.255"}, []string{"192.168.1.1"}},
		{"192.168.*.*", []string{"192.168.7.9"}, []string{"192.169.0.1"}},
		{"192.*.*.*", []string{"192.0.0.1", "192.255.1.1"}, []string{"193.0.0.1"}},
		{"192.168.1.1-100", []string{"192.168.1.1", "192.168.1.100"}, []string{"192.168.1.0", "192.168.1.101", "192.168.2.50"}},
		// Java looks no further than the range part.
		{"192.168.1-5.7", []string{"192.168.1.7", "192.168.5.200"}, []string{"192.168.6.7"}},
		{"fe80::*", []string{"fe80::1", "fe80::ffff"}, []string{"fe80::1:1", "fe81::1"}},
		{"2::ac5:78:1-200:*", []string{"2::ac5:78:1:5", "2::ac5:78:200:0"}, []string{"2::ac5:78:201:0", "2::ac5:79:1:0"}},
	} {
		p, err := parseAddrPattern(c.pattern)
		if err != nil {
			t.Errorf("%q: %v", c.pattern, err)
			continue
		}
		for _, a := range c.in {
			if !p.match(netip.MustParseAddr(a).Unmap()) {
				t.Errorf("%q does not match %s", c.pattern, a)
			}
		}
		for _, a := range c.out {
			if p.match(netip.MustParseAddr(a).Unmap()) {
				t.Errorf("%q matches %s", c.pattern, a)
			}
		}
	}
	if (matchAll{}).match(netip.Addr{}) != true || (addrSet{}).match(netip.Addr{}) {
		t.Error("unknown remote address")
	}
	for _, bad := range []string{"192.168.1", "300.1.1.1", "*.1.1.1", "192.168.1.1-", "192.168.1.9-1",
		"192.168.1.{1,x}", "192.168.{1,2}.1", "192.168.1.1,nope", "192.168.*", "fe80:::*", "localhost"} {
		if _, err := parseAddrPattern(bad); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
}
