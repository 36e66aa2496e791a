package handler

import (
	"net/netip"
	"strconv"
	"strings"
)

// A link's host is compared as an address, not as text: browsers accept
// the same IPv4 address as 127.0.0.1, 2130706433, 0x7f.1, 0177.0.0.1 or
// 127.1, and the same IPv6 address in many spellings. These helpers turn
// every form a browser (the WHATWG URL standard) accepts into one
// netip.Addr, so the self, deny and local-address checks cannot be
// sidestepped by spelling.

// parseHostIP returns the address host names, if it is an IP literal in any
// form a browser accepts. isIP reports that host is meant as an address
// (its last label is numeric); ok reports that it parsed as one. A host
// meant as an address that does not parse (0x1g.1, 256.256.256.256.1) is
// no valid host at all.
func parseHostIP(host string) (addr netip.Addr, isIP, ok bool) {
	if strings.Contains(host, ":") { // IPv6; url.Hostname dropped the brackets
		a, err := netip.ParseAddr(host)
		if err != nil || a.Zone() != "" {
			return netip.Addr{}, true, false
		}
		return a.Unmap(), true, true
	}
	labels := strings.Split(host, ".")
	if len(labels) > 1 && labels[len(labels)-1] == "" { // one trailing dot
		labels = labels[:len(labels)-1]
	}
	if _, numeric := ipv4Number(labels[len(labels)-1]); !numeric {
		return netip.Addr{}, false, false
	}
	if len(labels) > 4 {
		return netip.Addr{}, true, false
	}
	var n uint64
	for i, l := range labels {
		v, ok := ipv4Number(l)
		if !ok {
			return netip.Addr{}, true, false
		}
		if i < len(labels)-1 {
			if v > 255 {
				return netip.Addr{}, true, false
			}
			n = n<<8 | v
			continue
		}
		// The last part fills the remaining bytes: 127.1 is 127.0.0.1.
		rest := uint(5 - len(labels))
		if v >= 1<<(8*rest) {
			return netip.Addr{}, true, false
		}
		n = n<<(8*rest) | v
	}
	return netip.AddrFrom4([4]byte{byte(n >> 24), byte(n >> 16), byte(n >> 8), byte(n)}), true, true
}

// ipv4Number parses one part of an IPv4 address as browsers do: 0x or 0X
// for hexadecimal, a leading 0 for octal, else decimal.
func ipv4Number(s string) (uint64, bool) {
	if s == "" {
		return 0, false
	}
	base := 10
	switch {
	case len(s) >= 2 && (s[:2] == "0x" || s[:2] == "0X"):
		s, base = s[2:], 16
		if s == "" {
			return 0, true // "0x" alone is zero
		}
	case len(s) >= 2 && s[0] == '0':
		s, base = s[1:], 8
	}
	v, err := strconv.ParseUint(s, base, 32)
	if err != nil {
		return 0, false
	}
	return v, true
}

// localAddr reports whether a link to a is a link into the machine or the
// network segment the shortener runs on: loopback, unspecified (0.0.0.0,
// which reaches loopback), or link-local (cloud metadata services live
// there).
func localAddr(a netip.Addr) bool {
	return a.IsLoopback() || a.IsUnspecified() || a.IsLinkLocalUnicast() || a.IsLinkLocalMulticast() || a.IsInterfaceLocalMulticast()
}

// localName reports whether a host name always means this machine:
// "localhost" and every name under it (RFC 6761).
func localName(host string) bool {
	return host == "localhost" || strings.HasSuffix(host, ".localhost")
}

// hostForm is a host as the policy compares it: an address, or a lower-case
// ASCII name without a trailing dot.
type hostForm struct {
	addr netip.Addr // valid for IP literals
	name string
}

// normHost returns the comparable form of a configured host name or
// address; ok is false for one that is neither.
func normHost(h string) (hostForm, bool) {
	h = strings.ToLower(strings.TrimSpace(h))
	h = strings.TrimSuffix(strings.TrimSuffix(h, "]"), ".")
	h = strings.TrimPrefix(h, "[")
	if h == "" {
		return hostForm{}, false
	}
	if a, isIP, ok := parseHostIP(h); isIP {
		return hostForm{addr: a}, ok
	}
	if a, err := idnaProfile.ToASCII(h); err == nil {
		h = a
	}
	return hostForm{name: h}, true
}

// matches reports whether host is f, or (for names, with subdomains) under
// it.
func (f hostForm) matches(host hostForm, subdomains bool) bool {
	if f.addr.IsValid() || host.addr.IsValid() {
		return f.addr == host.addr && f.addr.IsValid()
	}
	return host.name == f.name || (subdomains && strings.HasSuffix(host.name, "."+f.name))
}
