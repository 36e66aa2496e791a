package main

import (
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"shortener"
	"shortener/cache"
	"shortener/handler"
	"shortener/handler/handlertest"
)

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
	origin := handlertest.OneLink{L: shortener.Link{Code: "AbC123xyz", URL: "https://example.com/landing?utm=1", Redirect: 302}}
	c := handlertest.Cache(b, origin, log)
	h, err := handler.New(handler.Config{BaseURL: "http://sho.rt", Instance: "bench", IdempotencyTTL: time.Hour,
		ReferrerPolicy: "strict-origin-when-cross-origin", PermanentMaxAge: time.Hour},
		handler.Deps{Resolver: c, Links: origin, Log: log})
	if err != nil {
		b.Fatal(err)
	}
	off, on := handlertest.Ratio(b, h, newHTTPMetrics(prometheus.NewRegistry()).wrap(h), httptest.NewRequest(http.MethodGet, "/AbC123xyz", nil))
	b.ReportMetric(on-off, "wrapper-ns/redirect")
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
