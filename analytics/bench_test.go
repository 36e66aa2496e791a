package analytics_test

import (
	"math/rand/v2"
	"net/netip"
	"strconv"
	"testing"
	"time"

	"shortener/analytics"
)

// benchAgents are the User-Agent headers of the benchmark's clicks: the
// mix of a day's traffic, browsers and bots.
var benchAgents = []string{
	"Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/131.0.0.0 Safari/537.36",
	"Mozilla/5.0 (iPhone; CPU iPhone OS 17_5 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/17.5 Mobile/15E148 Safari/604.1",
	"Mozilla/5.0 (Linux; Android 14; Pixel 8) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/131.0.6778.81 Mobile Safari/537.36",
	"Mozilla/5.0 (Macintosh; Intel Mac OS X 10_15_7) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/17.5 Safari/605.1.15",
	"Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/131.0.0.0 Safari/537.36 Edg/131.0.0.0",
	"Mozilla/5.0 (X11; Linux x86_64; rv:133.0) Gecko/20100101 Firefox/133.0",
	"Mozilla/5.0 (iPad; CPU OS 17_5 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/17.5 Mobile/15E148 Safari/604.1",
	"Mozilla/5.0 (Linux; Android 14; SAMSUNG SM-S918B) AppleWebKit/537.36 (KHTML, like Gecko) SamsungBrowser/26.0 Chrome/122.0.0.0 Mobile Safari/537.36",
	"Mozilla/5.0 (compatible; Googlebot/2.1; +http://www.google.com/bot.html)",
	"curl/8.5.0",
}

// BenchmarkEnrich measures a click's enrichment on the shipped database:
// hit is the steady state (agents cached, every country record decoded
// once), over random public IPv4 addresses and the agents above; parse
// is a new User-Agent string every click (a cache miss: the parser and
// a cache insert); off is the privacy switch.
func BenchmarkEnrich(b *testing.B) {
	at := time.Date(2026, 12, 5, 12, 0, 0, 0, time.UTC)
	r := rand.New(rand.NewPCG(1, 2))
	addrs := make([]netip.Addr, 4096)
	for i := range addrs {
		addrs[i] = netip.AddrFrom4([4]byte{byte(1 + r.IntN(222)), byte(r.Uint32()), byte(r.Uint32()), byte(r.Uint32())})
	}

	b.Run("hit", func(b *testing.B) {
		e := enricher(b, at)
		for i, a := range addrs { // warm: every agent parsed, every record decoded
			e.Enrich(a, benchAgents[i%len(benchAgents)], false, at)
		}
		b.ReportAllocs()
		for i := 0; b.Loop(); i++ {
			e.Enrich(addrs[i%len(addrs)], benchAgents[i%len(benchAgents)], i%len(benchAgents) >= 8, at)
		}
	})
	b.Run("parse", func(b *testing.B) {
		e := enricher(b, at)
		agents := make([]string, 100_000)
		for i := range agents {
			agents[i] = benchAgents[i%len(benchAgents)] + " build/" + strconv.Itoa(i)
		}
		b.ReportAllocs()
		for i := 0; b.Loop(); i++ {
			e.Enrich(addrs[i%len(addrs)], agents[i%len(agents)], false, at)
		}
	})
	b.Run("off", func(b *testing.B) {
		e, err := analytics.New(analytics.Config{}, nil, time.Now)
		if err != nil {
			b.Fatal(err)
		}
		defer e.Close()
		b.ReportAllocs()
		for i := 0; b.Loop(); i++ {
			e.Enrich(addrs[i%len(addrs)], benchAgents[i%len(benchAgents)], false, at)
		}
	})
}
