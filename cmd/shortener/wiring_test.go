package main

import (
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"reflect"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"shortener/cache"
	"shortener/sentinel"
	"shortener/trending"
)

// TestDefaultsSatisfyCache checks that parseConfig's defaults, the only
// ones there are, make a cache that cache.New accepts (it has none of its
// own and connects lazily, so no Redis is needed).
func TestDefaultsSatisfyCache(t *testing.T) {
	cfg, err := parseConfig(nil, envOf(map[string]string{"SHORTENER_NODE_ID": "1", "SHORTENER_MYSQL_DSN": testDSN}), io.Discard)
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
	cfg, err := parseConfig(nil, envOf(map[string]string{"SHORTENER_NODE_ID": "1", "SHORTENER_MYSQL_DSN": testDSN}), io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	r, err := trending.New(cfg.trendingConfig(), nil, time.Now, slog.New(slog.DiscardHandler), prometheus.NewRegistry())
	if err != nil {
		t.Fatalf("trending.New with the default configuration: %v", err)
	}
	r.Close()
}

// TestRedisSettingsReachBoth: the lookup path and the ranking reach the
// same Sentinel group with the same passwords and tuning, each read once
// from the environment (a password from its _FILE too).
func TestRedisSettingsReachBoth(t *testing.T) {
	file := filepath.Join(t.TempDir(), "sentinel-password")
	if err := os.WriteFile(file, []byte("s-secret\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg, err := parseConfig(nil, envOf(map[string]string{
		"SHORTENER_NODE_ID": "1", "SHORTENER_MYSQL_DSN": testDSN,
		"SHORTENER_REDIS_PASSWORD": "r-secret", "SHORTENER_SENTINEL_PASSWORD_FILE": file,
		"SHORTENER_REDIS_MASTER": "m", "SHORTENER_REDIS_SENTINELS": "127.0.0.1:1,127.0.0.1:2",
		"SHORTENER_REDIS_TIMEOUT": "20ms", "SHORTENER_REDIS_POOL": "7",
		"SHORTENER_BREAKER_FAILURES": "2", "SHORTENER_BREAKER_WINDOW": "4",
		"SHORTENER_BREAKER_DELAY": "3s", "SHORTENER_BREAKER_SUCCESSES": "1",
	}), io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	want := sentinel.Config{
		MasterName: "m", SentinelAddrs: []string{"127.0.0.1:1", "127.0.0.1:2"},
		Password: "r-secret", SentinelPassword: "s-secret",
		Timeout: 20 * time.Millisecond, PoolSize: 7,
		BreakerFailures: 2, BreakerWindow: 4, BreakerDelay: 3 * time.Second, BreakerSuccesses: 1,
	}
	for name, got := range map[string]sentinel.Config{"cache": cfg.cacheConfig().Redis, "trending": cfg.trendingConfig().Redis} {
		if !reflect.DeepEqual(got, want) {
			t.Errorf("%s: got %+v, want %+v", name, got, want)
		}
	}
}
