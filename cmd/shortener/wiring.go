package main

import (
	"strconv"

	"shortener/cache"
	"shortener/clicks"
	"shortener/handler"
	"shortener/idgen"
	"shortener/sentinel"
	"shortener/store"
	"shortener/trending"
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
)

// redisConfig is how the lookup path and the ranking reach Redis: one
// Sentinel group, one set of passwords, deadlines and breaker tuning. Each
// builds clients and breakers of its own from it, so a sick trending path
// never opens the lookup path's breakers. sentinel.Config validates it and
// has no defaults of its own: they are parseConfig's.
func (cfg Config) redisConfig() sentinel.Config {
	return sentinel.Config{
		MasterName:       cfg.RedisMaster,
		SentinelAddrs:    cfg.RedisSentinels,
		Password:         cfg.RedisPassword,
		SentinelPassword: cfg.SentinelPassword,
		Timeout:          cfg.RedisTimeout,
		PoolSize:         cfg.RedisPoolSize,
		BreakerFailures:  cfg.BreakerFailures,
		BreakerWindow:    cfg.BreakerWindow,
		BreakerDelay:     cfg.BreakerDelay,
		BreakerSuccesses: cfg.BreakerSuccesses,
	}
}

// cacheConfig is the cache's part of the configuration. cache.New validates it
// and has no defaults of its own: they are parseConfig's.
func (cfg Config) cacheConfig() cache.Config {
	return cache.Config{
		Redis:             cfg.redisConfig(),
		TTL:               cfg.RedisTTL,
		L1Size:            cfg.L1Size,
		L1TTL:             cfg.L1TTL,
		L1NegativeTTL:     cfg.L1NegativeTTL,
		ReplayInterval:    cfg.InvalidationReplay,
		InvalidationGrace: cfg.InvalidationGrace,
	}
}

// trendingConfig is the ranking's part of the configuration; like the
// cache, trending.New validates it and has no defaults of its own. The
// node name ties this instance's batches to its sequence mark in Redis:
// node IDs are unique among live instances.
func (cfg Config) trendingConfig() trending.Config {
	return trending.Config{
		Redis:      cfg.redisConfig(),
		Node:       "node-" + strconv.FormatInt(cfg.NodeID, 10),
		Prefix:     trending.KeyPrefix,
		Spool:      cfg.TrendingSpool,
		Tick:       cfg.TrendingTick,
		Refresh:    cfg.TrendingRefresh,
		Capacity:   cfg.TrendingTopK,
		MaxQueued:  cfg.TrendingMaxQueued,
		MinClients: cfg.TrendingMinClients,
	}
}
