package main

import (
	"io"
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

// TestCodeKeyRequired: the built-in code key, which anyone can read in the
// source and use to decode codes, is refused unless a development flag
// allows it.
func TestCodeKeyRequired(t *testing.T) {
	base := map[string]string{"SHORTENER_NODE_ID": "1", "SHORTENER_MYSQL_DSN": "d"}
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
		if (err == nil) != tt.ok || (err != nil && !strings.Contains(err.Error(), "code key")) {
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
	if c.NodeID != 1 || c.Instance != "app1" || c.RedisTimeout != 50*time.Millisecond || len(c.RedisSentinels) != 3 {
		t.Errorf("defaults: got node %d instance %q timeout %s sentinels %v", c.NodeID, c.Instance, c.RedisTimeout, c.RedisSentinels)
	}

	env := map[string]string{"SHORTENER_REDIS_TIMEOUT": "20ms", "SHORTENER_REDIS_SENTINELS": "127.0.0.1:1, 127.0.0.1:2"}
	for k, v := range base {
		env[k] = v
	}
	c, err = parseConfig([]string{"-node-id", "2", "-instance", "x"}, envOf(env), io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	if c.NodeID != 2 || c.Instance != "x" || c.RedisTimeout != 20*time.Millisecond || strings.Join(c.RedisSentinels, ",") != "127.0.0.1:1,127.0.0.1:2" {
		t.Errorf("flags over env: got node %d instance %q timeout %s sentinels %v", c.NodeID, c.Instance, c.RedisTimeout, c.RedisSentinels)
	}
}

func TestParseConfigErrors(t *testing.T) {
	tests := []struct {
		name string
		env  map[string]string
		args []string
		want string
	}{
		{"missing node ID", map[string]string{"SHORTENER_MYSQL_DSN": "d"}, nil, "node ID is required"},
		{"node ID too big", map[string]string{"SHORTENER_MYSQL_DSN": "d", "SHORTENER_NODE_ID": "1024"}, nil, "out of range"},
		{"negative node ID", map[string]string{"SHORTENER_MYSQL_DSN": "d"}, []string{"-node-id=-5"}, "out of range"},
		{"node ID not a number", map[string]string{"SHORTENER_MYSQL_DSN": "d", "SHORTENER_NODE_ID": "one"}, nil, "want 0-1023 or auto"},
		{"missing DSN", map[string]string{"SHORTENER_NODE_ID": "1"}, nil, "MySQL DSN is required"},
		{"bad duration", map[string]string{"SHORTENER_NODE_ID": "1", "SHORTENER_MYSQL_DSN": "d", "SHORTENER_REDIS_TIMEOUT": "fast"}, nil, "not a duration"},
		{"bad log level", map[string]string{"SHORTENER_NODE_ID": "1", "SHORTENER_MYSQL_DSN": "d", "SHORTENER_LOG_LEVEL": "loud"}, nil, "log level"},
		{"no breaker successes", map[string]string{"SHORTENER_NODE_ID": "1", "SHORTENER_MYSQL_DSN": "d", "SHORTENER_BREAKER_SUCCESSES": "0"}, nil, "successes >= 1"},
		{"empty redis pool", map[string]string{"SHORTENER_NODE_ID": "1", "SHORTENER_MYSQL_DSN": "d", "SHORTENER_REDIS_POOL": "0"}, nil, "redis pool must be at least 1"},
		{"more idle than open MySQL connections", map[string]string{"SHORTENER_NODE_ID": "1", "SHORTENER_MYSQL_DSN": "d", "SHORTENER_MYSQL_MAX_OPEN": "8", "SHORTENER_MYSQL_MAX_IDLE": "9"}, nil, "mysql max idle must be between 0 and max open (8), got 9"},
		{"negative idle MySQL connections", map[string]string{"SHORTENER_NODE_ID": "1", "SHORTENER_MYSQL_DSN": "d", "SHORTENER_MYSQL_MAX_IDLE": "-1"}, nil, "mysql max idle must be between"},
		{"create burst 0", map[string]string{"SHORTENER_NODE_ID": "1", "SHORTENER_MYSQL_DSN": "d", "SHORTENER_CREATE_BURST": "0"}, nil, "create burst"},
		{"zero invalidation grace", map[string]string{"SHORTENER_NODE_ID": "1", "SHORTENER_MYSQL_DSN": "d", "SHORTENER_INVALIDATION_GRACE": "0s"}, nil, "invalidation grace must be positive"},
		{"pprof on the network", map[string]string{"SHORTENER_NODE_ID": "1", "SHORTENER_MYSQL_DSN": "d", "SHORTENER_PPROF_ADDR": "0.0.0.0:6060"}, nil, "want a loopback address"},
		{"pprof without a port", map[string]string{"SHORTENER_NODE_ID": "1", "SHORTENER_MYSQL_DSN": "d", "SHORTENER_PPROF_ADDR": "127.0.0.1"}, nil, "pprof address"},
		{"stray argument", map[string]string{"SHORTENER_NODE_ID": "1", "SHORTENER_MYSQL_DSN": "d"}, []string{"extra"}, "unexpected arguments"},
	}
	for _, tt := range tests {
		_, err := parseConfig(tt.args, envOf(tt.env), io.Discard)
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%s: got error %v, want one containing %q", tt.name, err, tt.want)
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
		tt.env["SHORTENER_NODE_ID"], tt.env["SHORTENER_MYSQL_DSN"] = "1", "d"
		c, err := parseConfig(nil, envOf(tt.env), io.Discard)
		if err != nil {
			t.Fatal(err)
		}
		if c.MySQLMaxOpen != tt.wantOpen || c.MySQLMaxIdle != tt.idle {
			t.Errorf("%v: got open %d idle %d, want %d and %d", tt.env, c.MySQLMaxOpen, c.MySQLMaxIdle, tt.wantOpen, tt.idle)
		}
	}
}

// TestConfigAutoNodeID reads SHORTENER_NODE_ID=auto: no node ID yet, and
// no instance name (run names it after the host).
func TestConfigAutoNodeID(t *testing.T) {
	c, err := parseConfig(nil, envOf(map[string]string{"SHORTENER_NODE_ID": "auto", "SHORTENER_MYSQL_DSN": "d"}), io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	if !c.AutoNodeID || c.Instance != "" {
		t.Errorf("auto: got AutoNodeID %v instance %q, want true and empty", c.AutoNodeID, c.Instance)
	}
}

func TestConfigLogMasksSecrets(t *testing.T) {
	c, err := parseConfig(nil, envOf(map[string]string{
		"SHORTENER_NODE_ID": "1", "SHORTENER_MYSQL_DSN": "u:hunter2@tcp(127.0.0.1:3307)/shortener",
		"SHORTENER_REDIS_PASSWORD": "swordfish", "SHORTENER_SENTINEL_PASSWORD": "opensesame",
	}), io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	s := c.LogValue().String()
	if strings.Contains(s, "hunter2") || strings.Contains(s, "swordfish") || strings.Contains(s, "opensesame") {
		t.Errorf("logged config reveals a secret: %s", s)
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
	base := map[string]string{"SHORTENER_NODE_ID": "1", "SHORTENER_MYSQL_DSN": "d"}
	env := maps.Clone(base)
	env["SHORTENER_REDIS_PASSWORD_FILE"], env["SHORTENER_SENTINEL_PASSWORD_FILE"] = redisFile, sentinelFile
	c, err := parseConfig(nil, envOf(env), io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	if c.RedisPassword != "r-secret" || c.SentinelPassword != "s-secret" {
		t.Errorf("passwords %q, %q; want r-secret, s-secret", c.RedisPassword, c.SentinelPassword)
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
