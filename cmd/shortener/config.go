package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net/netip"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"shortener/handler"
	"shortener/idgen"
	"shortener/store"
)

// Config is everything the server is told at start-up. It is read once,
// from environment variables with flags overriding them.
type Config struct {
	Addr            string
	Instance        string
	NodeID          int64
	AutoNodeID      bool // NodeID is claimed at start-up from MySQL's free leases
	BaseURL         string
	ShutdownTimeout time.Duration
	DrainTimeout    time.Duration
	IdleTimeout     time.Duration
	LogLevel        slog.Level
	PprofAddr       string // net/http/pprof on loopback; empty: off

	MySQLDSN         string
	MySQLMaxOpen     int
	MySQLMaxIdle     int
	MySQLTimeout     time.Duration
	MySQLDialTimeout time.Duration
	MigrateTimeout   time.Duration

	RedisMaster    string
	RedisSentinels []string
	RedisPassword  string
	// SentinelPassword is the sentinels' own (their requirepass), which
	// may differ from the Redis nodes'.
	SentinelPassword string
	RedisTimeout     time.Duration
	RedisPoolSize    int
	RedisTTL         time.Duration
	BreakerFailures  uint
	BreakerWindow    uint
	BreakerDelay     time.Duration
	// BreakerSuccesses trial calls close a breaker; pending invalidations
	// are replayed every InvalidationReplay and kept InvalidationGrace.
	BreakerSuccesses   uint
	InvalidationReplay time.Duration
	InvalidationGrace  time.Duration

	L1Size        int
	L1TTL         time.Duration
	L1NegativeTTL time.Duration
	APIKey        string
	AdminKey      string
	Anonymous     bool
	CreateRate    float64
	CreateBurst   int
	PageRate      float64 // previews per client address and second, per instance
	PageBurst     int
	// Per API key creates, the proxies whose X-Real-IP is believed, and
	// what every redirect says about caching and referrers.
	KeyCreateRate   float64
	KeyCreateBurst  int
	TrustedProxies  []netip.Prefix
	ReferrerPolicy  string
	PermanentMaxAge time.Duration
	IdemTTL         time.Duration
	CodeKey         string
	DevCodeKey      bool
	NodeLeaseTTL    time.Duration
	SelfHosts       []string
	DenyHosts       []string
	AllowLocal      bool

	// Trending: who may read it, and where this instance keeps the
	// clicks Redis has not taken yet.
	TrendingKeyed      bool
	TrendingSpool      string
	TrendingTick       time.Duration // how often clicks are sent to Redis
	TrendingRefresh    time.Duration // how often answers are recomputed
	TrendingTopK       int           // counters per local top-K
	TrendingMaxQueued  int           // link-minutes kept for the merge-back
	TrendingMinClients int           // distinct clients a link needs to appear

	// Click counting (package clicks).
	Clicks             bool
	ClicksDir          string
	ClicksMaxBytes     int
	ClicksSegmentBytes int
	ClicksSyncInterval time.Duration
	ClicksDrainTimeout time.Duration
	// A click whose nginx request is older than this when journaled is
	// dropped (nginx gave up on it); request IDs are remembered for
	// deduplication until no journal can hold a copy, a silent journal
	// holding them for at most ClicksRequestHold.
	ClicksMaxRequestAge time.Duration
	ClicksRequestHold   time.Duration
}

// envFlags binds flags whose defaults come from environment variables and
// collects every malformed value, so one start-up error names them all.
type envFlags struct {
	fs     *flag.FlagSet
	getenv func(string) string
	errs   []error
}

func (e *envFlags) str(p *string, name, env, def, usage string) {
	if v := e.getenv(env); v != "" {
		def = v
	}
	e.fs.StringVar(p, name, def, usage+" ($"+env+")")
}

