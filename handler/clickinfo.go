package handler

import (
	"bytes"
	"hash/maphash"
	"shortener"
	"strings"
	"sync/atomic"
)

// Recorder journals the clicks redirects produce. Record returns once the
// click is safe from a crash of this process (written to local disk); it
// never waits on a database, and it never fails a redirect: a click it
// cannot keep is dropped and counted by the Recorder.
type Recorder interface {
	Record(c shortener.Click)
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
