package cache

import (
	"math"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"shortener/sentinel"
)

// metrics counts what each tier of the lookup path did. They are the
// evidence the chaos runs and tests read: "lookups went back to Redis" is a
// counter moving, not a sleep.
type metrics struct {
	lookups prometheus.Counter
	l1      *prometheus.CounterVec // result: hit, negative_hit, miss
	// The L1 outcomes, resolved once: every redirect counts one, and a
	// label lookup per request is work the hot path need not do.
	l1Hit, l1NegHit, l1Miss, l1Untrusted prometheus.Counter
	l1Flushes                            *prometheus.CounterVec
	redis                                *prometheus.CounterVec // role, result: hit, miss, error, skipped
	redisWait                            prometheus.Histogram   // seconds a lookup spent on Redis
	readKeys                             prometheus.Histogram   // keys per MGET of the lookups
	stalls                               prometheus.Histogram   // seconds the stall probe's timer fired late
	fills                                *prometheus.CounterVec // result: ok, error, skipped, dropped
	origin                               *prometheus.CounterVec // result: found, not_found, error (one per query)
	shared                               prometheus.Counter
	breakers                             *sentinel.Metrics      // read, write
	events                               *prometheus.CounterVec // event
	pending                              prometheus.Gauge
	replayed                             prometheus.Gauge
	invalidated                          *prometheus.CounterVec // result: sent, error, skipped, announced
	limits                               *prometheus.CounterVec // result: ok, error, skipped, dropped
}

// waitBuckets are the Redis lookup histogram's bounds, in deadlines. What
// docs/design.md promises ("no request waits more than one Redis deadline") is
// the count above waitPromise deadlines, which leaves a quarter of a
// deadline for the scheduler.
var waitBuckets = []float64{0.02, 0.05, 0.1, 0.25, 0.5, 1, waitPromise, 2}

// waitPromise is one deadline plus schedulerAllowance.
const (
	schedulerAllowance = 0.25
	waitPromise        = 1 + schedulerAllowance
)

// RedisWaitBound is the bucket bound, in seconds, of
// shortener_redis_lookup_duration_seconds above which a lookup broke the
// promise, for the deadline the app runs with: the chaos runs read it.
func RedisWaitBound(deadline time.Duration) float64 { return waitBound(waitPromise, deadline) }

// A lookup's time on Redis includes any time the process could not run:
// a lookup in flight while the machine or the process stalls (a busy
// host, a page-fault storm) times the stall as Redis wait. The stall
// probe measures those stalls (shortener_stall_seconds: how late a timer
// fired, every stallTick), in the same units, so that a reader of the
// wait histogram can tell "Redis made us wait" from "nothing here ran".
// A lookup up to stallExcuse deadlines is explained by a stall of more
// than the scheduler's quarter deadline in the same stretch; one beyond
// it is not, whatever stalled.
var stallBuckets = []float64{0.1, schedulerAllowance, 0.5, 1, 2}

const (
	stallTick   = 10 * time.Millisecond
	stallExcuse = 2
)

// StallBound is the bucket bound, in seconds, of shortener_stall_seconds
// above which a stall of the process leaves a lookup's time on Redis
// unexplained up to RedisWaitLimit; RedisWaitLimit is the bound of
// shortener_redis_lookup_duration_seconds above which no stall explains
// it. The chaos runs read both.
func StallBound(deadline time.Duration) float64 { return waitBound(schedulerAllowance, deadline) }

// RedisWaitLimit: see StallBound.
func RedisWaitLimit(deadline time.Duration) float64 { return waitBound(stallExcuse, deadline) }

// waitBound is f deadlines in seconds, rounded to the microsecond:
// "0.0025", not "0.0025000000000000005".
func waitBound(f float64, deadline time.Duration) float64 {
	return math.Round(f*deadline.Seconds()*1e6) / 1e6
}

