package handler

import (
	"math"
	"net"
	"net/http"
	"net/netip"
	"strconv"
	"strings"
	"time"

	"github.com/labstack/echo/v4"
	"github.com/maypok86/otter/v2"
	"golang.org/x/time/rate"
)

// Limiter keeps rate limits shared by every instance (in Redis), so a
// client's budget is the same however the load balancer spreads its
// requests. Neither method may wait on the shared store: no create waits
// on Redis.
type Limiter interface {
	// Refused reports whether the shared bucket named key has turned
	// requests down, and if so how long until it admits again.
	Refused(key string) (time.Duration, bool)
	// Take counts one admitted request against the bucket named key,
	// refilled at rate per second up to burst; the shared store's answer
	// shows in later Refused calls.
	Take(key string, rate float64, burst int)
}

// maxLocalBuckets bounds the per-instance limiter's memory: at most this
// many clients are tracked, the least used forgotten first (W-TinyLFU).
const maxLocalBuckets = 100_000

// localLimiter is the fallback used while the shared limiter cannot
// answer: a token bucket per key in a bounded cache, so a flood of
// distinct addresses cannot grow it without end.
type localLimiter struct {
	buckets *otter.Cache[string, *rate.Limiter]
}

func newLocalLimiter(size int) *localLimiter {
	return &localLimiter{buckets: otter.Must(&otter.Options[string, *rate.Limiter]{
		MaximumSize:      size,
		ExpiryCalculator: otter.ExpiryAccessing[string, *rate.Limiter](10 * time.Minute),
	})}
}

func (l *localLimiter) allow(key string, r float64, burst int) (bool, time.Duration) {
	b, _ := l.buckets.Compute(key, func(old *rate.Limiter, found bool) (*rate.Limiter, otter.ComputeOp) {
		if found {
			return old, otter.CancelOp
		}
		return rate.NewLimiter(rate.Limit(r), burst), otter.WriteOp
	})
	res := b.Reserve()
	if d := res.Delay(); d > 0 {
		res.Cancel()
		return false, d
	}
	return true, 0
}

// createLimit limits link creation: per API key for keyed requests
// (KeyCreateRate), per client address for anonymous ones (CreateRate).
// A request must pass this instance's own bucket and must not be refused
// by the shared one (the Limiter), which learns of every admitted request
// off the request's path; so a client gets at most one burst per instance
// before the shared budget holds it to the rate over all of them, and
// while the shared store cannot answer each instance limits on its own.
// Over the limit is 429 with Retry-After.
func (h *Handler) createLimit() echo.MiddlewareFunc {
	local := newLocalLimiter(maxLocalBuckets)
	return func(next echo.HandlerFunc) echo.HandlerFunc {
		return func(c echo.Context) error {
			caller := callerOf(c)
			key, r, burst, who := "addr:"+clientKey(c.RealIP()), h.cfg.CreateRate, h.cfg.CreateBurst, "this address"
			if caller.Keyed() {
				key, r, burst, who = "key:"+caller.Owner, h.cfg.KeyCreateRate, h.cfg.KeyCreateBurst, "this API key"
			}
			if r <= 0 {
				return next(c)
			}
			wait, refused := time.Duration(0), false
			if h.d.Limiter != nil {
				wait, refused = h.d.Limiter.Refused(key)
			}
			if !refused {
				var ok bool
				if ok, wait = local.allow(key, r, burst); ok {
					if h.d.Limiter != nil {
						h.d.Limiter.Take(key, r, burst)
					}
					return next(c)
				}
			}
			retry := strconv.Itoa(max(1, int(math.Ceil(wait.Seconds()))))
			c.Response().Header().Set("Retry-After", retry)
			return &Error{Code: CodeRateLimited, Message: "too many links created by " + who + "; retry after " + retry + " s"}
		}
	}
}

// ParseProxies reads a comma-separated list of addresses and CIDR
// prefixes (the trusted proxies).
func ParseProxies(list []string) ([]netip.Prefix, error) {
	var out []netip.Prefix
	for _, s := range list {
		s = strings.TrimSpace(s)
		if s == "" {
			continue
		}
		if p, err := netip.ParsePrefix(s); err == nil {
			out = append(out, p.Masked())
			continue
		}
		a, err := netip.ParseAddr(s)
		if err != nil {
			return nil, err
		}
		out = append(out, netip.PrefixFrom(a.Unmap(), a.Unmap().BitLen()))
	}
	return out, nil
}

// clientKey is what a per-address limit counts by: the address, or for
// IPv6 its /64. One subscriber or host gets a whole /64 and picks any
// address in it at will, so a limit per address would be 2^64 budgets.
func clientKey(ip string) string {
	a, err := netip.ParseAddr(ip)
	if err != nil || !a.Is6() || a.Is4In6() {
		return ip
	}
	p, _ := a.Prefix(64)
	return p.String()
}

// proxies are the peers whose headers about a request are believed: its
// client's address (X-Real-IP) and its name and time (X-Click-Id). Any
// process on the machine, or any pod, can reach the app's port, so
// loopback or a private address alone proves nothing; with none
// configured, the peer is the client and no such header is believed.
type proxies []netip.Prefix

// peer parses r's peer address; ok is false if it is not an IP address.
func peer(r *http.Request) (netip.Addr, string, bool) {
	host, _, err := net.SplitHostPort(r.RemoteAddr)
	if err != nil {
		host = r.RemoteAddr
	}
	a, err := netip.ParseAddr(host)
	if err != nil {
		return netip.Addr{}, host, false
	}
	return a.Unmap(), host, true
}

// trusts reports whether r came from one of the proxies.
func (ps proxies) trusts(r *http.Request) bool {
	if len(ps) == 0 {
		return false
	}
	a, _, ok := peer(r)
	if !ok {
		return false
	}
	for _, p := range ps {
		if p.Contains(a) {
			return true
		}
	}
	return false
}

// realIP is the client address: the peer's, unless the peer is one of the
// proxies, whose X-Real-IP is then believed.
func (ps proxies) realIP(r *http.Request) string {
	a, host, ok := peer(r)
	if !ok {
		return host
	}
	if ps.trusts(r) {
		if c, err := netip.ParseAddr(strings.TrimSpace(r.Header.Get("X-Real-IP"))); err == nil {
			return c.Unmap().String()
		}
	}
	return a.String()
}
