package handler_test

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"shortener"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"shortener/cache"
	"shortener/handler"
)

// oneLink is an origin with a single link.
type oneLink struct{ l shortener.Link }

func (o oneLink) Link(_ context.Context, code string) (shortener.Link, error) {
	if code != o.l.Code {
		return shortener.Link{}, shortener.ErrNotFound
	}
	return o.l, nil
}

func (o oneLink) Create(context.Context, shortener.Link) error { return nil }
func (o oneLink) CreateIdempotent(_ context.Context, l shortener.Link, _ shortener.Idempotency) (shortener.Link, bool, error) {
	return l, false, nil
}
func (o oneLink) Delete(context.Context, string, time.Time) error         { return nil }
func (o oneLink) Resolve(context.Context, string) (shortener.Link, error) { return o.l, nil }

// BenchmarkRedirectL1Hit measures a warm redirect through the whole
// handler with the real cache, answered from L1 (Redis is never asked).
func BenchmarkRedirectL1Hit(b *testing.B) {
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	cache.RouteLibraryLogs(log)
	origin := oneLink{shortener.Link{Code: "AbC123xyz", URL: "https://example.com/landing?utm=1", Redirect: 302}}
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
	benchRedirect(b, c, origin, log)
}

// BenchmarkRedirectBaseline is the same request with a resolver that
// answers from a struct field: the cost of Echo, the middleware and the
// recorder, against which the L1 path is read as a ratio.
func BenchmarkRedirectBaseline(b *testing.B) {
	origin := oneLink{shortener.Link{Code: "AbC123xyz", URL: "https://example.com/landing?utm=1", Redirect: 302}}
	benchRedirect(b, origin, origin, slog.New(slog.NewTextHandler(io.Discard, nil)))
}

func benchRedirect(b *testing.B, r handler.Resolver, links handler.Links, log *slog.Logger) {
	h, err := handler.New(handler.Config{BaseURL: "http://sho.rt", Instance: "bench", IdempotencyTTL: time.Hour}, handler.Deps{
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
