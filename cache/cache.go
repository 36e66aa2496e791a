// Package cache owns the redirect lookup path: an in-process L1, then
// Redis through Sentinel (replicas for reads, the master for writes), each
// route behind its own circuit breaker, then the origin (MySQL, the source
// of truth), with one origin query per code at a time.
//
// The rules come from field reports on Redis outages:
//   - Every Redis call goes through package sentinel: its own short
//     deadline on the socket, no retries (one lookup pays at most one
//     deadline), a miss is an answer and not a failure.
//   - While a breaker is open or half-open, its route is skipped: lookups
//     go straight to the origin and fills are dropped.
//   - Sentinel's own events move the breakers early (a new master closes
//     them, a master seen down opens the write breaker), but the breakers
//     stay the final judge: a wrong or missing event costs latency, never
//     a failed lookup, because every Redis failure falls back to MySQL.
//   - A delete is committed with an invalidation record in MySQL; the
//     record is replayed to Redis until it lands, and codes with a pending
//     invalidation bypass Redis, so a deleted link never comes back from a
//     stale Redis entry.
//   - A lost message must not cost more than one outbox read: every
//     instance reads the records often enough to miss none, and its L1
//     entries live long only while it does (sync.go).
package cache

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"shortener"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"golang.org/x/sync/singleflight"

	"shortener/sentinel"
)

// Origin answers lookups that the caches cannot: the source of truth.
type Origin interface {
	Link(ctx context.Context, code string) (shortener.Link, error)
}

// Outbox holds invalidations that must reach Redis.
type Outbox interface {
	// PendingInvalidations returns every code with an invalidation
	// recorded, each once, however many there are: each must bypass Redis.
	PendingInvalidations(ctx context.Context) ([]shortener.Invalidation, error)
	// DoneInvalidations removes the records of codes that are older than
	// grace by the database's clock (one clock for every instance).
	DoneInvalidations(ctx context.Context, codes []string, grace time.Duration) error
}

// Config tunes the caches, and how they reach Redis.
type Config struct {
	// Redis is the Sentinel group and the breakers' tuning; the lookup
	// path has clients and breakers of its own, one pair for the
	// replicas (reads) and one for the master (writes).
	Redis sentinel.Config
	// TTL is how long a link stays in Redis (capped by its expiry).
	TTL time.Duration

	// L1Size bounds the in-process cache in entries and L1Bytes in bytes
	// (an estimate of what its entries hold: URLs are up to 2 KiB, so a
	// count alone bounds no memory); L1TTL is how long a link stays there
	// while this instance keeps up with the invalidation outbox, and
	// L1UnsyncedTTL how long an entry is trusted while it cannot show
	// that it does (sync.go); L1NegativeTTL is how long "no such code"
	// stays.
	L1Size        int
	L1Bytes       int64
	L1TTL         time.Duration
	L1UnsyncedTTL time.Duration
	L1NegativeTTL time.Duration

	// ReplayInterval is how often pending invalidations are read from
	// MySQL and sent to Redis; InvalidationGrace is how long each stays
	// pending after it was recorded, so it is sent more than once and
	// beats a concurrent fill that read the link just before the delete.
	ReplayInterval    time.Duration
	InvalidationGrace time.Duration
}

// Validate reports every setting of the cache's own that New cannot work
// with, all at once, each a *shortener.SettingError naming its field.
// Redis is sentinel.Config's to validate (New checks both). The defaults
// live with the configuration (cmd/shortener); a zero here is a wiring
// mistake, not a request for a default.
func (c Config) Validate() error {
	var errs []error
	for _, d := range []struct {
		field string
		v     time.Duration
	}{
		{"TTL", c.TTL}, {"L1TTL", c.L1TTL}, {"L1UnsyncedTTL", c.L1UnsyncedTTL}, {"L1NegativeTTL", c.L1NegativeTTL},
		{"ReplayInterval", c.ReplayInterval}, {"InvalidationGrace", c.InvalidationGrace},
	} {
		if d.v <= 0 {
			errs = append(errs, shortener.Invalid(d.field, "must be positive, got %s", d.v))
		}
	}
	// Every record stays in the outbox at least the grace, so reads
	// less than half of it apart miss none (sync.go).
	if c.ReplayInterval > 0 && c.InvalidationGrace > 0 && c.ReplayInterval >= syncBound(c.InvalidationGrace) {
		errs = append(errs, shortener.Invalid("ReplayInterval", "must be less than half the InvalidationGrace (%s), got %s", c.InvalidationGrace, c.ReplayInterval))
	}
	if c.L1Size <= 0 {
		errs = append(errs, shortener.Invalid("L1Size", "must be positive, got %d", c.L1Size))
	}
	if c.L1Bytes < l1EntryOverhead {
		errs = append(errs, shortener.Invalid("L1Bytes", "must be at least %d (one entry), got %d", l1EntryOverhead, c.L1Bytes))
	}
	return errors.Join(errs...)
}