// secret is str for a secret: its value comes from $env, or from the file
// that $env_FILE names (a mounted Kubernetes or Docker secret; one
// trailing newline is dropped), never both.
func (e *envFlags) secret(p *string, name, env, usage string) {
	def := e.getenv(env)
	if path := e.getenv(env + "_FILE"); path != "" {
		if def != "" {
			e.errs = append(e.errs, fmt.Errorf("$%s and $%s_FILE are both set: give one", env, env))
		}
		b, err := os.ReadFile(path)
		if err != nil {
			e.errs = append(e.errs, fmt.Errorf("$%s_FILE: %w", env, err))
		}
		def = strings.TrimSuffix(strings.TrimSuffix(string(b), "\n"), "\r")
	}
	e.fs.StringVar(p, name, def, usage+" ($"+env+" or $"+env+"_FILE)")
}

func (e *envFlags) int(p *int, name, env string, def int, usage string) {
	if v := e.getenv(env); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil {
			e.errs = append(e.errs, fmt.Errorf("$%s: %q is not an integer", env, v))
		}
		def = n
	}
	e.fs.IntVar(p, name, def, usage+" ($"+env+")")
}

func (e *envFlags) float(p *float64, name, env string, def float64, usage string) {
	if v := e.getenv(env); v != "" {
		f, err := strconv.ParseFloat(v, 64)
		if err != nil || f < 0 {
			e.errs = append(e.errs, fmt.Errorf("$%s: %q is not a non-negative number", env, v))
		}
		def = f
	}
	e.fs.Float64Var(p, name, def, usage+" ($"+env+")")
}

func (e *envFlags) boolean(p *bool, name, env string, def bool, usage string) {
	if v := e.getenv(env); v != "" {
		b, err := strconv.ParseBool(v)
		if err != nil {
			e.errs = append(e.errs, fmt.Errorf("$%s: %q is not true or false", env, v))
		}
		def = b
	}
	e.fs.BoolVar(p, name, def, usage+" ($"+env+")")
}

func (e *envFlags) dur(p *time.Duration, name, env string, def time.Duration, usage string) {
	if v := e.getenv(env); v != "" {
		d, err := time.ParseDuration(v)
		if err != nil {
			e.errs = append(e.errs, fmt.Errorf("$%s: %q is not a duration (e.g. 50ms, 2s)", env, v))
		}
		def = d
	}
	e.fs.DurationVar(p, name, def, usage+" ($"+env+")")
}

