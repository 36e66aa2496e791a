package handler_test

import (
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"shortener"
	"testing"
	"time"

	"shortener/cache"
	"shortener/clicks"
	"shortener/handler"
	"shortener/internal/handlertest"
)

// oneLink is an origin with a single link.
type oneLink = handlertest.OneLink

// BenchmarkRedirectL1Hit measures a warm redirect through the whole
// handler with the real cache, answered from L1 (Redis is never asked).
func BenchmarkRedirectL1Hit(b *testing.B) {
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	cache.RouteLibraryLogs(log)
	origin := oneLink{L: shortener.Link{Code: "AbC123xyz", URL: "https://example.com/landing?utm=1", Redirect: 302}}
	c := handlertest.Cache(b, origin, log)
	benchRedirect(b, c, origin, log)
}

// BenchmarkRedirectBaseline is the same request with a resolver that
// answers from a struct field: the cost of Echo, the middleware and the
// recorder, against which the L1 path is read as a ratio.
func BenchmarkRedirectBaseline(b *testing.B) {
	origin := oneLink{L: shortener.Link{Code: "AbC123xyz", URL: "https://example.com/landing?utm=1", Redirect: 302}}
	benchRedirect(b, origin, origin, slog.New(slog.NewTextHandler(io.Discard, nil)))
}

// BenchmarkRedirectPages compares, in one run, the warm redirect of the
// handler with the web pages (pages=on, as cmd/shortener runs it) and
// without them (pages=off, the handler as it was before the pages
// existed), over the real cache answering from L1. The pages add routes
// beside /{code}, no middleware on it, so the two should match:
//
//	go test -run '^$' -bench 'BenchmarkRedirectPages' -benchtime 2s -count 6 ./handler
func BenchmarkRedirectPages(b *testing.B) {
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	cache.RouteLibraryLogs(log)
	origin := oneLink{L: shortener.Link{Code: "AbC123xyz", URL: "https://example.com/landing?utm=1", Redirect: 302}}
	c := handlertest.Cache(b, origin, log)
	for _, pages := range []bool{false, true} {
		name := "pages=off"
		if pages {
			name = "pages=on"
		}
		b.Run(name, func(b *testing.B) { benchRedirectWith(b, c, origin, log, pages) })
	}
}

// BenchmarkRedirectPagesRatio times the same warm redirect through a
// handler with the pages and one without, in one run, alternating which
// goes first, block by block; each block's ratio (on/off) is kept and the
// median reported, so that what else the machine does falls on both
// alike. 1.00 is "as fast as before the pages existed". Two codes: one
// that shares no prefix with a page route, and one that walks down
// Echo's tree along /stats/ and /static/ before it falls back to /:code
// (the worst case the new routes can make).
//
//	go test -run '^$' -bench BenchmarkRedirectPagesRatio -benchtime 2s -count 5 ./handler
func BenchmarkRedirectPagesRatio(b *testing.B) {
	for _, code := range []string{"AbC123xyz", "stats1xyZ"} {
		b.Run("code="+code, func(b *testing.B) {
			log := slog.New(slog.NewTextHandler(io.Discard, nil))
			cache.RouteLibraryLogs(log)
			origin := oneLink{L: shortener.Link{Code: code, URL: "https://example.com/landing?utm=1", Redirect: 302}}
			c := handlertest.Cache(b, origin, log)
			var hs [2]http.Handler // off, on
			for i, pages := range []bool{false, true} {
				h, err := handler.New(handler.Config{BaseURL: "http://sho.rt", Instance: "bench", IdempotencyTTL: time.Hour, ReferrerPolicy: "strict-origin-when-cross-origin", PermanentMaxAge: time.Hour, Pages: pages},
					handler.Deps{Resolver: c, Links: origin, Log: log})
				if err != nil {
					b.Fatal(err)
				}
				hs[i] = h
			}
			handlertest.Ratio(b, hs[0], hs[1], httptest.NewRequest(http.MethodGet, "/"+code, nil))
		})
	}
}

func benchRedirect(b *testing.B, r handler.Resolver, links handler.Links, log *slog.Logger) {
	benchRedirectWith(b, r, links, log, false)
}

func benchRedirectWith(b *testing.B, r handler.Resolver, links handler.Links, log *slog.Logger, pages bool) {
	h, err := handler.New(handler.Config{BaseURL: "http://sho.rt", Instance: "bench", IdempotencyTTL: time.Hour, ReferrerPolicy: "strict-origin-when-cross-origin", PermanentMaxAge: time.Hour, Pages: pages}, handler.Deps{
		Resolver: r, Links: links, Log: log,
	})
	if err != nil {
		b.Fatal(err)
	}
	req := httptest.NewRequest(http.MethodGet, "/AbC123xyz", nil)
	w := httptest.NewRecorder()
	h.ServeHTTP(w, req) // warm L1
	if w.Code != http.StatusFound {
		b.Fatalf("warm-up: %d", w.Code)
	}
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		w := httptest.NewRecorder()
		h.ServeHTTP(w, req)
		if w.Code != http.StatusFound {
			b.Fatalf("got %d", w.Code)
		}
	}
}

