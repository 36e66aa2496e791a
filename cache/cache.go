// Package cache owns the redirect lookup path: Redis through a Sentinel
// failover client, guarded by a circuit breaker, in front of the origin
// (MySQL, the source of truth).
//
// The rules come from field reports on Redis outages:
//   - Every Redis call carries its own short deadline and go-redis honours
//     it on the socket (ContextTimeoutEnabled). A breaker or a timeout
//     wrapper alone cannot unblock a read on a frozen master's socket.
//   - go-redis does not retry: one lookup pays at most one deadline.
//   - A miss (redis.Nil) is an answer, not a failure.
//   - While the breaker is open or half-open, lookups go straight to the
//     origin and cache fills are skipped, so a sick Redis costs nothing.
//   - The breaker's trial calls in half-open bring lookups back to Redis as
//     soon as the new master answers.
package cache

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"strings"
	"time"

	"github.com/failsafe-go/failsafe-go/circuitbreaker"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/redis/go-redis/v9"

	"shortener/store"
)

// Origin answers lookups that Redis cannot: the source of truth.
type Origin interface {
	Link(ctx context.Context, code string) (store.Link, error)
}

// Config tunes the Redis client and the breaker.
type Config struct {
	MasterName    string
	SentinelAddrs []string
	Password      string

	// Timeout is the deadline of each Redis call, dial included. Keep it
	// in tens of milliseconds: it is the most a lookup pays for a frozen
	// master before the breaker opens.
	Timeout  time.Duration
	PoolSize int
	// TTL is how long a link stays in Redis (capped by its expiry).
	TTL time.Duration

	// The breaker opens when BreakerFailures of the last BreakerWindow
	// calls failed, stays open for BreakerDelay, then lets
	// BreakerSuccesses trial calls through; all must succeed to close.
	BreakerFailures  uint
	BreakerWindow    uint
	BreakerDelay     time.Duration
	BreakerSuccesses uint
}

func (c *Config) defaults() {
	if c.Timeout <= 0 {
		c.Timeout = 50 * time.Millisecond
	}
	if c.PoolSize <= 0 {
		c.PoolSize = 32
	}
	if c.TTL <= 0 {
		c.TTL = 24 * time.Hour
	}
	if c.BreakerFailures == 0 {
		c.BreakerFailures = 5
	}
	if c.BreakerWindow < c.BreakerFailures {
		c.BreakerWindow = 2 * c.BreakerFailures
	}
	if c.BreakerDelay <= 0 {
		c.BreakerDelay = time.Second
	}
	if c.BreakerSuccesses == 0 {
		c.BreakerSuccesses = 3
	}
}

// Cache resolves codes to links. It is safe for concurrent use.
type Cache struct {
	rdb     *redis.Client
	origin  Origin
	breaker circuitbreaker.CircuitBreaker[any]
	timeout time.Duration
	ttl     time.Duration
	log     *slog.Logger
	m       *metrics
	now     func() time.Time
}

// New connects lazily to the Sentinel group in cfg and returns a Cache in
// front of origin. Metrics are registered on reg.
func New(cfg Config, origin Origin, log *slog.Logger, reg prometheus.Registerer) (*Cache, error) {
	cfg.defaults()
	if cfg.MasterName == "" || len(cfg.SentinelAddrs) == 0 {
		return nil, errors.New("new cache: master name and sentinel addresses are required")
	}
	m, err := newMetrics(reg)
	if err != nil {
		return nil, fmt.Errorf("new cache: register metrics: %w", err)
	}
	rdb := redis.NewFailoverClient(&redis.FailoverOptions{
		MasterName:    cfg.MasterName,
		SentinelAddrs: cfg.SentinelAddrs,
		Password:      cfg.Password,
		// One deadline per call, enforced on the socket.
		ContextTimeoutEnabled: true,
		DialTimeout:           cfg.Timeout,
		ReadTimeout:           cfg.Timeout,
		WriteTimeout:          cfg.Timeout,
		PoolTimeout:           cfg.Timeout,
		// No retries: a retry would make one lookup wait several deadlines.
		MaxRetries:    -1,
		DialerRetries: 1,
		PoolSize:      cfg.PoolSize,
		MinIdleConns:  2,
	})
	c := &Cache{
		rdb:     rdb,
		origin:  origin,
		timeout: cfg.Timeout,
		ttl:     cfg.TTL,
		log:     log,
		m:       m,
		now:     time.Now,
	}
	c.breaker = circuitbreaker.NewBuilder[any]().
		WithFailureThresholdRatio(cfg.BreakerFailures, cfg.BreakerWindow).
		WithDelay(cfg.BreakerDelay).
		WithSuccessThreshold(cfg.BreakerSuccesses).
		OnStateChanged(c.onStateChanged).
		Build()
	return c, nil
}

// Close closes the Redis client.
func (c *Cache) Close() error { return c.rdb.Close() }

// BreakerState names the breaker's state: closed, open or half-open.
func (c *Cache) BreakerState() string { return c.breaker.State().String() }

func (c *Cache) onStateChanged(e circuitbreaker.StateChangedEvent) {
	c.m.transitions.WithLabelValues(e.OldState.String(), e.NewState.String()).Inc()
	c.m.state.Set(float64(e.NewState))
	level := slog.LevelWarn
	if e.NewState == circuitbreaker.ClosedState {
		level = slog.LevelInfo
	}
	c.log.Log(context.Background(), level, "redis breaker state changed",
		"from", e.OldState.String(), "to", e.NewState.String(),
		"failures", e.Metrics().Failures(), "executions", e.Metrics().Executions())
}

