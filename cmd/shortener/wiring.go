package main

import (
	"crypto/hmac"
	"crypto/sha256"
	"path/filepath"
	"strconv"
	"time"

	"shortener/cache"
	"shortener/clicks"
	"shortener/handler"
	"shortener/idgen"
	"shortener/lease"
	"shortener/store"
	"shortener/trending"
	"shortener/webhook"
)

// The packages declare the small interfaces they consume; main wires in
// the concrete types. These assertions turn a method that drifts out of
// step into a compile error here, where the wiring is, instead of a
// mismatch found only when the whole program is built.
var (
	// The cache answers redirects, warms new links and forgets deleted ones.
	_ handler.Resolver    = (*cache.Cache)(nil)
	_ handler.Warmer      = (*cache.Cache)(nil)
	_ handler.Invalidator = (*cache.Cache)(nil)

	// MySQL is the source of truth behind the handler and the cache.
	_ handler.Links    = (*store.Store)(nil)
	_ handler.Pinger   = (*store.Store)(nil)
	_ handler.KeyStore = (*store.Store)(nil)
	_ handler.Lister   = (*store.Store)(nil)
	_ cache.Origin     = (*store.Store)(nil)
	_ cache.Outbox     = (*store.Store)(nil)

	_ handler.IDs = (*idgen.Generator)(nil)

	// The ranking serves trending and resolves what it ranks through the
	// lookup path.
	_ handler.Trender   = (*trending.Ranking)(nil)
	_ trending.Resolver = (*cache.Cache)(nil)
	// Clicks: the journal records redirects, MySQL counts them and
	// answers the stats API.
	_ handler.Recorder = (*clicks.Journal)(nil)
	_ handler.Stats    = (*store.Store)(nil)
	_ clicks.Sink      = (*store.Store)(nil)

	// Webhooks: the API keeps them through the book, over MySQL, which
	// also holds the deliveries the sender claims.
	_ handler.Webhooks = (*webhook.Book)(nil)
	_ webhook.Registry = (*store.Store)(nil)
	_ webhook.Store    = (*store.Store)(nil)
)

// Each package's Config is its section of the configuration plus what
// follows from other sections; each package validates its own
// (Config.validate calls the same Validate on the same conversion) and
// has no defaults of its own: they are the settings table's.

// cacheConfig is the lookup path's: its section, with the Redis section.
// The lookup path and the ranking reach the one Sentinel group with the
// same passwords, deadlines and breaker tuning, but each builds clients
// and breakers of its own, so a sick trending path never opens the lookup
// path's breakers.
func (cfg Config) cacheConfig() cache.Config {
	c := cfg.Cache
	c.Redis = cfg.Redis
	return c
}

// trendingConfig is the ranking's: its section, with the Redis section
// and a node name that ties this instance's batches to its sequence mark
// in Redis (node IDs are unique among live instances). The spool lives
// beside the click journal unless set ("-": memory only): the same
// volume that must outlive the process, one instance per directory.
func (cfg Config) trendingConfig() trending.Config {
	t := cfg.Trending
	t.Redis = cfg.Redis
	t.Node = "node-" + strconv.FormatInt(cfg.Node.ID.N, 10)
	t.Prefix = trending.KeyPrefix
	switch t.Spool {
	case "":
		t.Spool = filepath.Join(cfg.Clicks.Dir, "trending.spool")
	case "-":
		t.Spool = ""
	}
	return t
}

// storeConfig is MySQL's pool. A pool that keeps fewer idle connections
// than it opens closes one whenever a request ends with the idle slots
// full, and dials again on the next burst: at 32 creates in flight
// against 16 idle slots that was one new MySQL connection per 6 creates,
// and 8-23% of the app's CPU per create. So unless told otherwise every
// connection opened is kept (the driver's own advice). The peak stays
// max open; MaxLifetime still recycles them.
func (m MySQLConfig) storeConfig() store.Config {
	c := m.Config
	if c.MaxIdle == 0 {
		c.MaxIdle = c.MaxOpen
	}
	c.MaxLifetime = 5 * time.Minute
	return c
}

// maxClockWait is how far behind the last issued ID the clock may be at
// start-up before the instance refuses to start rather than wait.
const maxClockWait = 15 * time.Second

// leaseConfig is the node ID lease's.
func (cfg Config) leaseConfig() lease.Config {
	return lease.Config{NodeID: cfg.Node.ID.N, Auto: cfg.Node.ID.Auto, MaxNode: idgen.MaxNode,
		Instance: cfg.Server.Instance, TTL: cfg.Node.LeaseTTL, MaxClockWait: maxClockWait}
}

// handlerConfig is the handler's: its section, with the instance's name,
// the pages on, the policy of target URLs, and the key cookie's secret.
func (cfg Config) handlerConfig() handler.Config {
	h := cfg.Handler.Config
	h.Instance = cfg.Server.Instance
	h.Pages = true
	h.CookieSecret = cookieSecret(cfg.Node.CodeKey)
	h.Policy = handler.NewURLPolicy(h.BaseURL, cfg.Handler.SelfHosts, cfg.Handler.DenyHosts, cfg.Handler.AllowLocal)
	h.WebhookTargets = webhook.Targets{AllowPrivate: cfg.Webhooks.AllowPrivate}.Allows
	return h
}

// cookieSecret is the key that signs the pages' key cookie, derived from
// the code key: a secret every instance already shares, so a cookie one
// instance set is good on the others, and that never leaves the servers.
func cookieSecret(codeKey string) []byte {
	m := hmac.New(sha256.New, []byte(codeKey))
	m.Write([]byte("shortener: key cookie"))
	return m.Sum(nil)
}