// parseConfig reads the configuration from getenv and args.
func parseConfig(args []string, getenv func(string) string, stderr io.Writer) (Config, error) {
	var (
		c                          Config
		failures, window           int
		successes                  int
		nodeID, sentinels, level   string
		selfHosts, denyHosts       string
		maxOpen, maxIdle, poolSize int
	)
	fs := flag.NewFlagSet("shortener", flag.ContinueOnError)
	fs.SetOutput(stderr)
	e := &envFlags{fs: fs, getenv: getenv}
	e.str(&c.Addr, "addr", "SHORTENER_ADDR", "127.0.0.1:8081", "listen address")
	e.str(&c.Instance, "instance", "SHORTENER_INSTANCE", "", "instance name sent in X-Served-By (default app<node-id>)")
	e.str(&nodeID, "node-id", "SHORTENER_NODE_ID", "", "Snowflake node ID 0-1023, distinct per instance, or \"auto\" to claim a free one from MySQL (required)")
	e.str(&c.BaseURL, "base-url", "SHORTENER_BASE_URL", "http://127.0.0.1:8080", "public prefix of short URLs")
	e.dur(&c.ShutdownTimeout, "shutdown-timeout", "SHORTENER_SHUTDOWN_TIMEOUT", 10*time.Second, "how long to drain requests on SIGTERM")
	e.dur(&c.DrainTimeout, "drain-timeout", "SHORTENER_DRAIN_TIMEOUT", 5*time.Second, "on SIGTERM, how long open connections may finish; keep it above the proxy's upstream keepalive timeout")
	e.dur(&c.IdleTimeout, "idle-timeout", "SHORTENER_IDLE_TIMEOUT", 75*time.Second, "keep-alive idle timeout; keep it above the proxy's upstream keepalive")
	e.str(&level, "log-level", "SHORTENER_LOG_LEVEL", "info", "debug, info, warn or error")

	e.str(&c.MySQLDSN, "mysql-dsn", "SHORTENER_MYSQL_DSN", "", "MySQL DSN, user:pass@tcp(host:port)/db (required)")
	e.int(&maxOpen, "mysql-max-open", "SHORTENER_MYSQL_MAX_OPEN", 32, "MySQL pool size")
	e.int(&maxIdle, "mysql-max-idle", "SHORTENER_MYSQL_MAX_IDLE", 0, "idle MySQL connections kept (0: as many as mysql-max-open; fewer makes the pool close and reopen connections as the load varies)")
	e.dur(&c.MySQLTimeout, "mysql-timeout", "SHORTENER_MYSQL_TIMEOUT", time.Second, "deadline of every MySQL query")
	e.dur(&c.MySQLDialTimeout, "mysql-dial-timeout", "SHORTENER_MYSQL_DIAL_TIMEOUT", 500*time.Millisecond, "MySQL connect deadline")
	e.dur(&c.MigrateTimeout, "migrate-timeout", "SHORTENER_MIGRATE_TIMEOUT", 30*time.Second, "how long start-up waits for the database and migrations")

	e.str(&c.RedisMaster, "redis-master", "SHORTENER_REDIS_MASTER", "shortener", "Sentinel master name")
	e.str(&sentinels, "redis-sentinels", "SHORTENER_REDIS_SENTINELS", "127.0.0.1:26380,127.0.0.1:26381,127.0.0.1:26382", "comma-separated Sentinel addresses")
	e.secret(&c.RedisPassword, "redis-password", "SHORTENER_REDIS_PASSWORD", "password of every Redis node (requirepass)")
	e.secret(&c.SentinelPassword, "sentinel-password", "SHORTENER_SENTINEL_PASSWORD", "password of the sentinels (their requirepass)")
	e.dur(&c.RedisTimeout, "redis-timeout", "SHORTENER_REDIS_TIMEOUT", 50*time.Millisecond, "deadline of every Redis call")
	e.int(&poolSize, "redis-pool", "SHORTENER_REDIS_POOL", 32, "Redis pool size")
	e.dur(&c.RedisTTL, "redis-ttl", "SHORTENER_REDIS_TTL", 24*time.Hour, "how long a link stays in Redis")
	e.int(&failures, "breaker-failures", "SHORTENER_BREAKER_FAILURES", 5, "Redis failures that open the breaker")
	e.int(&window, "breaker-window", "SHORTENER_BREAKER_WINDOW", 10, "recent Redis calls the failures are counted over")
	e.dur(&c.BreakerDelay, "breaker-delay", "SHORTENER_BREAKER_DELAY", time.Second, "how long the breaker stays open before trial calls")
	e.int(&successes, "breaker-successes", "SHORTENER_BREAKER_SUCCESSES", 3, "trial calls that must succeed to close the breaker")
	e.dur(&c.InvalidationReplay, "invalidation-replay", "SHORTENER_INVALIDATION_REPLAY", 500*time.Millisecond, "how often pending invalidations are sent to Redis again")
	e.dur(&c.InvalidationGrace, "invalidation-grace", "SHORTENER_INVALIDATION_GRACE", 3*time.Second, "how long an invalidation stays pending, so it is sent at least twice")

	e.int(&c.L1Size, "l1-size", "SHORTENER_L1_SIZE", 100_000, "in-process cache size (entries)")
	e.dur(&c.L1TTL, "l1-ttl", "SHORTENER_L1_TTL", 5*time.Second, "how long a link stays in the in-process cache")
	e.dur(&c.L1NegativeTTL, "l1-negative-ttl", "SHORTENER_L1_NEGATIVE_TTL", time.Second, "how long an unknown code is remembered as unknown")
	e.dur(&c.IdemTTL, "idempotency-ttl", "SHORTENER_IDEMPOTENCY_TTL", 24*time.Hour, "how long an Idempotency-Key replays its first answer")
	e.dur(&c.NodeLeaseTTL, "node-lease-ttl", "SHORTENER_NODE_LEASE_TTL", 5*time.Second, "lease on the node ID in MySQL; a restart after a crash waits up to this long")
	e.str(&c.CodeKey, "code-key", "SHORTENER_CODE_KEY", idgen.DefaultKey, "secret that permutes IDs into codes; the same on every instance, at least 16 bytes (required: the built-in one is public)")
	e.boolean(&c.DevCodeKey, "dev-code-key", "SHORTENER_DEV_CODE_KEY", false, "allow the built-in code key, whose codes anyone can decode (development only)")
	e.str(&selfHosts, "self-hosts", "SHORTENER_SELF_HOSTS", "", "comma-separated host names that also reach this shortener (links to them are loops); the base URL's host is always one")
	e.str(&denyHosts, "deny-hosts", "SHORTENER_DENY_HOSTS", "", "comma-separated host names links may not point to (subdomains included)")
	e.boolean(&c.AllowLocal, "allow-local-targets", "SHORTENER_ALLOW_LOCAL_TARGETS", false, "let links point at loopback, unspecified and link-local addresses and localhost names (development only)")
	e.float(&c.CreateRate, "create-rate", "SHORTENER_CREATE_RATE", 1, "links an anonymous client address may create per second, over all instances together (0: no limit); nginx limits too")
	e.int(&c.CreateBurst, "create-burst", "SHORTENER_CREATE_BURST", 10, "links an anonymous client address may create at once above the rate")
	e.float(&c.KeyCreateRate, "key-create-rate", "SHORTENER_KEY_CREATE_RATE", 1000, "links one API key may create per second, over all instances together (0: no limit)")
	e.int(&c.KeyCreateBurst, "key-create-burst", "SHORTENER_KEY_CREATE_BURST", 1000, "links one API key may create at once above the rate")
	e.float(&c.PageRate, "page-rate", "SHORTENER_PAGE_RATE", 5, "previews (/{code}+) a client address may ask this instance for per second (0: no limit); nginx limits too")
	e.int(&c.PageBurst, "page-burst", "SHORTENER_PAGE_BURST", 20, "previews a client address may ask for at once above the rate")
	var proxies string
	e.str(&proxies, "trusted-proxies", "SHORTENER_TRUSTED_PROXIES", "", "comma-separated addresses or CIDR prefixes of the proxies whose X-Real-IP names the client (e.g. 127.0.0.1 for the local nginx); empty: the peer is the client")
	e.str(&c.ReferrerPolicy, "referrer-policy", "SHORTENER_REFERRER_POLICY", "strict-origin-when-cross-origin", "Referrer-Policy sent with every redirect")
	e.dur(&c.PermanentMaxAge, "permanent-max-age", "SHORTENER_PERMANENT_MAX_AGE", time.Hour, "how long browsers may cache a 301 or 308 redirect")
	e.boolean(&c.Anonymous, "anonymous-create", "SHORTENER_ANONYMOUS_CREATE", true, "let clients without an API key create links")
	e.str(&c.APIKey, "api-key", "SHORTENER_API_KEY", "", "an API key from the configuration, besides those made with 'shortener keys create' (X-Api-Key)")
	e.boolean(&c.TrendingKeyed, "trending-keyed", "SHORTENER_TRENDING_KEYED", false, "GET /api/v1/trending needs an API key")
	e.dur(&c.TrendingTick, "trending-tick", "SHORTENER_TRENDING_TICK", 2*time.Second, "how often counted clicks are sent to Redis's trending sets")
	e.dur(&c.TrendingRefresh, "trending-refresh", "SHORTENER_TRENDING_REFRESH", 2*time.Second, "how often trending answers are recomputed (the 5m window read from Redis)")
	e.int(&c.TrendingTopK, "trending-topk", "SHORTENER_TRENDING_TOPK", 1_000, "counters of each local top-K used while Redis is out (one per window bucket)")
	e.int(&c.TrendingMinClients, "trending-min-clients", "SHORTENER_TRENDING_MIN_CLIENTS", 5, "clicks by distinct clients (a client's repeats of a link within a minute count once) a link needs in a window to appear on the public trending list")
	e.int(&c.TrendingMaxQueued, "trending-max-queued", "SHORTENER_TRENDING_MAX_QUEUED", 1_000_000, "link-minutes counted during a Redis outage kept for the merge-back; more are dropped from it")
	e.str(&c.TrendingSpool, "trending-spool", "SHORTENER_TRENDING_SPOOL", "", "file keeping the clicks counted during a Redis outage until they are merged back, so a restart does not lose them (default: trending.spool in the clicks directory; \"-\": memory only)")
	e.boolean(&c.Clicks, "clicks", "SHORTENER_CLICKS", true, "count clicks: journal each redirect on local disk and ship the journal to MySQL")
	e.str(&c.ClicksDir, "clicks-dir", "SHORTENER_CLICKS_DIR", "clicks", "directory of this instance's click journal (relative to the working directory); one instance per directory, on a volume that outlives the process")
	e.int(&c.ClicksMaxBytes, "clicks-max-bytes", "SHORTENER_CLICKS_MAX_BYTES", 1<<30, "bound of the click journal on disk; past it (MySQL down long enough) new clicks are dropped and counted")
	e.int(&c.ClicksSegmentBytes, "clicks-segment-bytes", "SHORTENER_CLICKS_SEGMENT_BYTES", 0, "size of a click journal segment, allocated whole when it begins, so a new one needs this much free space on the volume (0: a sixteenth of the max bytes, between 1 and 16 MiB)")
	e.dur(&c.ClicksSyncInterval, "clicks-sync-interval", "SHORTENER_CLICKS_SYNC_INTERVAL", time.Second, "how often the click journal is fsynced: what a machine crash (not a process crash) can lose")
	e.dur(&c.ClicksDrainTimeout, "clicks-drain-timeout", "SHORTENER_CLICKS_DRAIN_TIMEOUT", 5*time.Second, "on shutdown, how long to ship what the journal holds (the rest ships at the next start)")
	e.dur(&c.ClicksMaxRequestAge, "clicks-max-request-age", "SHORTENER_CLICKS_MAX_REQUEST_AGE", 30*time.Second, "a redirect whose request nginx passed on longer ago than this is not counted (nginx gave up on it and retried elsewhere, or answered 504); must exceed nginx's longest wait for a redirect (1 s) plus the clock difference between nginx and the app")
	e.dur(&c.ClicksRequestHold, "clicks-request-hold", "SHORTENER_CLICKS_REQUEST_HOLD", 24*time.Hour, "how long a journal that has gone silent (an instance gone for good) keeps the counted request IDs it may still duplicate; one back after longer may count a request nginx retried twice")
	e.str(&c.PprofAddr, "pprof-addr", "SHORTENER_PPROF_ADDR", "", "serve net/http/pprof on this loopback address, e.g. 127.0.0.1:6060 (empty: off)")
	e.str(&c.AdminKey, "admin-key", "SHORTENER_ADMIN_KEY", "", "an admin API key from the configuration: manages every link")

	if err := fs.Parse(args); err != nil {
		return Config{}, err
	}
	errs := e.errs
	if fs.NArg() > 0 {
		errs = append(errs, fmt.Errorf("unexpected arguments: %q", fs.Args()))
	}
	if err := checkPprofAddr(c.PprofAddr); err != nil {
		errs = append(errs, err)
	}
	if id, auto, err := parseNodeID(nodeID); err != nil {
		errs = append(errs, err)
	} else {
		c.NodeID, c.AutoNodeID = id, auto
	}
	if c.MySQLDSN == "" {
		errs = append(errs, errors.New("MySQL DSN is required: set $SHORTENER_MYSQL_DSN or -mysql-dsn"))
	}
	for _, s := range strings.Split(sentinels, ",") {
		if s = strings.TrimSpace(s); s != "" {
			c.RedisSentinels = append(c.RedisSentinels, s)
		}
	}
	c.SelfHosts, c.DenyHosts = splitList(selfHosts), splitList(denyHosts)
	// The trending spool lives beside the click journal: the same volume
	// that must outlive the process, one instance per directory.
	switch c.TrendingSpool {
	case "":
		c.TrendingSpool = filepath.Join(c.ClicksDir, "trending.spool")
	case "-":
		c.TrendingSpool = ""
	}
	if p, err := handler.ParseProxies(splitList(proxies)); err != nil {
		errs = append(errs, fmt.Errorf("trusted proxies %q: %w", proxies, err))
	} else {
		c.TrustedProxies = p
	}
	if c.KeyCreateRate > 0 && c.KeyCreateBurst < 1 {
		errs = append(errs, fmt.Errorf("key create burst must be at least 1 while the rate is limited, got %d", c.KeyCreateBurst))
	}
	if c.PermanentMaxAge < time.Second || c.ReferrerPolicy == "" {
		errs = append(errs, fmt.Errorf("permanent max-age (%s) must be at least 1s and the referrer policy set", c.PermanentMaxAge))
	}
	if c.CodeKey == idgen.DefaultKey && !c.DevCodeKey {
		// With the public key anyone can decode a code to its node and
		// millisecond and compute the next codes.
		errs = append(errs, errors.New("code key is the built-in default, which anyone can read in the source: set $SHORTENER_CODE_KEY to a random secret (the same on every instance), or $SHORTENER_DEV_CODE_KEY=true for development"))
	}
	if len(c.CodeKey) < idgen.MinKeyLen {
		errs = append(errs, fmt.Errorf("code key must be at least %d bytes", idgen.MinKeyLen))
	}
	if len(c.RedisSentinels) == 0 {
		errs = append(errs, errors.New("at least one Sentinel address is required"))
	}
	if err := c.LogLevel.UnmarshalText([]byte(level)); err != nil {
		errs = append(errs, fmt.Errorf("log level %q: want debug, info, warn or error", level))
	}
	for _, d := range []struct {
		name string
		v    time.Duration
	}{{"redis timeout", c.RedisTimeout}, {"mysql timeout", c.MySQLTimeout}, {"breaker delay", c.BreakerDelay},
		{"l1 ttl", c.L1TTL}, {"node lease ttl", c.NodeLeaseTTL}, {"l1 negative ttl", c.L1NegativeTTL},
		{"redis ttl", c.RedisTTL}, {"idempotency ttl", c.IdemTTL}, {"invalidation replay", c.InvalidationReplay}, {"invalidation grace", c.InvalidationGrace},
		{"trending tick", c.TrendingTick}, {"trending refresh", c.TrendingRefresh}} {
		if d.v <= 0 {
			errs = append(errs, fmt.Errorf("%s must be positive, got %s", d.name, d.v))
		}
	}
	if c.Clicks && (c.ClicksDir == "" || c.ClicksMaxBytes <= 0 || c.ClicksSyncInterval <= 0 || c.ClicksMaxRequestAge <= 0 || c.ClicksRequestHold <= 0) {
		errs = append(errs, errors.New("clicks: need a journal directory, a positive max bytes, sync interval, max request age and request hold (or SHORTENER_CLICKS=false)"))
	}
	if c.Clicks && c.ClicksSegmentBytes != 0 && (c.ClicksSegmentBytes < minSegmentBytes || c.ClicksSegmentBytes > c.ClicksMaxBytes) {
		errs = append(errs, fmt.Errorf("clicks: segment bytes must be 0 (derived) or between %d and the max bytes (%d), got %d", minSegmentBytes, c.ClicksMaxBytes, c.ClicksSegmentBytes))
	}
	if failures < 1 || window < failures {
		errs = append(errs, fmt.Errorf("breaker: need 1 <= failures (%d) <= window (%d)", failures, window))
	}
	if c.PageRate > 0 && c.PageBurst < 1 {
		errs = append(errs, fmt.Errorf("page burst must be at least 1 while the rate is limited, got %d", c.PageBurst))
	}
	if c.CreateRate > 0 && c.CreateBurst < 1 {
		errs = append(errs, fmt.Errorf("create burst must be at least 1 while the rate is limited, got %d", c.CreateBurst))
	}
	if successes < 1 {
		errs = append(errs, fmt.Errorf("breaker: need successes >= 1, got %d", successes))
	}
	for _, n := range []struct {
		name string
		v    int
	}{{"redis pool", poolSize}, {"mysql max open", maxOpen}, {"l1 size", c.L1Size}} {
		if n.v < 1 {
			errs = append(errs, fmt.Errorf("%s must be at least 1, got %d", n.name, n.v))
		}
	}
	// A pool that keeps fewer idle connections than it opens closes one
	// whenever a request ends with the idle slots full, and dials again
	// on the next burst: at 32 creates in flight against 16 idle slots
	// that was one new MySQL connection per 6 creates, and 8-23% of the
	// app's CPU per create. So every connection opened is kept (the
	// driver's own advice). The peak stays max open; MaxLifetime still
	// recycles them.
	switch {
	case maxIdle == 0:
		maxIdle = maxOpen
	case maxIdle < 0 || maxIdle > maxOpen:
		errs = append(errs, fmt.Errorf("mysql max idle must be between 0 and max open (%d), got %d", maxOpen, maxIdle))
	}
	if err := errors.Join(errs...); err != nil {
		return Config{}, err
	}
	c.MySQLMaxOpen, c.MySQLMaxIdle, c.RedisPoolSize = maxOpen, maxIdle, poolSize
	c.BreakerFailures, c.BreakerWindow, c.BreakerSuccesses = uint(failures), uint(window), uint(successes)
	if c.Instance == "" && !c.AutoNodeID {
		c.Instance = "app" + strconv.FormatInt(c.NodeID, 10)
	} // an auto node ID's instance is named after the host: see run

	return c, nil
}

