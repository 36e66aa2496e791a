package webhook

import (
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"syscall"
	"time"
)

// A webhook is a request the shortener makes to a URL a client chose:
// pointed inside the shortener's own network it would be a way to reach
// what only the servers can (server-side request forgery). So it goes to
// public addresses only, checked twice: by the API on the URL as given
// (an address literal, a localhost name: handler, through Targets), and
// here, on every address a connection is about to be made to, after name
// resolution, so that a name that resolves to a public address when the
// webhook is made and to an internal one later (DNS rebinding) is still
// refused. Requests go through no proxy, whose address is not the
// receiver's, and follow no redirect.

// Targets decides which addresses webhooks may be sent to.
type Targets struct {
	// AllowPrivate lets them go to any address, loopback and private
	// ones included: for tests and development, whose receivers run on
	// 127.0.0.1.
	AllowPrivate bool
}

// notPublic are address ranges no webhook goes to besides those netip
// names (loopback, private, link-local, multicast, unspecified): "this
// network", shared address space (carrier-grade NAT, cloud internals),
// IETF protocol assignments, benchmarking, and the reserved block with
// the broadcast address.
var notPublic = []netip.Prefix{
	netip.MustParsePrefix("0.0.0.0/8"),
	netip.MustParsePrefix("100.64.0.0/10"),
	netip.MustParsePrefix("192.0.0.0/24"),
	netip.MustParsePrefix("198.18.0.0/15"),
	netip.MustParsePrefix("240.0.0.0/4"),
}

// Allows reports whether a webhook may be sent to a.
func (t Targets) Allows(a netip.Addr) bool {
	if t.AllowPrivate {
		return true
	}
	a = a.Unmap()
	if !a.IsValid() || a.IsLoopback() || a.IsPrivate() || a.IsUnspecified() || a.IsLinkLocalUnicast() ||
		a.IsLinkLocalMulticast() || a.IsInterfaceLocalMulticast() || a.IsMulticast() {
		return false
	}
	for _, p := range notPublic {
		if p.Contains(a) {
			return false
		}
	}
	return true
}

// errBlocked means a connection was refused by Targets.
var errBlocked = errors.New("webhook: receiver address not allowed")

// control is a net.Dialer's Control: it runs once the address to connect
// to is known, resolved, and refuses one Targets does not allow.
func (t Targets) control(network, address string, _ syscall.RawConn) error {
	ap, err := netip.ParseAddrPort(address)
	if err != nil {
		return fmt.Errorf("%w: %s %q", errBlocked, network, address)
	}
	if !t.Allows(ap.Addr()) {
		return fmt.Errorf("%w: %s", errBlocked, ap.Addr())
	}
	return nil
}

// client returns the HTTP client deliveries are sent with: connections
// only to addresses t allows, no proxy, no redirect followed (a 3xx is
// a failed attempt), each request bounded by timeout, at most conns
// connections per receiver.
func (t Targets) client(timeout time.Duration, conns int) *http.Client {
	d := &net.Dialer{Timeout: timeout, KeepAlive: 30 * time.Second, Control: t.control}
	return &http.Client{
		Timeout: timeout,
		Transport: &http.Transport{
			Proxy:                 nil,
			DialContext:           d.DialContext,
			ForceAttemptHTTP2:     true,
			TLSHandshakeTimeout:   timeout,
			ResponseHeaderTimeout: timeout,
			MaxIdleConns:          4 * conns,
			MaxIdleConnsPerHost:   conns,
			MaxConnsPerHost:       conns,
			IdleConnTimeout:       90 * time.Second,
		},
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}
}
