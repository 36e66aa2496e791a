// Package handlertest holds what handler's redirect-path benchmarks
// share: an origin with one link, the real cache answering it from L1,
// and the paired timing of two handlers that their ratios are read from.
package handlertest

import (
	"context"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"slices"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"shortener"
	"shortener/cache"
	"shortener/sentinel"
)

// OneLink is an origin (and a Links store) with a single link.
type OneLink struct{ L shortener.Link }

func (o OneLink) Link(_ context.Context, code string) (shortener.Link, error) {
	if code != o.L.Code {
		return shortener.Link{}, shortener.ErrNotFound
	}
	return o.L, nil
}

func (o OneLink) Create(context.Context, shortener.Link) error { return nil }
func (o OneLink) CreateIdempotent(_ context.Context, l shortener.Link, _ shortener.Idempotency) (shortener.Link, bool, error) {
	return l, false, nil
}
func (o OneLink) Delete(context.Context, string, time.Time) error         { return nil }
func (o OneLink) Resolve(context.Context, string) (shortener.Link, error) { return o.L, nil }

// Cache is the real cache over origin with Redis unreachable: once a
// lookup has filled it, L1 answers. It closes when tb ends.
func Cache(tb testing.TB, origin OneLink, log *slog.Logger) *cache.Cache {
	c, err := cache.New(cache.Config{
		Redis: sentinel.Config{
			MasterName: "shortener", SentinelAddrs: []string{"127.0.0.1:1"},
			Timeout: 50 * time.Millisecond, PoolSize: 4,
			BreakerFailures: 5, BreakerWindow: 10, BreakerDelay: time.Second, BreakerSuccesses: 3,
		},
		TTL:    time.Hour,
		L1Size: 1000, L1Bytes: 1 << 20, L1TTL: time.Hour, L1UnsyncedTTL: 5 * time.Second, L1NegativeTTL: time.Second,
		ReplayInterval: time.Second, InvalidationGrace: 3 * time.Second,
	}, origin, nil, log, prometheus.NewRegistry())
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { c.Close() })
	return c
}

// Ratio times req through off and on in one run, block by block, the
// first of the two alternating, and reports each one's ns per redirect
// and the median of the blocks' on/off ratios: what else the machine does
// falls on both alike. It returns the ns per redirect of off and on.
// Every answer must be a 302.
func Ratio(b *testing.B, off, on http.Handler, req *http.Request) (offNs, onNs float64) {
	hs := [2]http.Handler{off, on}
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
	serve(off, 1) // a cache behind it fills
	serve(on, 1)
	const block = 64
	var ratios []float64
	var spent [2]time.Duration
	b.ReportAllocs()
	n := 0
	for b.Loop() {
		// One iteration is one redirect on each handler; a block of them
		// is timed at once.
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
		return 0, 0
	}
	slices.Sort(ratios)
	blocks := float64(len(ratios) * block)
	offNs, onNs = float64(spent[0].Nanoseconds())/blocks, float64(spent[1].Nanoseconds())/blocks
	b.ReportMetric(offNs, "off-ns/redirect")
	b.ReportMetric(onNs, "on-ns/redirect")
	b.ReportMetric(ratios[len(ratios)/2], "on/off-median")
	return offNs, onNs
}