// Cache resolves codes to links. It is safe for concurrent use; Run must
// be running for invalidations and Sentinel events to be handled.
type Cache struct {
	cfg Config
	// tombstoneTTL is how long a delete's tombstone stops fills in Redis
	// (fill.go).
	tombstoneTTL time.Duration
	l1           *l1
	read         *sentinel.Client // replicas
	reads        *reads           // lookups' reads on read, sharing round trips
	write        *sentinel.Client // master
	origin       Origin
	outbox       Outbox
	flight       singleflight.Group
	pending      pendingSet
	gens         *generations
	sync         outboxSync // sync.go
	fills        chan fill
	// sentinels answer how many replicas the master has (replicas.go)
	// and tell of failovers (events.go).
	sentinels *sentinel.Sentinels
	log       *slog.Logger
	m         *metrics
	now       func() time.Time

	// afterOrigin, when set (tests), runs inside the shared origin query
	// once MySQL answered, before any fill: it forces interleavings.
	afterOrigin func(code string)
	// beforeFillSend, when set (tests), runs on the fill goroutine after
	// a fill passed this instance's own checks, just before it is sent to
	// Redis: the window in which another instance's delete may land.
	beforeFillSend func(code string)
	// beforeLimitSend, when set (tests), runs on the limiter goroutine
	// before a batch of counts is sent to the master.
	beforeLimitSend func()

	limits *limits // shared create limits (limit.go)

	// promoted is the last +switch-master heard; following is set while
	// followMaster runs (events.go).
	promoted  atomic.Pointer[promotion]
	following atomic.Bool
}

// New returns a Cache in front of origin; Redis is connected lazily.
// Metrics are registered on reg.
func New(cfg Config, origin Origin, outbox Outbox, log *slog.Logger, reg prometheus.Registerer) (*Cache, error) {
	if err := errors.Join(cfg.Redis.Validate(), cfg.Validate()); err != nil {
		return nil, fmt.Errorf("new cache: %w", err)
	}
	m, err := newMetrics(reg, cfg.Redis.Timeout)
	if err != nil {
		return nil, fmt.Errorf("new cache: register metrics: %w", err)
	}
	c := &Cache{
		cfg: cfg,
		// A fill is sent at most fillMaxAge (checked) plus one deadline
		// after its read began, and the read began before the delete
		// committed, so before its tombstone was written: the tombstone
		// outlives every fill that read the link before the delete.
		tombstoneTTL: 2*fillMaxAge + 2*cfg.Redis.Timeout,
		origin:       origin,
		outbox:       outbox,
		log:          log,
		m:            m,
		now:          time.Now,
		gens:         newGenerations(),
		sentinels:    sentinel.NewSentinels(cfg.Redis),
		fills:        make(chan fill, fillQueue),
		limits:       newLimits(),
	}
	c.sync.born, c.sync.bound = c.now(), syncBound(cfg.InvalidationGrace)
	c.l1 = newL1(cfg.L1Size, cfg.L1Bytes, cfg.L1TTL, cfg.L1NegativeTTL, func() time.Time { return c.now() }, c.since)
	c.read = sentinel.NewClient(cfg.Redis, sentinel.Replicas, sentinel.NewBreaker(cfg.Redis, breakerRead, m.breakers, log))
	c.write = sentinel.NewClient(cfg.Redis, sentinel.Master, sentinel.NewBreaker(cfg.Redis, breakerWrite, m.breakers, log))
	c.reads = newReads(c.read, cfg.Redis.Timeout, func(n int) { m.readKeys.Observe(float64(n)) })
	return c, nil
}

// Close closes the Redis clients.
func (c *Cache) Close() error {
	return errors.Join(c.read.Close(), c.write.Close(), c.sentinels.Close())
}

