package sentinel

import (
	"errors"
	"io"
	"log/slog"
	"os"
	"strings"
	"testing"
	"time"

	"shortener"
)

func TestMain(m *testing.M) {
	// go-redis logs every refused dial; the tests against a closed port
	// make them on purpose.
	RouteLibraryLogs(quietLog())
	os.Exit(m.Run())
}

func quietLog() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

// testConfig is a complete Config, the production values of cmd/shortener
// but for the Sentinel address (a closed port), changed by each mod.
func testConfig(mods ...func(*Config)) Config {
	cfg := Config{
		MasterName: "shortener", SentinelAddrs: []string{"127.0.0.1:1"},
		Timeout: 50 * time.Millisecond, PoolSize: 32,
		BreakerFailures: 5, BreakerWindow: 10, BreakerDelay: time.Second, BreakerSuccesses: 3,
	}
	for _, mod := range mods {
		mod(&cfg)
	}
	return cfg
}

func TestConfigValidate(t *testing.T) {
	if err := testConfig().Validate(); err != nil {
		t.Fatalf("complete config: got %v, want nil", err)
	}
	tests := []struct {
		name  string
		mod   func(*Config)
		field string // the field named
		want  string // in the message
	}{
		{"no sentinels", func(c *Config) { c.SentinelAddrs = nil }, "SentinelAddrs", "are required"},
		{"no master name", func(c *Config) { c.MasterName = "" }, "MasterName", "is required"},
		{"zero timeout", func(c *Config) { c.Timeout = 0 }, "Timeout", "must be positive, got 0s"},
		{"negative timeout", func(c *Config) { c.Timeout = -time.Second }, "Timeout", "must be positive, got -1s"},
		{"zero pool", func(c *Config) { c.PoolSize = 0 }, "PoolSize", "must be positive, got 0"},
		{"zero breaker delay", func(c *Config) { c.BreakerDelay = 0 }, "BreakerDelay", "must be positive"},
		{"no failures", func(c *Config) { c.BreakerFailures = 0 }, "BreakerFailures", "at least 1, got 0"},
		{"window below failures", func(c *Config) { c.BreakerWindow = 4 }, "BreakerWindow", "at least the breaker failures (5), got 4"},
		{"no successes", func(c *Config) { c.BreakerSuccesses = 0 }, "BreakerSuccesses", "at least 1, got 0"},
	}
	for _, tt := range tests {
		err := testConfig(tt.mod).Validate()
		var se *shortener.SettingError
		if !errors.As(err, &se) || se.Field != tt.field || !strings.Contains(se.Problem, tt.want) {
			t.Errorf("%s: got error %v, want %s %s", tt.name, err, tt.field, tt.want)
		}
	}
	// Every problem is named at once, not the first only.
	err := testConfig(func(c *Config) { c.Timeout, c.PoolSize = 0, 0 }).Validate()
	if err == nil || !strings.Contains(err.Error(), "Timeout") || !strings.Contains(err.Error(), "PoolSize") {
		t.Errorf("two problems: got %v, want both named", err)
	}
}
