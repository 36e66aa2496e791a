package analytics

import (
	"crypto/sha256"
	"strings"
	"sync/atomic"

	"github.com/maypok86/otter/v2"
	useragent "github.com/medama-io/go-useragent"
	"github.com/medama-io/go-useragent/agents"
)

// maxCachedAgent bounds the User-Agent strings kept in the cache. Real
// browsers send 100 to 400 bytes (in-app browsers up to about 600); a
// longer header is parsed on every click rather than kept, so that junk
// headers cannot fill the cache's memory (its bound is in entries).
const maxCachedAgent = 1024

// agentEntry is what the cache keeps per User-Agent string: the parsed
// agent, and a digest of the string for the visitor hash, so that a
// cache hit hashes 64 bytes however long the header.
type agentEntry struct {
	agent  Agent
	digest [16]byte
}

// agents parses User-Agent headers through a cache: W-TinyLFU (otter,
// as the lookup path's L1), because a few hundred strings make most of
// the traffic and a scan of one-off strings (bots, junk) must not evict
// them; its reads take no lock, which matters with every redirect
// reading it.
type agentCache struct {
	p      *useragent.Parser
	c      *otter.Cache[string, agentEntry]
	parses atomic.Uint64 // cache misses: headers parsed
}

func newAgentCache(size int) (*agentCache, error) {
	c, err := otter.New(&otter.Options[string, agentEntry]{MaximumSize: size})
	if err != nil {
		return nil, err
	}
	// NewParser builds the parser's trie once per process and shares it
	// (the trie is only read): 0.4 s of start-up here, on a loaded
	// machine, paid by the first New.
	return &agentCache{p: useragent.NewParser(), c: c}, nil
}

// lookup returns ua's entry, parsing it on a miss.
func (a *agentCache) lookup(ua string) agentEntry {
	if e, ok := a.c.GetIfPresent(ua); ok {
		return e
	}
	a.parses.Add(1)
	e := agentEntry{agent: parseAgent(a.p, ua)}
	sum := sha256.Sum256([]byte(ua))
	copy(e.digest[:], sum[:])
	if len(ua) <= maxCachedAgent {
		// A copy, so the cache does not pin whatever the header's
		// string was cut from.
		a.c.Set(strings.Clone(ua), e)
	}
	return e
}

func (a *agentCache) close() { a.c.StopAllGoroutines() }

// parseAgent maps the parser's answer onto this package's lists. The
// parser calls every Android device without "Mobile" a phone; Android
// tablets' browsers leave "Mobile" out (Chrome, Samsung Internet, Silk)
// or say "Tablet" (Firefox), so those are made tablets here. Its own bot
// verdict is not used: bots are the redirect's verdict (Enrich's bot), so
// that the device counts agree with the clicks' bot counts.
func parseAgent(p *useragent.Parser, ua string) Agent {
	u := p.Parse(ua)
	a := Agent{Browser: browserOf(u.Browser()), OS: osOf(u.OS())}
	switch u.Device() {
	case agents.DeviceMobile:
		a.Device = DeviceMobile
		if a.OS == OSAndroid && (!strings.Contains(ua, "Mobile") || strings.Contains(ua, "Tablet")) {
			a.Device = DeviceTablet
		}
	case agents.DeviceTablet:
		a.Device = DeviceTablet
	default: // desktop, TV, bot, unknown
		a.Device = DeviceDesktop
	}
	return a
}

func browserOf(b agents.Browser) Browser {
	switch b {
	case agents.BrowserChrome:
		return BrowserChrome
	case agents.BrowserFirefox:
		return BrowserFirefox
	case agents.BrowserSafari:
		return BrowserSafari
	case agents.BrowserEdge:
		return BrowserEdge
	case agents.BrowserOpera, agents.BrowserOperaMini:
		return BrowserOpera
	case agents.BrowserSamsung:
		return BrowserSamsungInternet
	case agents.BrowserYandex:
		return BrowserYandex
	case agents.BrowserVivaldi:
		return BrowserVivaldi
	case agents.BrowserIE:
		return BrowserIE
	case agents.BrowserHuawei:
		return BrowserHuawei
	case agents.BrowserSilk:
		return BrowserSilk
	}
	return BrowserOther
}

func osOf(o agents.OS) OS {
	switch o {
	case agents.OSWindows:
		return OSWindows
	case agents.OSMacOS:
		return OSMacOS
	case agents.OSLinux:
		return OSLinux
	case agents.OSAndroid:
		return OSAndroid
	case agents.OSIOS:
		return OSIOS
	case agents.OSChromeOS:
		return OSChromeOS
	}
	return OSOther
}
