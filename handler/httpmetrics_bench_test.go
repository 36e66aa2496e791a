package handler_test

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
	"shortener/internal/handlertest"
)

// BenchmarkHTTPMetricsRatio times a warm redirect (the real handler over
// the real cache, answered from L1) with the HTTP metrics wrapper and
// without them, in one run, alternating which goes first block by block, and
// reports the median of the blocks' on/off ratios (a busy machine slows
// both alike) and the wrapper's cost in ns per redirect.
//
//	go test -run '^$' -bench BenchmarkHTTPMetricsRatio -benchtime 2s -count 5 ./handler
func BenchmarkHTTPMetricsRatio(b *testing.B) {
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	cache.RouteLibraryLogs(log)
	origin := handlertest.OneLink{L: shortener.Link{Code: "AbC123xyz", URL: "https://example.com/landing?utm=1", Redirect: 302}}
	c := handlertest.Cache(b, origin, log)
	cfg := handler.Config{BaseURL: "http://sho.rt", Instance: "bench", IdempotencyTTL: time.Hour,
		ReferrerPolicy: "strict-origin-when-cross-origin", PermanentMaxAge: time.Hour}
	off, err := handler.New(cfg, handler.Deps{Resolver: c, Links: origin, Log: log})
	if err != nil {
		b.Fatal(err)
	}
	on, err := handler.New(cfg, handler.Deps{Resolver: c, Links: origin, Log: log, Registry: prometheus.NewRegistry()})
	if err != nil {
		b.Fatal(err)
	}
	offNs, onNs := handlertest.Ratio(b, off, on, httptest.NewRequest(http.MethodGet, "/AbC123xyz", nil))
	b.ReportMetric(onNs-offNs, "metrics-ns/redirect")
}
