package main

import (
	"flag"
	"fmt"
	"io"
	"log/slog"
	"strconv"
	"time"

	"shortener"
	"shortener/analytics"
	"shortener/cache"
	"shortener/clicks"
	"shortener/handler"
	"shortener/idgen"
	"shortener/sentinel"
	"shortener/store"
	"shortener/trending"
)

// Config is everything the server is told at start-up, read once by
// parseConfig: from SHORTENER_* environment variables, each overridden by
// the flag of the same name (settings is the table of both). It has a
// section per concern. Where a package owns the settings, the section is
// that package's Config or embeds it, so the package's Validate names the
// same fields the flags fill; the conversions to each package's Config
// (wiring.go, clicks.go) add only what follows from other sections.
type Config struct {
	Server ServerConfig
	Node   NodeConfig
	MySQL  MySQLConfig
	// Redis is the one Sentinel group the lookup path and the ranking
	// both reach, with one set of passwords, deadlines and breaker
	// tuning.
	Redis sentinel.Config
	// Cache is the lookup path's; its Redis is filled from the section
	// above (cacheConfig).
	Cache cache.Config
	// Trending is the ranking's; its Redis, Node, Prefix and the default
	// Spool are filled by trendingConfig.
	Trending trending.Config
	Clicks   ClicksConfig
	// Analytics is what each click carries besides its count: country,
	// browser, OS, device and a visitor hash (docs/analytics.md).
	Analytics analytics.Config
	Handler   HandlerConfig
	Webhooks  WebhooksConfig // webhooks.go
}

// ServerConfig is the HTTP server and the process around it.
type ServerConfig struct {
	Addr string
	// Instance is sent in X-Served-By and names the lease's owner:
	// app<node-id> unless set, or with an auto node ID the host's name
	// (a pod's), which run fills in.
	Instance        string
	ShutdownTimeout time.Duration
	DrainTimeout    time.Duration
	IdleTimeout     time.Duration
	LogLevel        slog.Level
	PprofAddr       string // net/http/pprof on loopback; empty: off
}

// NodeConfig is the instance's identity: its Snowflake node ID, which a
// lease in MySQL keeps its own (package lease), and the key that turns
// IDs into codes (package idgen).
type NodeConfig struct {
	ID         nodeID
	LeaseTTL   time.Duration
	CodeKey    string
	DevCodeKey bool // the built-in CodeKey is allowed (development only)
}

// MySQLConfig is the source of truth's pool (store.Config, MaxIdle 0
// meaning as many as MaxOpen) and how long start-up waits for it.
type MySQLConfig struct {
	store.Config
	MigrateTimeout time.Duration
}

// ClicksConfig is click counting: the journal (clicks.Config, its
// SegmentBytes 0 meaning derived from MaxBytes), and how the shipper
// treats it.
type ClicksConfig struct {
	On bool
	clicks.Config
	DrainTimeout time.Duration // on shutdown, of what the journal holds
	ShipInterval time.Duration // the shipper's pause once caught up
	RequestHold  time.Duration // of a silent journal's request IDs
}

// HandlerConfig is the HTTP API and pages: handler.Config (Instance,
// Policy, Pages and CookieSecret are filled by handlerConfig), the hosts
// links may not point to, and the API keys given by the configuration.
type HandlerConfig struct {
	handler.Config
	SelfHosts  []string
	DenyHosts  []string
	AllowLocal bool
	APIKey     string
	AdminKey   string
}