// BreakerStates names the state of each breaker: closed, open or
// half-open.
func (c *Cache) BreakerStates() (read, write string) {
	return c.read.Breaker().State(), c.write.Breaker().State()
}

// Run handles what arrives from outside a lookup until ctx ends: Sentinel
// events, invalidation messages from other instances, the replay of
// pending invalidations, the Redis fills lookups and creates queue, and
// the counts of the shared rate limits.
func (c *Cache) Run(ctx context.Context) error {
	var wg sync.WaitGroup
	for _, fn := range []func(context.Context){c.watchSentinels, c.subscribe, c.followOutbox, c.replay, c.writeFills, c.sendTakes, c.probeStalls} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			fn(ctx)
		}()
	}
	wg.Wait()
	return nil
}

// probeStalls sets a timer every stallTick and records how late it fired
// (see StallBound) until ctx ends.
func (c *Cache) probeStalls(ctx context.Context) {
	t := time.NewTimer(stallTick)
	defer t.Stop()
	due := time.Now().Add(stallTick)
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			// Read after the goroutine runs (not the timer's own time),
			// so waiting to be scheduled counts too.
			now := time.Now()
			c.m.stalls.Observe(max(0, now.Sub(due)).Seconds())
			due = now.Add(stallTick)
			t.Reset(stallTick)
		}
	}
}

