package main

import (
	"io"
	"log/slog"
	"maps"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"shortener/idgen"
)

// envOf is getenv over m, with a code key unless m names one: the app
// refuses the built-in key (TestCodeKeyRequired).
func envOf(m map[string]string) func(string) string {
	return func(k string) string {
		if v, ok := m[k]; ok || k != "SHORTENER_CODE_KEY" {
			return v
		}
		return testCodeKey
	}
}

const testCodeKey = "test-code-key-0123456789"

// testDSN is a DSN that parses; the tests of the configuration never
// connect.
const testDSN = "u:p@tcp(127.0.0.1:1)/shortener"

// TestCodeKeyRequired: the built-in code key, which anyone can read in the
// source and use to decode codes, is refused unless a development flag
// allows it.
func TestCodeKeyRequired(t *testing.T) {
	base := map[string]string{"SHORTENER_NODE_ID": "1", "SHORTENER_MYSQL_DSN": testDSN}
	for _, tt := range []struct {
		name string
		env  map[string]string
		ok   bool
	}{
		{"built-in key", map[string]string{"SHORTENER_CODE_KEY": idgen.DefaultKey}, false},
		{"built-in key, dev flag", map[string]string{"SHORTENER_CODE_KEY": idgen.DefaultKey, "SHORTENER_DEV_CODE_KEY": "true"}, true},
		{"no key at all", map[string]string{"SHORTENER_CODE_KEY": ""}, false},
		{"a secret", map[string]string{"SHORTENER_CODE_KEY": "a-random-secret-of-32-bytes-long"}, true},
	} {
		env := maps.Clone(base)
		maps.Copy(env, tt.env)
		_, err := parseConfig(nil, envOf(env), io.Discard)
		if (err == nil) != tt.ok || (err != nil && !strings.Contains(err.Error(), "$SHORTENER_CODE_KEY (-code-key)")) {
			t.Errorf("%s: error %v, want ok=%v", tt.name, err, tt.ok)
		}
	}
}