// key is the Redis key of a code.
func key(code string) string { return "link:" + code }

// Resolve returns the link for code: from Redis when it can, else from the
// origin, filling Redis on the way back after a clean miss while the
// breaker is closed. Errors are the origin's (store.ErrNotFound,
// store.ErrUnavailable).
func (c *Cache) Resolve(ctx context.Context, code string) (store.Link, error) {
	l, res := c.fromRedis(ctx, code)
	if res == resultHit {
		return l, nil
	}
	l, err := c.origin.Link(ctx, code)
	switch {
	case errors.Is(err, store.ErrNotFound):
		c.m.origin.WithLabelValues("not_found").Inc()
		return store.Link{}, err
	case err != nil:
		c.m.origin.WithLabelValues("error").Inc()
		return store.Link{}, err
	}
	c.m.origin.WithLabelValues("found").Inc()
	// Fill only after a clean miss: after an error Redis is likely sick,
	// and a second call would let one lookup wait two deadlines.
	if res == resultMiss {
		c.Add(ctx, l)
	}
	return l, nil
}

// Outcomes of a Redis lookup; the strings are the metric's labels.
const (
	resultHit     = "hit"
	resultMiss    = "miss"
	resultError   = "error"
	resultSkipped = "skipped"
)

// fromRedis looks code up in Redis and says how it went: a hit, a miss,
// an error, or skipped because the breaker holds Redis back.
func (c *Cache) fromRedis(ctx context.Context, code string) (store.Link, string) {
	l, res := c.lookup(ctx, code)
	c.m.redis.WithLabelValues(res).Inc()
	return l, res
}

func (c *Cache) lookup(ctx context.Context, code string) (store.Link, string) {
	if !c.breaker.TryAcquirePermit() {
		return store.Link{}, resultSkipped
	}
	val, err := c.call(ctx, func(ctx context.Context) (string, error) {
		return c.rdb.Get(ctx, key(code)).Result()
	})
	switch {
	case errors.Is(err, redis.Nil):
		return store.Link{}, resultMiss
	case err != nil:
		c.log.Debug("redis lookup failed", "code", code, "err", err)
		return store.Link{}, resultError
	}
	l, err := decode(code, val)
	if err != nil {
		// A value this version cannot read is a miss; the fill that
		// follows overwrites it.
		c.log.Warn("undecodable redis entry", "code", code, "err", err)
		return store.Link{}, resultMiss
	}
	return l, resultHit
}

// Add writes l into Redis, best effort: only while the breaker is closed,
// since a fill to a master being replaced is wasted or, worse, slow.
func (c *Cache) Add(ctx context.Context, l store.Link) {
	if l.Gone(c.now()) {
		return
	}
	ttl := c.ttl
	if !l.ExpiresAt.IsZero() {
		until := l.ExpiresAt.Sub(c.now())
		if until <= 0 {
			return
		}
		ttl = min(ttl, until)
	}
	if !c.breaker.IsClosed() || !c.breaker.TryAcquirePermit() {
		c.m.fills.WithLabelValues("skipped").Inc()
		return
	}
	_, err := c.call(ctx, func(ctx context.Context) (string, error) {
		return c.rdb.Set(ctx, key(l.Code), encode(l), ttl).Result()
	})
	if err != nil {
		c.m.fills.WithLabelValues("error").Inc()
		c.log.Debug("redis fill failed", "code", l.Code, "err", err)
		return
	}
	c.m.fills.WithLabelValues("ok").Inc()
}

// call runs one Redis command under its own deadline and records the
// outcome in the breaker. The deadline is detached from the caller's
// cancellation: a client that hangs up must not count against Redis.
func (c *Cache) call(ctx context.Context, fn func(context.Context) (string, error)) (string, error) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), c.timeout)
	defer cancel()
	val, err := fn(ctx)
	if err == nil || errors.Is(err, redis.Nil) {
		c.breaker.RecordSuccess()
	} else {
		c.breaker.RecordFailure()
	}
	return val, err
}

// encode writes a link as "v1 <redirect> <expires unix ms> <url>": the
// entry carries its own expiry, so a stale TTL can never outlive it.
func encode(l store.Link) string {
	var exp int64
	if !l.ExpiresAt.IsZero() {
		exp = l.ExpiresAt.UnixMilli()
	}
	return "v1 " + strconv.Itoa(l.Redirect) + " " + strconv.FormatInt(exp, 10) + " " + l.URL
}

func decode(code, val string) (store.Link, error) {
	parts := strings.SplitN(val, " ", 4)
	if len(parts) != 4 || parts[0] != "v1" {
		return store.Link{}, errors.New("unknown format")
	}
	redirect, err := strconv.Atoi(parts[1])
	if err != nil {
		return store.Link{}, fmt.Errorf("redirect: %w", err)
	}
	exp, err := strconv.ParseInt(parts[2], 10, 64)
	if err != nil {
		return store.Link{}, fmt.Errorf("expiry: %w", err)
	}
	l := store.Link{Code: code, URL: parts[3], Redirect: redirect}
	if exp != 0 {
		l.ExpiresAt = time.UnixMilli(exp).UTC()
	}
	return l, nil
}
