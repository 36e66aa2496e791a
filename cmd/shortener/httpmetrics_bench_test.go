package main

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"slices"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"shortener"
	"shortener/cache"
	"shortener/handler"
)

// benchOrigin is an origin with a single link.
type benchOrigin struct{ l shortener.Link }

func (o benchOrigin) Link(_ context.Context, code string) (shortener.Link, error) {
	if code != o.l.Code {
		return shortener.Link{}, shortener.ErrNotFound
	}
	return o.l, nil
}

func (o benchOrigin) Create(context.Context, shortener.Link) error { return nil }
func (o benchOrigin) CreateIdempotent(_ context.Context, l shortener.Link, _ shortener.Idempotency) (shortener.Link, bool, error) {
	return l, false, nil
}
func (o benchOrigin) Delete(context.Context, string, time.Time) error         { return nil }
func (o benchOrigin) Resolve(context.Context, string) (shortener.Link, error) { return o.l, nil }

// BenchmarkHTTPMetricsRatio times a warm redirect (the real handler over
// the real cache, answered from L1) with the HTTP metrics wrapper and
// without it, in one run, alternating which goes first block by block, and
// reports the median of the blocks' on/off ratios (a busy machine slows
// both alike) and the wrapper's cost in ns per redirect.
//
//	go test -run '^$' -bench BenchmarkHTTPMetricsRatio -benchtime 2s -count 5 ./cmd/shortener
func BenchmarkHTTPMetricsRatio(b *testing.B) {
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	cache.RouteLibraryLogs(log)
	origin := benchOrigin{shortener.Link{Code: "AbC123xyz", URL: "https://example.com/landing?utm=1", Redirect: 302}}
	c, err := cache.New(cache.Config{
		MasterName: "shortener", SentinelAddrs: []string{"127.0.0.1:1"}, // unreachable: L1 must answer
		Timeout: 50 * time.Millisecond, PoolSize: 4, TTL: time.Hour,
		L1Size: 1000, L1TTL: time.Hour, L1NegativeTTL: time.Second,
		BreakerFailures: 5, BreakerWindow: 10, BreakerDelay: time.Second, BreakerSuccesses: 3,
		ReplayInterval: time.Second, InvalidationGrace: 3 * time.Second,
	}, origin, nil, log, prometheus.NewRegistry())
	if err != nil {
		b.Fatal(err)
	}
	defer c.Close()
	h, err := handler.New(handler.Config{BaseURL: "http://sho.rt", Instance: "bench", IdempotencyTTL: time.Hour,
		ReferrerPolicy: "strict-origin-when-cross-origin", PermanentMaxAge: time.Hour},
		handler.Deps{Resolver: c, Links: origin, Log: log})
	if err != nil {
		b.Fatal(err)
	}
	hs := [2]http.Handler{h, newHTTPMetrics(prometheus.NewRegistry()).wrap(h)} // off, on
	req := httptest.NewRequest(http.MethodGet, "/AbC123xyz", nil)
	serve := func(h http.Handler, n int) time.Duration {
		start := time.Now()
		for range n {
			w := httptest.NewRecorder()
			h.ServeHTTP(w, req)
			if w.Code != http.StatusFound {
				b.Fatalf("got %d", w.Code)
			}
		}
		return time.Since(start)
	}
	serve(hs[0], 1) // warm L1
	const block = 64
	var ratios []float64
	var spent [2]time.Duration
	b.ReportAllocs()
	n := 0
	for b.Loop() {
		// One iteration is one redirect on each handler; a block of them
		// is timed at once, the first handler alternating.
		if n++; n%block != 0 {
			continue
		}
		var d [2]time.Duration
		first := (n / block) % 2
		d[first] = serve(hs[first], block)
		d[1-first] = serve(hs[1-first], block)
		spent[0] += d[0]
		spent[1] += d[1]
		ratios = append(ratios, float64(d[1])/float64(d[0]))
	}
	if len(ratios) == 0 {
		return
	}
	slices.Sort(ratios)
	blocks := float64(len(ratios) * block)
	b.ReportMetric(float64(spent[0].Nanoseconds())/blocks, "off-ns/redirect")
	b.ReportMetric(float64(spent[1].Nanoseconds())/blocks, "on-ns/redirect")
	b.ReportMetric(float64((spent[1]-spent[0]).Nanoseconds())/blocks, "wrapper-ns/redirect")
	b.ReportMetric(ratios[len(ratios)/2], "on/off-median")
}

// BenchmarkHTTPMetricsWrap is the wrapper alone around a handler that
// only writes a 302, serially and from 16 goroutines per core (the
// counters are shared): its own cost, without the handler's.
func BenchmarkHTTPMetricsWrap(b *testing.B) {
	h := newHTTPMetrics(prometheus.NewRegistry()).wrap(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.WriteHeader(http.StatusFound)
	}))
	b.Run("serial", func(b *testing.B) {
		req := httptest.NewRequest(http.MethodGet, "/AbC123xyz", nil)
		w := httptest.NewRecorder()
		b.ReportAllocs()
		for b.Loop() {
			h.ServeHTTP(w, req)
		}
	})
	b.Run("parallel", func(b *testing.B) {
		b.ReportAllocs()
		b.SetParallelism(16)
		b.RunParallel(func(pb *testing.PB) {
			req := httptest.NewRequest(http.MethodGet, "/AbC123xyz", nil)
			w := httptest.NewRecorder()
			for pb.Next() {
				h.ServeHTTP(w, req)
			}
		})
	})
}