// LogValue logs the configuration with secrets masked.
func (c Config) LogValue() slog.Value {
	mask := func(s string) string {
		if s == "" {
			return ""
		}
		return "***"
	}
	return slog.GroupValue(
		slog.String("addr", c.Addr), slog.String("instance", c.Instance),
		slog.Int64("node_id", c.NodeID), slog.Bool("auto_node_id", c.AutoNodeID), slog.String("base_url", c.BaseURL),
		slog.String("mysql_dsn", store.RedactDSN(c.MySQLDSN)),
		slog.Int("mysql_max_open", c.MySQLMaxOpen), slog.String("mysql_timeout", c.MySQLTimeout.String()),
		slog.String("redis_master", c.RedisMaster), slog.Any("redis_sentinels", c.RedisSentinels),
		slog.String("redis_password", mask(c.RedisPassword)), slog.String("sentinel_password", mask(c.SentinelPassword)), slog.Bool("code_key_default", c.CodeKey == idgen.DefaultKey), slog.Bool("api_key_set", c.APIKey != ""), slog.Bool("admin_key_set", c.AdminKey != ""),
		slog.Bool("trending_keyed", c.TrendingKeyed), slog.String("trending_spool", c.TrendingSpool),
		slog.Bool("clicks", c.Clicks), slog.String("clicks_dir", c.ClicksDir), slog.Int("clicks_max_bytes", c.ClicksMaxBytes), slog.Int("clicks_segment_bytes", c.ClicksSegmentBytes),
		slog.String("clicks_sync_interval", c.ClicksSyncInterval.String()),
		slog.String("clicks_max_request_age", c.ClicksMaxRequestAge.String()), slog.String("clicks_request_hold", c.ClicksRequestHold.String()),
		slog.Int("l1_size", c.L1Size), slog.String("l1_ttl", c.L1TTL.String()), slog.String("redis_timeout", c.RedisTimeout.String()),
		slog.Int("redis_pool", c.RedisPoolSize), slog.String("breaker_delay", c.BreakerDelay.String()),
		slog.Uint64("breaker_failures", uint64(c.BreakerFailures)), slog.Uint64("breaker_window", uint64(c.BreakerWindow)),
	)
}

// parseNodeID reads $SHORTENER_NODE_ID: a node ID 0-1023, or "auto".
func parseNodeID(v string) (id int64, auto bool, err error) {
	switch v = strings.TrimSpace(v); v {
	case "":
		return 0, false, errors.New("node ID is required: set $SHORTENER_NODE_ID or -node-id (0-1023, distinct per instance, or auto)")
	case "auto":
		return 0, true, nil
	}
	n, err := strconv.ParseInt(v, 10, 64)
	switch {
	case err != nil:
		return 0, false, fmt.Errorf("node ID %q: want 0-1023 or auto", v)
	case n < 0 || n > 1023:
		return 0, false, fmt.Errorf("node ID %d is out of range 0-1023", n)
	}
	return n, false, nil
}

// splitList splits a comma-separated list, dropping blanks.
func splitList(s string) []string {
	var out []string
	for _, v := range strings.Split(s, ",") {
		if v = strings.TrimSpace(v); v != "" {
			out = append(out, v)
		}
	}
	return out
}
