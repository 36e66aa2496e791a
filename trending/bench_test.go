package trending

import (
	"fmt"
	"shortener"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// BenchmarkTop is the endpoint's work in the ranking: a published answer
// of 128 links filtered for expiry and cut to 10. It is the same whether
// the answer came from Redis or from the local top-K, so an outage does
// not move it.
func BenchmarkTop(b *testing.B) {
	cfg := Config{
		Redis: offlineRedis(), Node: "bench", Prefix: "b:",
		Tick: 200 * time.Millisecond, Refresh: time.Second,
		Capacity: 1_000, MaxQueued: 1_000,
	}
	r, err := New(cfg, &links{}, time.Now, quietLog(), prometheus.NewRegistry())
	if err != nil {
		b.Fatal(err)
	}
	defer r.Close()
	var views [3]shortener.Trending
	for i := range views {
		views[i].Source = sourceLocal
		for j := range fetch {
			code := fmt.Sprintf("l%d", j)
			views[i].Links = append(views[i].Links, shortener.Trend{
				Link: shortener.Link{Code: code, URL: "https://example.com/" + code}, Clicks: int64(1000 - j)})
		}
	}
	r.pub.Store(&views)
	b.ReportAllocs()
	for b.Loop() {
		if t, _ := r.Top("5m", 10); len(t.Links) != 10 {
			b.Fatal(len(t.Links))
		}
	}
}