func TestParseConfig(t *testing.T) {
	base := map[string]string{
		"SHORTENER_NODE_ID":   "1",
		"SHORTENER_MYSQL_DSN": "u:secret@tcp(127.0.0.1:3307)/shortener",
	}
	c, err := parseConfig(nil, envOf(base), io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	if c.Node.ID.N != 1 || c.Server.Instance != "app1" || c.Redis.Timeout != 50*time.Millisecond || len(c.Redis.SentinelAddrs) != 3 {
		t.Errorf("defaults: got node %d instance %q timeout %s sentinels %v", c.Node.ID.N, c.Server.Instance, c.Redis.Timeout, c.Redis.SentinelAddrs)
	}

	env := map[string]string{"SHORTENER_REDIS_TIMEOUT": "20ms", "SHORTENER_REDIS_SENTINELS": "127.0.0.1:1, 127.0.0.1:2"}
	for k, v := range base {
		env[k] = v
	}
	c, err = parseConfig([]string{"-node-id", "2", "-instance", "x"}, envOf(env), io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	if c.Node.ID.N != 2 || c.Server.Instance != "x" || c.Redis.Timeout != 20*time.Millisecond || strings.Join(c.Redis.SentinelAddrs, ",") != "127.0.0.1:1,127.0.0.1:2" {
		t.Errorf("flags over env: got node %d instance %q timeout %s sentinels %v", c.Node.ID.N, c.Server.Instance, c.Redis.Timeout, c.Redis.SentinelAddrs)
	}
}

// TestParseConfigErrors: each bad setting is refused with a message that
// names its environment variable and flag, whichever package's rule it
// breaks.
func TestParseConfigErrors(t *testing.T) {
	tests := []struct {
		name string
		env  map[string]string
		args []string
		want string
	}{
		{"missing node ID", map[string]string{"SHORTENER_NODE_ID": ""}, nil, "$SHORTENER_NODE_ID (-node-id) is required"},
		{"node ID too big", map[string]string{"SHORTENER_NODE_ID": "1024"}, nil, "$SHORTENER_NODE_ID (-node-id) is out of range 0-1023, got 1024"},
		{"negative node ID", nil, []string{"-node-id=-5"}, "$SHORTENER_NODE_ID (-node-id) is out of range"},
		{"node ID not a number", map[string]string{"SHORTENER_NODE_ID": "one"}, nil, "want 0-1023 or auto"},
		{"missing DSN", map[string]string{"SHORTENER_MYSQL_DSN": ""}, nil, "$SHORTENER_MYSQL_DSN (-mysql-dsn) is required"},
		{"DSN that does not parse", map[string]string{"SHORTENER_MYSQL_DSN": "u:p@tcp(h"}, nil, "$SHORTENER_MYSQL_DSN (-mysql-dsn) does not parse"},
		{"bad duration", map[string]string{"SHORTENER_REDIS_TIMEOUT": "fast"}, nil, `$SHORTENER_REDIS_TIMEOUT: "fast" is not a duration`},
		{"bad integer", map[string]string{"SHORTENER_L1_SIZE": "many"}, nil, `$SHORTENER_L1_SIZE: "many" is not an integer`},
		{"bad boolean", map[string]string{"SHORTENER_CLICKS": "maybe"}, nil, `$SHORTENER_CLICKS: "maybe" is not true or false`},
		{"bad log level", map[string]string{"SHORTENER_LOG_LEVEL": "loud"}, nil, `$SHORTENER_LOG_LEVEL (-log-level) "loud": want debug, info, warn or error`},
		{"no sentinels", map[string]string{"SHORTENER_REDIS_SENTINELS": " , "}, nil, "$SHORTENER_REDIS_SENTINELS (-redis-sentinels) are required"},
		{"no breaker successes", map[string]string{"SHORTENER_BREAKER_SUCCESSES": "0"}, nil, "$SHORTENER_BREAKER_SUCCESSES (-breaker-successes) must be at least 1, got 0"},
		{"negative breaker failures", map[string]string{"SHORTENER_BREAKER_FAILURES": "-1"}, nil, `$SHORTENER_BREAKER_FAILURES: "-1" is not a non-negative integer`},
		{"window below failures", map[string]string{"SHORTENER_BREAKER_WINDOW": "4"}, nil, "$SHORTENER_BREAKER_WINDOW (-breaker-window) must be at least the breaker failures (5), got 4"},
		{"empty redis pool", map[string]string{"SHORTENER_REDIS_POOL": "0"}, nil, "$SHORTENER_REDIS_POOL (-redis-pool) must be positive, got 0"},
		{"zero redis timeout", nil, []string{"-redis-timeout=0s"}, "$SHORTENER_REDIS_TIMEOUT (-redis-timeout) must be positive, got 0s"},
		{"more idle than open MySQL connections", map[string]string{"SHORTENER_MYSQL_MAX_OPEN": "8", "SHORTENER_MYSQL_MAX_IDLE": "9"}, nil, "$SHORTENER_MYSQL_MAX_IDLE (-mysql-max-idle) must be between 0 and the max open (8), got 9"},
		{"negative idle MySQL connections", map[string]string{"SHORTENER_MYSQL_MAX_IDLE": "-1"}, nil, "$SHORTENER_MYSQL_MAX_IDLE (-mysql-max-idle) must be between"},
		{"no MySQL connections", map[string]string{"SHORTENER_MYSQL_MAX_OPEN": "0"}, nil, "$SHORTENER_MYSQL_MAX_OPEN (-mysql-max-open) must be at least 1"},
		{"zero MySQL timeout", map[string]string{"SHORTENER_MYSQL_TIMEOUT": "0s"}, nil, "$SHORTENER_MYSQL_TIMEOUT (-mysql-timeout) must be positive"},
		{"create burst 0", map[string]string{"SHORTENER_CREATE_BURST": "0"}, nil, "$SHORTENER_CREATE_BURST (-create-burst) must be at least 1 while the rate limits"},
		{"negative create rate", map[string]string{"SHORTENER_CREATE_RATE": "-1"}, nil, "$SHORTENER_CREATE_RATE (-create-rate) must not be negative"},
		{"key create burst 0", map[string]string{"SHORTENER_KEY_CREATE_BURST": "0"}, nil, "$SHORTENER_KEY_CREATE_BURST (-key-create-burst) must be at least 1"},
		{"page burst 0", map[string]string{"SHORTENER_PAGE_BURST": "0"}, nil, "$SHORTENER_PAGE_BURST (-page-burst) must be at least 1"},
		{"no referrer policy", nil, []string{"-referrer-policy="}, "$SHORTENER_REFERRER_POLICY (-referrer-policy) is required"},
		{"permanent max-age under a second", map[string]string{"SHORTENER_PERMANENT_MAX_AGE": "500ms"}, nil, "$SHORTENER_PERMANENT_MAX_AGE (-permanent-max-age) must be at least 1s"},
		{"zero idempotency TTL", map[string]string{"SHORTENER_IDEMPOTENCY_TTL": "0s"}, nil, "$SHORTENER_IDEMPOTENCY_TTL (-idempotency-ttl) must be positive"},
		{"bad trusted proxy", map[string]string{"SHORTENER_TRUSTED_PROXIES": "127.0.0.1,nginx"}, nil, "$SHORTENER_TRUSTED_PROXIES (-trusted-proxies)"},
		{"zero invalidation grace", map[string]string{"SHORTENER_INVALIDATION_GRACE": "0s"}, nil, "$SHORTENER_INVALIDATION_GRACE (-invalidation-grace) must be positive"},
		{"zero L1 size", map[string]string{"SHORTENER_L1_SIZE": "0"}, nil, "$SHORTENER_L1_SIZE (-l1-size) must be positive"},
		{"L1 bytes below an entry", map[string]string{"SHORTENER_L1_BYTES": "100"}, nil, "$SHORTENER_L1_BYTES (-l1-bytes) must be at least 260 (one entry), got 100"},
		{"zero lease TTL", map[string]string{"SHORTENER_NODE_LEASE_TTL": "0s"}, nil, "$SHORTENER_NODE_LEASE_TTL (-node-lease-ttl) must be positive"},
		{"short code key", map[string]string{"SHORTENER_CODE_KEY": "short"}, nil, "$SHORTENER_CODE_KEY (-code-key) is refused: idgen: code key must be at least 16 bytes"},
		{"refresh below tick", map[string]string{"SHORTENER_TRENDING_TICK": "5s"}, nil, "$SHORTENER_TRENDING_REFRESH (-trending-refresh) must be at least the tick (5s), got 2s"},
		{"zero trending tick", map[string]string{"SHORTENER_TRENDING_TICK": "0s"}, nil, "$SHORTENER_TRENDING_TICK (-trending-tick) must be positive"},
		{"zero top-K", map[string]string{"SHORTENER_TRENDING_TOPK": "0"}, nil, "$SHORTENER_TRENDING_TOPK (-trending-topk) must be positive"},
		{"no clicks directory", map[string]string{"SHORTENER_CLICKS_DIR": ""}, []string{"-clicks-dir="}, "$SHORTENER_CLICKS_DIR (-clicks-dir) is required"},
		{"tiny segments", map[string]string{"SHORTENER_CLICKS_SEGMENT_BYTES": "1024"}, nil, "$SHORTENER_CLICKS_SEGMENT_BYTES (-clicks-segment-bytes) must be 0 (derived) or at least 16384"},
		{"segments over the bound", map[string]string{"SHORTENER_CLICKS_MAX_BYTES": "65536", "SHORTENER_CLICKS_SEGMENT_BYTES": "131072"}, nil, "$SHORTENER_CLICKS_SEGMENT_BYTES (-clicks-segment-bytes) must be at most the max bytes (65536)"},
		{"zero request hold", map[string]string{"SHORTENER_CLICKS_REQUEST_HOLD": "0s"}, nil, "$SHORTENER_CLICKS_REQUEST_HOLD (-clicks-request-hold) must be positive"},
		{"zero sync interval", map[string]string{"SHORTENER_CLICKS_SYNC_INTERVAL": "0s"}, nil, "$SHORTENER_CLICKS_SYNC_INTERVAL (-clicks-sync-interval) must be positive"},
		{"zero ship interval", map[string]string{"SHORTENER_CLICKS_SHIP_INTERVAL": "0s"}, nil, "$SHORTENER_CLICKS_SHIP_INTERVAL (-clicks-ship-interval) must be positive"},
		{"pprof on the network", map[string]string{"SHORTENER_PPROF_ADDR": "0.0.0.0:6060"}, nil, "$SHORTENER_PPROF_ADDR (-pprof-addr) is refused: pprof address \"0.0.0.0:6060\": want a loopback address"},
		{"pprof without a port", map[string]string{"SHORTENER_PPROF_ADDR": "127.0.0.1"}, nil, "pprof address"},
		{"stray argument", nil, []string{"extra"}, "unexpected arguments"},
	}
	for _, tt := range tests {
		env := map[string]string{"SHORTENER_NODE_ID": "1", "SHORTENER_MYSQL_DSN": testDSN}
		maps.Copy(env, tt.env)
		_, err := parseConfig(tt.args, envOf(env), io.Discard)
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%s: got error %v, want one containing %q", tt.name, err, tt.want)
			continue
		}
		// One bad setting, one message.
		if n := len(strings.Split(err.Error(), "\n")); n != 1 {
			t.Errorf("%s: got %d problems, want 1:\n%v", tt.name, n, err)
		}
	}
}

// TestParseConfigErrorsAll: several bad settings, of several packages'
// rules and none, are all named in one error, each once.
func TestParseConfigErrorsAll(t *testing.T) {
	_, err := parseConfig([]string{"-redis-pool=0"}, envOf(map[string]string{
		"SHORTENER_NODE_ID": "2000", "SHORTENER_MYSQL_DSN": "",
		"SHORTENER_REDIS_TIMEOUT": "fast", "SHORTENER_L1_TTL": "0s",
		"SHORTENER_TRENDING_TOPK": "0", "SHORTENER_CLICKS_SYNC_INTERVAL": "0s",
		"SHORTENER_PAGE_BURST": "0", "SHORTENER_PPROF_ADDR": "0.0.0.0:1",
	}), io.Discard)
	if err == nil {
		t.Fatal("parsed, want an error")
	}
	got := strings.Split(err.Error(), "\n")
	want := []string{
		`$SHORTENER_REDIS_TIMEOUT: "fast" is not a duration`,
		"$SHORTENER_PPROF_ADDR (-pprof-addr)", "$SHORTENER_NODE_ID (-node-id)", "$SHORTENER_MYSQL_DSN (-mysql-dsn)",
		"$SHORTENER_REDIS_POOL (-redis-pool)", "$SHORTENER_L1_TTL (-l1-ttl)", "$SHORTENER_TRENDING_TOPK (-trending-topk)",
		"$SHORTENER_CLICKS_SYNC_INTERVAL (-clicks-sync-interval)", "$SHORTENER_PAGE_BURST (-page-burst)",
	}
	if len(got) != len(want) {
		t.Errorf("got %d problems, want %d:\n%v", len(got), len(want), err)
	}
	for i := range min(len(got), len(want)) {
		if !strings.HasPrefix(got[i], want[i]) {
			t.Errorf("problem %d: got %q, want it to begin %q", i, got[i], want[i])
		}
	}
}

// TestConfigMySQLIdleFollowsOpen: unless told otherwise the pool keeps
// every connection it opens, however big it is.
func TestConfigMySQLIdleFollowsOpen(t *testing.T) {
	for _, tt := range []struct {
		env            map[string]string
		wantOpen, idle int
	}{
		{map[string]string{}, 32, 32},
		{map[string]string{"SHORTENER_MYSQL_MAX_OPEN": "64"}, 64, 64},
		{map[string]string{"SHORTENER_MYSQL_MAX_OPEN": "64", "SHORTENER_MYSQL_MAX_IDLE": "8"}, 64, 8},
	} {
		tt.env["SHORTENER_NODE_ID"], tt.env["SHORTENER_MYSQL_DSN"] = "1", testDSN
		c, err := parseConfig(nil, envOf(tt.env), io.Discard)
		if err != nil {
			t.Fatal(err)
		}
		if sc := c.MySQL.storeConfig(); sc.MaxOpen != tt.wantOpen || sc.MaxIdle != tt.idle {
			t.Errorf("%v: got open %d idle %d, want %d and %d", tt.env, sc.MaxOpen, sc.MaxIdle, tt.wantOpen, tt.idle)
		}
	}
}

// TestConfigAutoNodeID reads SHORTENER_NODE_ID=auto: no node ID yet, and
// no instance name (run names it after the host).
func TestConfigAutoNodeID(t *testing.T) {
	c, err := parseConfig(nil, envOf(map[string]string{"SHORTENER_NODE_ID": "auto", "SHORTENER_MYSQL_DSN": testDSN}), io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	if !c.Node.ID.Auto || c.Server.Instance != "" {
		t.Errorf("auto: got Auto %v instance %q, want true and empty", c.Node.ID.Auto, c.Server.Instance)
	}
}

func TestConfigLogMasksSecrets(t *testing.T) {
	c, err := parseConfig(nil, envOf(map[string]string{
		"SHORTENER_NODE_ID": "1", "SHORTENER_MYSQL_DSN": "u:hunter2@tcp(127.0.0.1:3307)/shortener",
		"SHORTENER_REDIS_PASSWORD": "swordfish", "SHORTENER_SENTINEL_PASSWORD": "opensesame",
		"SHORTENER_CODE_KEY": "codekey-0123456789abcdef", "SHORTENER_API_KEY": "sk_apikey", "SHORTENER_ADMIN_KEY": "sk_adminkey",
	}), io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	slog.New(slog.NewJSONHandler(&b, nil)).Info("starting", "config", c)
	s := b.String()
	for _, secret := range []string{"hunter2", "swordfish", "opensesame", "codekey-0123456789abcdef", "sk_apikey", "sk_adminkey"} {
		if strings.Contains(s, secret) {
			t.Errorf("logged config reveals the secret %q: %s", secret, s)
		}
	}
	// The rest is there, every setting by its flag's name.
	for _, want := range []string{`"mysql-dsn":"u:***@tcp(127.0.0.1:3307)/shortener"`, `"redis-password":"***"`, `"api-key":"***"`,
		`"redis-timeout":"50ms"`, `"redis-sentinels":["127.0.0.1:26380","127.0.0.1:26381","127.0.0.1:26382"]`,
		`"node-id":"1"`, `"log-level":"INFO"`, `"breaker-failures":5`, `"clicks":true`, `"create-rate":1`} {
		if !strings.Contains(s, want) {
			t.Errorf("logged config lacks %s: %s", want, s)
		}
	}
	if n := strings.Count(s, `":`) - 4; n != len(c.settings()) { // less time, level, msg and config
		t.Errorf("logged %d settings, want all %d: %s", n, len(c.settings()), s)
	}
}

// TestConfigSecretFiles reads the Redis and Sentinel passwords from the
// files their _FILE variables name (a mounted secret), without the
// trailing newline; a missing file, or both forms at once, is refused.
func TestConfigSecretFiles(t *testing.T) {
	dir := t.TempDir()
	redisFile, sentinelFile := filepath.Join(dir, "redis"), filepath.Join(dir, "sentinel")
	if err := os.WriteFile(redisFile, []byte("r-secret\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(sentinelFile, []byte("s-secret"), 0o600); err != nil {
		t.Fatal(err)
	}
	base := map[string]string{"SHORTENER_NODE_ID": "1", "SHORTENER_MYSQL_DSN": testDSN}
	env := maps.Clone(base)
	env["SHORTENER_REDIS_PASSWORD_FILE"], env["SHORTENER_SENTINEL_PASSWORD_FILE"] = redisFile, sentinelFile
	c, err := parseConfig(nil, envOf(env), io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	if c.Redis.Password != "r-secret" || c.Redis.SentinelPassword != "s-secret" {
		t.Errorf("passwords %q, %q; want r-secret, s-secret", c.Redis.Password, c.Redis.SentinelPassword)
	}
	for name, bad := range map[string]map[string]string{
		"missing file": {"SHORTENER_REDIS_PASSWORD_FILE": filepath.Join(dir, "none")},
		"both forms":   {"SHORTENER_SENTINEL_PASSWORD": "x", "SHORTENER_SENTINEL_PASSWORD_FILE": sentinelFile},
	} {
		env := maps.Clone(base)
		maps.Copy(env, bad)
		if _, err := parseConfig(nil, envOf(env), io.Discard); err == nil {
			t.Errorf("%s: parsed, want an error", name)
		}
	}
}
