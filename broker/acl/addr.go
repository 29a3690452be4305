package acl

import (
	"errors"
	"fmt"
	"net/netip"
	"slices"
	"strconv"
	"strings"
)

// addrPattern is a whiteRemoteAddress or globalWhiteRemoteAddresses entry, in the forms
// of Java's RemoteAddressStrategyFactory:
//
//	""                                  matches nothing
//	*  *.*.*.*  *:*:*:*:*:*:*:*         matches everything
//	192.168.1.1  ::1                    one address
//	192.168.1.1,192.168.1.2             a list
//	192.168.1.{1,2,3}  1:2::{a,b}       a list sharing a head
//	192.168.*.*  192.168.1.1-100        a range in one part
type addrPattern interface {
	match(ip netip.Addr) bool
}

type matchNone struct{}

func (matchNone) match(netip.Addr) bool { return false }

type matchAll struct{}

func (matchAll) match(netip.Addr) bool { return true }

type addrSet map[netip.Addr]bool

func (s addrSet) match(ip netip.Addr) bool { return s[ip] }

// addrRange matches addresses whose parts (IPv4 octets or IPv6 groups) start with head
// and whose next part lies in lo..hi. Later parts are not looked at, as in Java, so
// 192.168.1-5.7 is 192.168.1-5.*.
type addrRange struct {
	v6     bool
	head   []int
	lo, hi int
}

func (r addrRange) match(ip netip.Addr) bool {
	if !ip.IsValid() || ip.Is6() != r.v6 {
		return false
	}
	parts := addrParts(ip)
	for i, h := range r.head {
		if parts[i] != h {
			return false
		}
	}
	p := parts[len(r.head)]
	return p >= r.lo && p <= r.hi
}

// addrParts returns the 4 octets of an IPv4 or the 8 groups of an IPv6 address.
func addrParts(ip netip.Addr) []int {
	var parts []int
	if ip.Is4() {
		for _, b := range ip.As4() {
			parts = append(parts, int(b))
		}
		return parts
	}
	b := ip.As16()
	for i := 0; i < 16; i += 2 {
		parts = append(parts, int(b[i])<<8|int(b[i+1]))
	}
	return parts
}

func parseAddrPattern(s string) (addrPattern, error) {
	s = strings.TrimSpace(s)
	switch {
	case s == "":
		return matchNone{}, nil
	case s == "*" || s == "*.*.*.*" || s == "*:*:*:*:*:*:*:*":
		return matchAll{}, nil
	case strings.HasSuffix(s, "}"):
		open := strings.LastIndexByte(s, '{')
		if open <= 0 || (s[open-1] != '.' && s[open-1] != ':') {
			return nil, fmt.Errorf("address pattern %q: the {...} list must be the last part", s)
		}
		var list []string
		for _, tail := range splitNonEmpty(s[open+1:len(s)-1], ',') {
			list = append(list, s[:open]+strings.TrimSpace(tail))
		}
		return parseAddrSet(list)
	case strings.Contains(s, ","):
		return parseAddrSet(splitNonEmpty(s, ','))
	case strings.ContainsAny(s, "*-"):
		return parseAddrRange(s)
	}
	return parseAddrSet([]string{s})
}

func parseAddrSet(list []string) (addrSet, error) {
	set := addrSet{}
	for _, a := range list {
		ip, err := netip.ParseAddr(strings.TrimSpace(a))
		if err != nil || ip.Zone() != "" {
			return nil, fmt.Errorf("address pattern: %q is not an IP address", a)
		}
		set[ip.Unmap()] = true
	}
	return set, nil
}

func parseAddrRange(s string) (addrRange, error) {
	bad := func(why string) (addrRange, error) {
		return addrRange{}, fmt.Errorf("address pattern %q: %s", s, why)
	}
	sep, base, top, size := ".", 10, 255, 4
	if strings.Contains(s, ":") {
		sep, base, top, size = ":", 16, 0xffff, 8
	}
	wild := strings.IndexAny(s, "*-")
	cut := strings.LastIndex(s[:wild], sep)
	if cut <= 0 {
		return bad("the first part cannot be a range")
	}
	tail := strings.Split(s[cut+1:], sep)
	head, err := headParts(s[:cut], sep, size-len(tail), base, top)
	if err != nil {
		return bad(err.Error())
	}
	r := addrRange{v6: sep == ":", head: head, lo: 0, hi: top}
	if part := strings.TrimSpace(tail[0]); part != "*" {
		lo, hi, ok := strings.Cut(part, "-")
		r.lo, err = parsePart(lo, base, top)
		if err == nil && ok {
			r.hi, err = parsePart(hi, base, top)
		}
		if err != nil || !ok || r.lo > r.hi {
			return bad(fmt.Sprintf("%q is not * or a range low-high", part))
		}
	}
	return r, nil
}

// headParts parses the literal parts before a range into n numbers; an IPv6 head may
// hold "::", which stands for as many zero groups as needed.
func headParts(head, sep string, n, base, top int) ([]int, error) {
	if sep == ":" && strings.HasSuffix(head, ":") {
		head += ":" // "1::*" was cut after "1:"
	}
	if strings.Contains(head, ":::") || strings.Count(head, "::") > 1 {
		return nil, errors.New(`"::" in the wrong place`)
	}
	left, right, compressed := head, "", false
	if sep == ":" {
		left, right, compressed = strings.Cut(head, "::")
	}
	l, r := splitNonEmpty(left, sep[0]), splitNonEmpty(right, sep[0])
	if compressed {
		for len(l)+len(r) < n {
			l = append(l, "0")
		}
	}
	all := slices.Concat(l, r)
	if len(all) != n {
		return nil, errors.New("wrong number of parts")
	}
	out := make([]int, n)
	for i, p := range all {
		v, err := parsePart(p, base, top)
		if err != nil {
			return nil, err
		}
		out[i] = v
	}
	return out, nil
}

func parsePart(p string, base, top int) (int, error) {
	v, err := strconv.ParseUint(strings.TrimSpace(p), base, 32)
	if err != nil || int(v) > top {
		return 0, fmt.Errorf("%q is not an address part", p)
	}
	return int(v), nil
}

// splitNonEmpty splits like Java's StringUtils.split: no empty pieces.
func splitNonEmpty(s string, sep byte) []string {
	return strings.FieldsFunc(s, func(r rune) bool { return r == rune(sep) })
}