// settings is the table of flags, one row a setting: its flag (whose
// environment variable is SHORTENER_ and the name in capitals, - as _),
// the field it fills, the built-in default and the help `shortener -h`
// shows (and docs/operations.md's table, TestConfigDoc). To add a setting,
// add a field to its section and a row here; a package's setting is then
// validated by the package (validate).
func (c *Config) settings() []setting {
	return []setting{
		{"addr", &c.Server.Addr, "127.0.0.1:8081", "listen address"},
		{"instance", &c.Server.Instance, "", "instance name sent in X-Served-By (default app<node-id>)"},
		{"shutdown-timeout", &c.Server.ShutdownTimeout, 10 * time.Second, "how long to drain requests on SIGTERM"},
		{"drain-timeout", &c.Server.DrainTimeout, 5 * time.Second, "on SIGTERM, how long open connections may finish; keep it above the proxy's upstream keepalive timeout"},
		{"idle-timeout", &c.Server.IdleTimeout, 75 * time.Second, "keep-alive idle timeout; keep it above the proxy's upstream keepalive"},
		{"log-level", (*logLevel)(&c.Server.LogLevel), "info", "debug, info, warn or error"},
		{"pprof-addr", &c.Server.PprofAddr, "", "serve net/http/pprof on this loopback address, e.g. 127.0.0.1:6060 (empty: off)"},

		{"node-id", &c.Node.ID, "", "Snowflake node ID 0-1023, distinct per instance, or \"auto\" to claim a free one from MySQL (required)"},
		{"node-lease-ttl", &c.Node.LeaseTTL, 5 * time.Second, "lease on the node ID in MySQL; a restart after a crash waits up to this long"},
		{"code-key", (*secret)(&c.Node.CodeKey), idgen.DefaultKey, "secret that permutes IDs into codes; the same on every instance, at least 16 bytes (required: the built-in one is public)"},
		{"dev-code-key", &c.Node.DevCodeKey, false, "allow the built-in code key, whose codes anyone can decode (development only)"},

		{"mysql-dsn", (*dsn)(&c.MySQL.DSN), "", "MySQL DSN, user:pass@tcp(host:port)/db (required)"},
		{"mysql-nodes", (*list)(&c.MySQL.Nodes), "", "comma-separated host:port of every node of a MariaDB Galera cluster, in the order instances prefer them for writes; the DSN's address is then unused (empty: the DSN's server alone)"},
		{"mysql-max-open", &c.MySQL.MaxOpen, 32, "MySQL pool size"},
		{"mysql-max-idle", &c.MySQL.MaxIdle, 0, "idle MySQL connections kept (0: as many as mysql-max-open; fewer makes the pool close and reopen connections as the load varies)"},
		{"mysql-create-statements", &c.MySQL.CreateStatements, store.DefaultCreateStatements, "create INSERTs run at once; creates that arrive meanwhile wait and go in together, many rows to a statement"},
		{"mysql-timeout", &c.MySQL.QueryTimeout, time.Second, "deadline of every MySQL query"},
		{"mysql-dial-timeout", &c.MySQL.DialTimeout, 500 * time.Millisecond, "MySQL connect deadline"},
		{"migrate-timeout", &c.MySQL.MigrateTimeout, 30 * time.Second, "how long start-up waits for the database and migrations"},

		{"redis-master", &c.Redis.MasterName, "shortener", "Sentinel master name"},
		{"redis-sentinels", (*list)(&c.Redis.SentinelAddrs), "127.0.0.1:26380,127.0.0.1:26381,127.0.0.1:26382", "comma-separated Sentinel addresses"},
		{"redis-password", (*secretFile)(&c.Redis.Password), "", "password of every Redis node (requirepass)"},
		{"sentinel-password", (*secretFile)(&c.Redis.SentinelPassword), "", "password of the sentinels (their requirepass)"},
		{"redis-timeout", &c.Redis.Timeout, 50 * time.Millisecond, "deadline of every Redis call"},
		{"redis-pool", &c.Redis.PoolSize, 32, "Redis pool size"},
		{"breaker-failures", &c.Redis.BreakerFailures, uint(5), "Redis failures that open the breaker"},
		{"breaker-window", &c.Redis.BreakerWindow, uint(10), "recent Redis calls the failures are counted over"},
		{"breaker-delay", &c.Redis.BreakerDelay, time.Second, "how long the breaker stays open before trial calls"},
		{"breaker-successes", &c.Redis.BreakerSuccesses, uint(3), "trial calls that must succeed to close the breaker"},

		{"redis-ttl", &c.Cache.TTL, 24 * time.Hour, "how long a link stays in Redis"},
		{"l1-size", &c.Cache.L1Size, 50_000, "in-process cache size (entries)"},
		{"l1-bytes", &c.Cache.L1Bytes, int64(24 << 20), "in-process cache size (bytes its entries hold, estimated; with -l1-size, whichever binds first)"},
		{"l1-ttl", &c.Cache.L1TTL, 5 * time.Minute, "how long a link stays in the in-process cache while this instance reads the invalidation outbox in time (every delete and edit reaches it within one read even if its message is lost)"},
		{"l1-unsynced-ttl", &c.Cache.L1UnsyncedTTL, 5 * time.Second, "how long an in-process cache entry is trusted while this instance has not read the invalidation outbox for half the invalidation grace (MySQL unreachable from it); older entries are looked up again"},
		{"l1-negative-ttl", &c.Cache.L1NegativeTTL, time.Second, "how long an unknown code is remembered as unknown"},
		{"invalidation-replay", &c.Cache.ReplayInterval, 500 * time.Millisecond, "how often the pending invalidations are read from MySQL and sent to Redis again; under half the invalidation grace, or no read could show that none was missed"},
		{"invalidation-grace", &c.Cache.InvalidationGrace, 3 * time.Second, "how long an invalidation stays pending, so it is sent at least twice"},

		{"trending-tick", &c.Trending.Tick, 2 * time.Second, "how often counted clicks are sent to Redis's trending sets"},
		{"trending-refresh", &c.Trending.Refresh, 2 * time.Second, "how often trending answers are recomputed (the 5m window read from Redis)"},
		{"trending-topk", &c.Trending.Capacity, 1_000, "counters of each local top-K used while Redis is out (one per window bucket)"},
		{"trending-min-clients", &c.Trending.MinClients, 5, "clicks by distinct clients (a client's repeats of a link within a minute count once) a link needs in a window to appear on the public trending list"},
		{"trending-max-queued", &c.Trending.MaxQueued, 1_000_000, "link-minutes counted during a Redis outage kept for the merge-back; more are dropped from it"},
		{"trending-spool", &c.Trending.Spool, "", "file keeping the clicks counted during a Redis outage until they are merged back, so a restart does not lose them (default: trending.spool in the clicks directory; \"-\": memory only)"},

		{"clicks", &c.Clicks.On, true, "count clicks: journal each redirect on local disk and ship the journal to MySQL"},
		{"clicks-dir", &c.Clicks.Dir, "clicks", "directory of this instance's click journal (relative to the working directory); one instance per directory, on a volume that outlives the process"},
		{"clicks-max-bytes", &c.Clicks.MaxBytes, int64(1 << 30), "bound of the click journal on disk; past it (MySQL down long enough) new clicks are dropped and counted"},
		{"clicks-segment-bytes", &c.Clicks.SegmentBytes, int64(0), "size of a click journal segment, allocated whole when it begins, so a new one needs this much free space on the volume (0: a sixteenth of the max bytes, between 1 and 16 MiB)"},
		{"clicks-sync-interval", &c.Clicks.SyncInterval, time.Second, "how often the click journal is fsynced: what a machine crash (not a process crash) can lose"},
		{"clicks-ship-interval", &c.Clicks.ShipInterval, time.Second, "how long the click shipper waits, once it has shipped everything, before its next batch: a batch costs MySQL a row per link it holds, however many clicks, so a longer wait is less work for the database and later counts in the stats"},
		{"clicks-drain-timeout", &c.Clicks.DrainTimeout, 5 * time.Second, "on shutdown, how long to ship what the journal holds (the rest ships at the next start)"},
		{"clicks-max-request-age", &c.Clicks.MaxRequestAge, 30 * time.Second, "a redirect whose request nginx passed on longer ago than this is not counted (nginx gave up on it and retried elsewhere, or answered 504); must exceed nginx's longest wait for a redirect (1 s) plus the clock difference between nginx and the app"},
		{"clicks-request-hold", &c.Clicks.RequestHold, 24 * time.Hour, "how long a journal that has gone silent (an instance gone for good) keeps the counted request IDs it may still duplicate; one back after longer may count a request nginx retried twice"},

		{"analytics", &c.Analytics.Enabled, true, "derive each click's country, browser, OS, device and daily visitor hash (off: clicks count under \"unknown\" and nothing about the client is parsed)"},
		{"geo-db", &c.Analytics.GeoDB, "", "MMDB country database (DB-IP Lite or GeoLite2 Country, or any with country.iso_code) for click countries; empty: the DB-IP Lite file make geo installs; \"none\": no countries"},
		{"analytics-agent-cache", &c.Analytics.AgentCacheSize, 10_000, "User-Agent strings whose parse is remembered"},

		{"base-url", &c.Handler.BaseURL, "http://127.0.0.1:8080", "public prefix of short URLs"},
		{"idempotency-ttl", &c.Handler.IdempotencyTTL, 24 * time.Hour, "how long an Idempotency-Key replays its first answer"},
		{"anonymous-create", &c.Handler.AnonymousCreate, true, "let clients without an API key create links"},
		{"create-rate", &c.Handler.CreateRate, 1.0, "links an anonymous client address may create per second, over all instances together (0: no limit); nginx limits too"},
		{"create-burst", &c.Handler.CreateBurst, 10, "links an anonymous client address may create at once above the rate"},
		{"key-create-rate", &c.Handler.KeyCreateRate, 1000.0, "links one API key may create per second, over all instances together (0: no limit)"},
		{"key-create-burst", &c.Handler.KeyCreateBurst, 1000, "links one API key may create at once above the rate"},
		{"page-rate", &c.Handler.PageRate, 5.0, "previews (/{code}+) a client address may ask this instance for per second (0: no limit); nginx limits too"},
		{"page-burst", &c.Handler.PageBurst, 20, "previews a client address may ask for at once above the rate"},
		{"trusted-proxies", (*proxies)(&c.Handler.TrustedProxies), "", "comma-separated addresses or CIDR prefixes of the proxies whose X-Real-IP names the client (e.g. 127.0.0.1 for the local nginx); empty: the peer is the client"},
		{"referrer-policy", &c.Handler.ReferrerPolicy, "strict-origin-when-cross-origin", "Referrer-Policy sent with every redirect"},
		{"permanent-max-age", &c.Handler.PermanentMaxAge, time.Hour, "how long browsers may cache a 301 or 308 redirect"},
		{"trending-keyed", &c.Handler.TrendingKeyed, false, "GET /api/v1/trending needs an API key"},
		{"self-hosts", (*list)(&c.Handler.SelfHosts), "", "comma-separated host names that also reach this shortener (links to them are loops); the base URL's host is always one"},
		{"deny-hosts", (*list)(&c.Handler.DenyHosts), "", "comma-separated host names links may not point to (subdomains included)"},
		{"allow-local-targets", &c.Handler.AllowLocal, false, "let links point at loopback, unspecified and link-local addresses and localhost names (development only)"},
		{"api-key", (*secret)(&c.Handler.APIKey), "", "an API key from the configuration, besides those made with 'shortener keys create' (X-Api-Key)"},
		{"admin-key", (*secret)(&c.Handler.AdminKey), "", "an admin API key from the configuration: manages every link"},

		{"webhooks", &c.Webhooks.On, true, "send webhooks from this instance (instances may all send: a delivery is claimed by one at a time); off, events are still recorded and other instances send them"},
		{"webhooks-allow-private", &c.Webhooks.AllowPrivate, false, "let webhooks go to loopback, private and link-local addresses and localhost (tests and development only)"},
		{"webhooks-workers", &c.Webhooks.Workers, 8, "webhook attempts in flight at once on this instance"},
		{"webhooks-timeout", &c.Webhooks.Timeout, 10 * time.Second, "how long a webhook receiver has to answer an attempt"},
		{"webhooks-poll", &c.Webhooks.Poll, time.Second, "how often an idle instance looks for webhook deliveries that are due"},
		{"webhooks-retry-min", &c.Webhooks.RetryMin, 5 * time.Second, "wait after a webhook's first failed attempt, doubled after each further one"},
		{"webhooks-retry-max", &c.Webhooks.RetryMax, time.Hour, "longest wait between two attempts of a webhook delivery"},
		{"webhooks-max-age", &c.Webhooks.MaxAge, 24 * time.Hour, "how long after its event a webhook delivery is retried; the first failure past it gives the delivery up"},
	}
}