// Resolve returns the link for code, which may be expired or deleted (the
// caller decides what Gone means). It tries L1, then a Redis replica, then
// MySQL, and fills the faster tiers on the way back (Redis off the
// request's path). Errors are the origin's: shortener.ErrNotFound,
// shortener.ErrUnavailable.
func (c *Cache) Resolve(ctx context.Context, code string) (shortener.Link, error) {
	c.m.lookups.Inc()
	if e, ok := c.l1.get(code); ok {
		switch {
		case !e.found:
			c.m.l1NegHit.Inc()
			return shortener.Link{}, fmt.Errorf("get link %s: %w", code, shortener.ErrNotFound)
		case c.trusted(e):
			c.m.l1Hit.Inc()
			return e.link(code), nil
		}
		c.m.l1Untrusted.Inc() // older than L1UnsyncedTTL while out of sync: looked up again
	} else {
		c.m.l1Miss.Inc()
	}

	// Read before any tier: an invalidation from here on moves it, and
	// what this lookup read is then not put into L1.
	gen := c.gens.get(code)
	res := resultSkipped
	if !c.pending.has(code) {
		var l shortener.Link
		l, res = c.fromRedis(code)
		if res == resultHit {
			c.gens.ifUnchanged(code, gen, func() { c.l1.put(l) })
			return l, nil
		}
	} else {
		c.m.redis.WithLabelValues(roleReplica, resultSkipped).Inc()
	}

	l, originGen, read, err := c.fromOrigin(ctx, code)
	switch {
	case errors.Is(err, shortener.ErrNotFound):
		c.gens.ifUnchanged(code, originGen, func() { c.l1.putMissing(code) })
		return shortener.Link{}, err
	case err != nil:
		return shortener.Link{}, err
	}
	c.gens.ifUnchanged(code, originGen, func() { c.l1.put(l) })
	// Fill Redis only after a clean miss: after an error Redis is likely
	// sick.
	if res == resultMiss {
		c.enqueue(fill{link: l, gen: originGen, read: read})
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

// fromRedis looks code up on a replica and says how it went.
func (c *Cache) fromRedis(code string) (shortener.Link, string) {
	l, res := c.lookupRedis(code)
	c.m.redis.WithLabelValues(roleReplica, res).Inc()
	return l, res
}

// fromOrigin asks MySQL, sharing one query among concurrent lookups of the
// same code. The query runs detached from any one caller's cancellation,
// under the store's own deadline, so one impatient client cannot fail the
// others waiting on it. It returns the code's generation read before the
// query began, which every caller sharing it checks before its L1 put,
// and when the query began, which bounds how old a Redis fill may be.
func (c *Cache) fromOrigin(ctx context.Context, code string) (shortener.Link, uint64, time.Time, error) {
	type answer struct {
		link shortener.Link
		gen  uint64
		read time.Time
	}
	v, err, shared := c.flight.Do(code, func() (any, error) {
		gen, read := c.gens.get(code), c.now()
		l, err := c.origin.Link(context.WithoutCancel(ctx), code)
		if c.afterOrigin != nil {
			c.afterOrigin(code)
		}
		switch {
		case errors.Is(err, shortener.ErrNotFound):
			c.m.origin.WithLabelValues("not_found").Inc()
		case err != nil:
			c.m.origin.WithLabelValues("error").Inc()
		default:
			c.m.origin.WithLabelValues("found").Inc()
		}
		return answer{l, gen, read}, err
	})
	if shared {
		c.m.shared.Inc()
	}
	a, _ := v.(answer)
	if err != nil {
		return shortener.Link{}, a.gen, a.read, err
	}
	return a.link, a.gen, a.read, nil
}

// Add announces a link just created: this instance forgets any "no such
// code" it kept, and, off the request's path, the link is written to Redis
// and announced to the other instances, which forget theirs. Nothing here
// waits on Redis; with the write breaker open the Redis part is dropped
// (other instances' negative entries then expire within their short TTL).
func (c *Cache) Add(_ context.Context, l shortener.Link) { c.add(l, true) }

// AddIssued is Add for a link whose code was issued by its create (a
// Snowflake ID's, not a client's alias): the link is written to Redis
// but not announced. Another instance keeps "no such code" only from a
// lookup that read MySQL before the commit, and an issued code is known
// to no one before its create answers: it is a secret permutation of an
// ID not yet drawn, so such a lookup is a blind guess of one code among
// trillions. Sparing the announcement spares every instance a message
// per create (and Redis its fan-out): with eight instances subscribed,
// as in make bench, the six that served none of the creates spent 0.4
// of a core hearing them.
func (c *Cache) AddIssued(_ context.Context, l shortener.Link) { c.add(l, false) }

// add is Add, announcing the link or not.
func (c *Cache) add(l shortener.Link, announce bool) {
	c.forget(l.Code)
	c.enqueue(fill{link: l, gen: c.gens.get(l.Code), read: c.now(), announce: announce})
}

// addBatch is how many links one pipeline of AddMany carries.
const addBatch = 1000

// AddMany writes links to Redis now, for a bulk warm-up (a data set ahead
// of a benchmark, or Redis nodes that restarted empty), not on a request's
// path as Add's queued fills are: each batch of addBatch goes in one
// script call, under one deadline and one breaker permit, so a million
// links take a thousand round trips. Links gone or with an invalidation
// pending are skipped, and Redis skips those with a tombstone (deleted in
// the last tombstoneTTL); links must be fresh from MySQL, as a fill's are
// (read within fillMaxAge), or a delete older than the tombstone could be
// undone. It returns how many links Redis took.
func (c *Cache) AddMany(ctx context.Context, links []shortener.Link) int {
	now := c.now()
	var ok, failed, skipped, deleted int
	for start := 0; start < len(links); start += addBatch {
		batch := make([]shortener.Link, 0, addBatch)
		for _, l := range links[start:min(start+addBatch, len(links))] {
			if l.Gone(now) || c.pending.has(l.Code) {
				skipped++
				continue
			}
			batch = append(batch, l)
		}
		switch {
		case len(batch) == 0:
		case !c.write.Breaker().IsClosed() || !c.write.Breaker().Allow():
			skipped += len(batch)
		default:
			n, err := c.setLinks(ctx, batch, func(l shortener.Link) time.Duration { return c.redisTTL(l, now) }, nil)
			if err != nil {
				failed += len(batch)
				c.log.Debug("redis bulk fill failed", "links", len(batch), "err", err)
				continue
			}
			ok += n
			deleted += len(batch) - n
		}
	}
	c.m.fills.WithLabelValues("ok").Add(float64(ok))
	c.m.fills.WithLabelValues("error").Add(float64(failed))
	c.m.fills.WithLabelValues("skipped").Add(float64(skipped))
	c.m.fills.WithLabelValues(fillDeleted).Add(float64(deleted))
	return ok
}

// redisTTL is how long l may stay in Redis: the configured TTL, capped by
// the link's own expiry.
func (c *Cache) redisTTL(l shortener.Link, now time.Time) time.Duration {
	if l.ExpiresAt.IsZero() {
		return c.cfg.TTL
	}
	return min(c.cfg.TTL, l.ExpiresAt.Sub(now))
}