func newMetrics(reg prometheus.Registerer, deadline time.Duration) (*metrics, error) {
	inDeadlines := func(fs []float64) []float64 {
		bounds := make([]float64, len(fs))
		for i, f := range fs {
			bounds[i] = waitBound(f, deadline)
		}
		return bounds
	}
	m := &metrics{
		lookups: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "shortener_lookups_total",
			Help: "Redirect lookups (Resolve calls).",
		}),
		l1: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "shortener_l1_lookups_total",
			Help: "In-process cache lookups by result: hit, negative_hit (known missing code), miss, untrusted (an entry older than the unsynced TTL while this instance is out of sync with the invalidation outbox: looked up again).",
		}, []string{"result"}),
		l1Flushes: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "shortener_l1_flushes_total",
			Help: "Times this instance dropped its whole in-process cache, by reason: resubscribed (the invalidation channel was re-established), unsynced (the invalidation outbox went unread for longer than half the invalidation grace), requested (a flush sent to every instance).",
		}, []string{"reason"}),
		redis: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "shortener_redis_lookups_total",
			Help: "Redis lookups by node role and result: hit, miss, error, or skipped (breaker not closed, or invalidation pending).",
		}, []string{"role", "result"}),
		redisWait: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "shortener_redis_lookup_duration_seconds",
			Help:    "Time a lookup spent on Redis (a replica read, its wait for a round trip shared with other lookups included), which the Redis deadline bounds; the buckets are fractions and multiples of that deadline.",
			Buckets: inDeadlines(waitBuckets),
		}),
		readKeys: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "shortener_redis_lookup_batch_keys",
			Help:    "Keys per MGET sent for lookups: concurrent lookups that reach Redis share a round trip (cache/reads.go).",
			Buckets: []float64{1, 2, 4, 8, 16, 32, 64},
		}),
		stalls: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "shortener_stall_seconds",
			Help:    "How late a timer set every 10 ms fired in this process: time it could not run (a busy host, a stalled VM, a long GC). A lookup in flight counts such a stall in shortener_redis_lookup_duration_seconds; the buckets are the same fractions and multiples of the Redis deadline.",
			Buckets: inDeadlines(stallBuckets),
		}),
		fills: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "shortener_redis_fills_total",
			Help: "Writes of a link into Redis (master) after a miss or a create, by result; they run off the request path, and dropped counts those the full queue refused.",
		}, []string{"result"}),
		origin: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "shortener_mysql_queries_total",
			Help: "Link queries sent to MySQL by the lookup path, by result; concurrent lookups of one code share one query.",
		}, []string{"result"}),
		shared: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "shortener_mysql_shared_lookups_total",
			Help: "Lookups that shared another lookup's MySQL query (singleflight).",
		}),
		events: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "shortener_sentinel_events_total",
			Help: "Sentinel events acted on: switch_master, odown.",
		}, []string{"event"}),
		pending: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "shortener_invalidations_pending",
			Help: "Cache invalidations recorded in MySQL and not yet confirmed in Redis.",
		}),
		replayed: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "shortener_invalidations_read_timestamp_seconds",
			Help: "When this instance last read the pending invalidations from MySQL (Unix seconds). While the Redis master is gone that read is its only news of other instances' deletes and edits: a time falling behind means it may serve them stale.",
		}),
		invalidated: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "shortener_invalidations_total",
			Help: "Batches of invalidations sent to Redis (tombstone, DEL and PUBLISH in a transaction), by result: sent, error, skipped (write breaker not closed), announced (the master refused the transaction for want of memory, and took the DEL and PUBLISH alone; an error of the same batch is counted too).",
		}, []string{"result"}),
		limits: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "shortener_rate_limit_counts_total",
			Help: "Admitted creates counted against the shared rate limits in Redis, off the request path: ok, error, skipped (write breaker not closed), dropped (queue full).",
		}, []string{"result"}),
	}
	for _, c := range []prometheus.Collector{m.lookups, m.l1, m.l1Flushes, m.redis, m.redisWait, m.readKeys, m.stalls, m.fills, m.origin, m.shared,
		m.events, m.pending, m.replayed, m.invalidated, m.limits} {
		if err := reg.Register(c); err != nil {
			return nil, err
		}
	}
	var err error
	m.breakers, err = sentinel.NewMetrics(reg, "shortener_breaker",
		"the lookup path's Redis breakers: read (replicas) or write (master)", breakerRead, breakerWrite)
	if err != nil {
		return nil, err
	}
	// Start every series at zero so a scrape shows them before they move.
	m.l1Hit, m.l1NegHit, m.l1Miss = m.l1.WithLabelValues("hit"), m.l1.WithLabelValues("negative_hit"), m.l1.WithLabelValues("miss")
	m.l1Untrusted = m.l1.WithLabelValues("untrusted")
	for _, r := range []string{flushResubscribed, flushUnsynced, flushRequested} {
		m.l1Flushes.WithLabelValues(r)
	}
	for _, r := range []string{resultHit, resultMiss, resultError, resultSkipped} {
		m.redis.WithLabelValues(roleReplica, r)
	}
	for _, r := range fillResults {
		m.fills.WithLabelValues(r)
	}
	for _, r := range []string{"found", "not_found", "error"} {
		m.origin.WithLabelValues(r)
	}
	for _, e := range []string{"switch_master", "odown"} {
		m.events.WithLabelValues(e)
	}
	for _, r := range []string{"sent", "error", "skipped", "announced"} {
		m.invalidated.WithLabelValues(r)
	}
	for _, r := range []string{"ok", "error", "skipped", "dropped"} {
		m.limits.WithLabelValues(r)
	}
	return m, nil
}