// parseConfig reads the configuration from getenv and args and validates
// it, naming every setting at fault in one error.
func parseConfig(args []string, getenv func(string) string, stderr io.Writer) (Config, error) {
	var c Config
	fs := flag.NewFlagSet("shortener", flag.ContinueOnError)
	fs.SetOutput(stderr)
	e := newEnvFlags(fs, getenv, c.settings())
	if err := fs.Parse(args); err != nil {
		return Config{}, err
	}
	if fs.NArg() > 0 {
		e.errs = append(e.errs, fmt.Errorf("unexpected arguments: %q", fs.Args()))
	}
	e.parsed()
	if c.Server.Instance == "" && !c.Node.ID.Auto { // an auto node ID's is the host's: see run
		c.Server.Instance = "app" + strconv.FormatInt(c.Node.ID.N, 10)
	}
	c.validate(e)
	if err := e.err(); err != nil {
		return Config{}, err
	}
	return c, nil
}

// validate checks every section by the rules of the package that owns
// it, on the Config that package will be given, and the settings that
// are cmd/shortener's own here. e names the flag of every field at fault.
func (c *Config) validate(e *envFlags) {
	e.check("server", &c.Server, c.Server.validate(), nil)
	e.check("node", &c.Node, c.Node.validate(), nil)
	e.check("node", &c.Node, c.leaseConfig().Validate(), map[string]any{"NodeID": &c.Node.ID, "TTL": &c.Node.LeaseTTL})
	e.check("mysql", &c.MySQL, c.MySQL.storeConfig().Validate(), nil)
	e.check("redis", &c.Redis, c.Redis.Validate(), nil)
	e.check("cache", &c.Cache, c.Cache.Validate(), nil)
	e.check("trending", &c.Trending, c.trendingConfig().Validate(), nil)
	if c.Clicks.On {
		e.check("clicks", &c.Clicks, c.Clicks.validate(), nil)
		e.check("clicks", &c.Clicks, c.clicksConfig().Validate(), nil)
		e.check("clicks", &c.Clicks, c.shipperConfig().Validate(), map[string]any{"Timeout": &c.MySQL.QueryTimeout, "Interval": &c.Clicks.ShipInterval})
	}
	e.check("analytics", &c.Analytics, c.Analytics.Validate(), nil)
	e.check("handler", &c.Handler, c.handlerConfig().Validate(), nil)
	e.check("webhooks", &c.Webhooks, c.Webhooks.Validate(), nil)
}

// validate checks what is the server's own: the pprof address.
func (s ServerConfig) validate() error {
	if err := checkPprofAddr(s.PprofAddr); err != nil {
		return shortener.Invalid("PprofAddr", "is refused: %v", err)
	}
	return nil
}

// validate refuses the built-in code key unless DevCodeKey allows it:
// with the public key anyone can decode a code to its node and
// millisecond and compute the next codes. idgen judges the key itself.
func (n NodeConfig) validate() error {
	if n.CodeKey == idgen.DefaultKey && !n.DevCodeKey {
		return shortener.Invalid("CodeKey", "is the built-in one, which anyone can read in the source: set a random secret (the same on every instance), or $SHORTENER_DEV_CODE_KEY=true for development")
	}
	if _, err := idgen.NewCodec(n.CodeKey); err != nil {
		return shortener.Invalid("CodeKey", "is refused: %v", err)
	}
	return nil
}

// LogValue logs every setting by its flag's name, secrets masked.
func (c Config) LogValue() slog.Value {
	var attrs []slog.Attr
	for _, s := range c.settings() {
		attrs = append(attrs, slog.Attr{Key: s.name, Value: s.logValue()})
	}
	return slog.GroupValue(attrs...)
}
