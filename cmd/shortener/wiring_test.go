package main

import (
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"shortener/cache"
	"shortener/trending"
)

// TestDefaultsSatisfyCache checks that parseConfig's defaults, the only
// ones there are, make a cache that cache.New accepts (it has none of its
// own and connects lazily, so no Redis is needed).
func TestDefaultsSatisfyCache(t *testing.T) {
	cfg, err := parseConfig(nil, envOf(map[string]string{"SHORTENER_NODE_ID": "1", "SHORTENER_MYSQL_DSN": "d"}), io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	c, err := cache.New(cfg.cacheConfig(), nil, nil, slog.New(slog.DiscardHandler), prometheus.NewRegistry())
	if err != nil {
		t.Fatalf("cache.New with the default configuration: %v", err)
	}
	c.Close()
}

// TestDefaultsSatisfyTrending does the same for the ranking.
func TestDefaultsSatisfyTrending(t *testing.T) {
	cfg, err := parseConfig(nil, envOf(map[string]string{"SHORTENER_NODE_ID": "1", "SHORTENER_MYSQL_DSN": "d"}), io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	r, err := trending.New(cfg.trendingConfig(), nil, time.Now, slog.New(slog.DiscardHandler), prometheus.NewRegistry())
	if err != nil {
		t.Fatalf("trending.New with the default configuration: %v", err)
	}
	r.Close()
}