// BenchmarkRedirectCounting measures a warm redirect with counting off
// and on (a real journal in a temporary directory), serially and with 16
// concurrent requests per core as a server sees them. Read on/off as a
// ratio from one run: the cost of counting. Serial is the worst case for
// the journal: no two requests overlap, so each click is its own write.
func BenchmarkRedirectCounting(b *testing.B) {
	origin := oneLink{L: shortener.Link{ID: 42, Code: "AbC123xyz", URL: "https://example.com/landing?utm=1", Redirect: 302}}
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	run := func(b *testing.B, rec handler.Recorder, parallel bool) {
		h, err := handler.New(handler.Config{BaseURL: "http://sho.rt", Instance: "bench", IdempotencyTTL: time.Hour, ReferrerPolicy: "strict-origin-when-cross-origin", PermanentMaxAge: time.Hour, TrustedProxies: nginxPeer}, handler.Deps{
			Resolver: origin, Links: origin, Clicks: rec, Log: log,
		})
		if err != nil {
			b.Fatal(err)
		}
		req := func() *http.Request {
			r := httptest.NewRequest(http.MethodGet, "/AbC123xyz", nil)
			r.Header.Set("User-Agent", "Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/131.0.0.0 Safari/537.36")
			r.Header.Set("Referer", "https://news.example.com/story?id=1")
			now := time.Now()
			r.Header.Set("X-Click-Id", fmt.Sprintf("%d.%03d-5f0c1d2e3f405162738495a6b7c8d9ea", now.Unix(), now.Nanosecond()/1e6))
			return r
		}
		b.ReportAllocs()
		b.ResetTimer()
		if !parallel {
			r := req()
			for b.Loop() {
				w := httptest.NewRecorder()
				h.ServeHTTP(w, r)
				if w.Code != http.StatusFound {
					b.Fatalf("got %d", w.Code)
				}
			}
			return
		}
		b.SetParallelism(16)
		b.RunParallel(func(pb *testing.PB) {
			r := req()
			for pb.Next() {
				w := httptest.NewRecorder()
				h.ServeHTTP(w, r)
				if w.Code != http.StatusFound {
					b.Errorf("got %d", w.Code)
					return
				}
			}
		})
	}
	journal := func(b *testing.B) *clicks.Journal {
		j, err := clicks.Open(clicks.Config{Dir: b.TempDir(), NodeID: 1, MaxBytes: 1 << 40, SegmentBytes: 64 << 20, SyncInterval: time.Second, MaxRequestAge: 30 * time.Second}, nil, log, nil)
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { j.Close() })
		return j
	}
	for _, parallel := range []bool{false, true} {
		mode := "serial"
		if parallel {
			mode = "parallel"
		}
		b.Run(mode+"/off", func(b *testing.B) { run(b, nil, parallel) })
		b.Run(mode+"/on", func(b *testing.B) { run(b, journal(b), parallel) })
	}
}

// BenchmarkRedirectCountingRatio times the same warm redirect (a browser
// User-Agent and a Referer) through a handler with click counting on (a
// real journal in a temporary directory) and one with it off, alternating
// which goes first block by block in one run, and reports the median of
// the blocks' on/off ratios: a busy machine slows both alike.
//
// Two resolvers: resolver=l1 is the real cache answering from L1 (a warm
// redirect as the apps serve most of them), resolver=none a struct field
// (no lookup at all: the smallest redirect the handler can make, so the
// ratio is counting's share of Echo, routing and the response alone). The
// request carries nginx's X-Click-Id, as every redirect through nginx
// does.
//
//	go test -run '^$' -bench BenchmarkRedirectCountingRatio -benchtime 3s -count 3 ./handler
func BenchmarkRedirectCountingRatio(b *testing.B) {
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	cache.RouteLibraryLogs(log)
	origin := oneLink{L: shortener.Link{ID: 42, Code: "AbC123xyz", URL: "https://example.com/landing?utm=1", Redirect: 302}}
	b.Run("resolver=l1", func(b *testing.B) { benchCountingRatio(b, handlertest.Cache(b, origin, log), origin, log) })
	b.Run("resolver=none", func(b *testing.B) { benchCountingRatio(b, origin, origin, log) })
}

func benchCountingRatio(b *testing.B, res handler.Resolver, origin oneLink, log *slog.Logger) {
	j, err := clicks.Open(clicks.Config{Dir: b.TempDir(), NodeID: 1, MaxBytes: 1 << 40, SegmentBytes: 16 << 20, SyncInterval: time.Second, MaxRequestAge: 30 * time.Second}, nil, log, nil)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { j.Close() })
	var hs [2]http.Handler // off, on
	for i, rec := range []handler.Recorder{nil, j} {
		h, err := handler.New(handler.Config{BaseURL: "http://sho.rt", Instance: "bench", IdempotencyTTL: time.Hour, ReferrerPolicy: "strict-origin-when-cross-origin", PermanentMaxAge: time.Hour, TrustedProxies: nginxPeer},
			handler.Deps{Resolver: res, Links: origin, Clicks: rec, Log: log})
		if err != nil {
			b.Fatal(err)
		}
		hs[i] = h
	}
	req := httptest.NewRequest(http.MethodGet, "/AbC123xyz", nil)
	req.Header.Set("User-Agent", "Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/131.0.0.0 Safari/537.36")
	req.Header.Set("Referer", "https://news.example.com/story?id=1")
	now := time.Now()
	req.Header.Set("X-Click-Id", fmt.Sprintf("%d.%03d-5f0c1d2e3f405162738495a6b7c8d9ea", now.Unix(), now.Nanosecond()/1e6))
	handlertest.Ratio(b, hs[0], hs[1], req)
}

// nginxPeer trusts httptest's peer address as the proxy, so the
// benchmarks' X-Click-Id is believed, as nginx's is in production.
var nginxPeer = []netip.Prefix{netip.MustParsePrefix("192.0.2.1/32")}
