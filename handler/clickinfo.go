package handler

import (
	"bytes"
	"context"
	"encoding/hex"
	"hash/maphash"
	"net/netip"
	"strings"
	"sync/atomic"
	"time"

	"shortener"
	"shortener/analytics"
)

// Recorder journals the clicks redirects produce. Record returns once the
// click is safe from a crash of this process (written to local disk); it
// never waits on a database, and it never fails a redirect: a click it
// cannot keep is dropped and counted by the Recorder.
type Recorder interface {
	Record(c shortener.Click)
}

// Analyzer derives a click's analytics dimensions (analytics.Enricher):
// never on the network, never failing, cheap for an agent seen before.
type Analyzer interface {
	Enrich(addr netip.Addr, userAgent string, bot bool, at time.Time) analytics.Dims
}

// Visits grants the visits of links with a maximum (visits.Limiter):
// nil, shortener.ErrExhausted once the link has had them all (410), or
// an error wrapping shortener.ErrUnavailable (503, retry).
type Visits interface {
	Take(ctx context.Context, l shortener.Link) error
}

// referrerHost returns the host of a Referer header, lower case, without
// port or user info: "" when there is none or it has no host. Only the
// host is kept: the full referrer can carry a person's search terms or
// session tokens. A host with characters no host name has is "invalid",
// so junk cannot fill the referrer table.
func referrerHost(ref string) string {
	if ref == "" {
		return ""
	}
	i := strings.Index(ref, "://")
	if i < 0 {
		return ""
	}
	h := ref[i+3:]
	if j := strings.IndexAny(h, "/?#"); j >= 0 {
		h = h[:j]
	}
	if j := strings.LastIndexByte(h, '@'); j >= 0 {
		h = h[j+1:]
	}
	if strings.HasPrefix(h, "[") { // IPv6 literal
		if j := strings.IndexByte(h, ']'); j >= 0 {
			h = h[:j+1]
		}
	} else if j := strings.LastIndexByte(h, ':'); j >= 0 {
		h = h[:j]
	}
	h = strings.TrimSuffix(h, ".")
	if h == "" {
		return ""
	}
	if len(h) > 253 {
		return "invalid"
	}
	upper := false
	for k := 0; k < len(h); k++ {
		b := h[k]
		switch {
		case 'a' <= b && b <= 'z', '0' <= b && b <= '9', b == '-', b == '.', b == '[', b == ']', b == ':', b == '_':
		case 'A' <= b && b <= 'Z':
			upper = true
		default:
			return "invalid"
		}
	}
	if upper {
		h = strings.ToLower(h)
	}
	return h
}

// botMarkers are substrings of User-Agent headers (lower case) that mark
// a client as not a person's browser: crawlers, link-preview fetchers,
// monitors, command-line tools and HTTP libraries. A short list, tested:
// it catches the agents that make most automated traffic, at the cost of
// a few substring searches per redirect. "bot" alone covers Googlebot,
// bingbot, Twitterbot, Slackbot, Discordbot, TelegramBot, Applebot,
// AhrefsBot, YandexBot and many more.
var botMarkers = [][]byte{
	[]byte("bot"), []byte("crawl"), []byte("spider"), []byte("slurp"), []byte("facebookexternalhit"), []byte("preview"),
	[]byte("monitor"), []byte("headless"), []byte("curl/"), []byte("wget/"), []byte("python-"), []byte("go-http-client"),
	[]byte("java/"), []byte("okhttp"), []byte("libwww"), []byte("httpclient"), []byte("axios/"), []byte("node-fetch"),
	[]byte("scrapy"), []byte("phantomjs"), []byte("lighthouse"), []byte("pingdom"), []byte("uptime"), []byte("whatsapp"),
}

// agentClass classifies a User-Agent: a bot if it is empty or names an
// automated client, a browser otherwise. The header is lower-cased into a
// stack buffer once, then searched with bytes.Contains (vectorised), so a
// typical browser header costs a few hundred nanoseconds and no
// allocation.
func agentClass(ua string) shortener.Agent {
	if ua == "" {
		return shortener.AgentBot
	}
	var buf [512]byte
	b := buf[:0]
	if len(ua) > len(buf) {
		ua = ua[:len(buf)]
	}
	for i := 0; i < len(ua); i++ {
		c := ua[i]
		if 'A' <= c && c <= 'Z' {
			c += 'a' - 'A'
		}
		b = append(b, c)
	}
	for _, m := range botMarkers {
		if bytes.Contains(b, m) {
			return shortener.AgentBot
		}
	}
	return shortener.AgentBrowser
}

// agentCache remembers the class of recently seen User-Agent headers: a
// few hundred browser builds make most of a site's traffic, and a hit
// (one hash, one string compare) is several times cheaper than searching
// the markers. Direct-mapped and lock-free: a collision just replaces the
// entry.
type agentCache struct {
	seed    maphash.Seed
	entries [512]atomic.Pointer[agentEntry]
}

type agentEntry struct {
	ua    string
	agent shortener.Agent
}

func newAgentCache() *agentCache { return &agentCache{seed: maphash.MakeSeed()} }

// class is agentClass(ua), remembered.
func (c *agentCache) class(ua string) shortener.Agent {
	if len(ua) > 512 {
		return agentClass(ua)
	}
	slot := &c.entries[maphash.String(c.seed, ua)%uint64(len(c.entries))]
	if e := slot.Load(); e != nil && e.ua == ua {
		return e.agent
	}
	a := agentClass(ua)
	// A copy: the header's string lives in the request's buffers.
	slot.Store(&agentEntry{ua: strings.Clone(ua), agent: a})
	return a
}

// clickIDHeader carries the proxy's name for a request, "$msec-$request_id"
// in nginx's terms (nginx/nginx.conf.tmpl): when nginx passed the request
// on (Unix seconds with milliseconds) and its random 128-bit ID, both the
// same on every upstream nginx tries for one client request. Only nginx
// sets it: it overwrites whatever a client sent. A redirect nginx retried
// on a second instance after the first had journaled it is then two
// clicks with one request, counted once (store.ShipClicks). In canonical
// form, so the header map is indexed without canonicalising.
const clickIDHeader = "X-Click-Id"

// clickRequest parses the X-Click-Id header's values: the zero
// ClickRequest (the click is counted as a click of its own) when there is
// none, more than one, or it is malformed.
func clickRequest(vs []string) shortener.ClickRequest {
	if len(vs) != 1 {
		return shortener.ClickRequest{}
	}
	v := vs[0]
	// seconds "." milliseconds "-" 32 hex digits
	dash := strings.IndexByte(v, '-')
	if dash < 0 || len(v)-dash-1 != 32 {
		return shortener.ClickRequest{}
	}
	var r shortener.ClickRequest
	sec, ms, dot := int64(0), int64(0), false
	digits := 0
	for i := 0; i < dash; i++ {
		switch b := v[i]; {
		case b == '.' && !dot:
			dot, digits = true, 0
		case '0' <= b && b <= '9' && !dot && digits < 12:
			sec, digits = sec*10+int64(b-'0'), digits+1
		case '0' <= b && b <= '9' && dot && digits < 3:
			ms, digits = ms*10+int64(b-'0'), digits+1
		default:
			return shortener.ClickRequest{}
		}
	}
	if !dot || digits != 3 || sec == 0 {
		return shortener.ClickRequest{}
	}
	if _, err := hex.Decode(r.ID[:], []byte(v[dash+1:])); err != nil {
		return shortener.ClickRequest{}
	}
	r.At = sec*1000 + ms
	if !r.Known() {
		return shortener.ClickRequest{}
	}
	return r
}
