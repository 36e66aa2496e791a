// Package visits enforces a link's maximum visits (shortener.Link's
// MaxVisits): after that many counted redirects the link answers 410 on
// every instance.
//
// The count lives in Redis, one counter per link (visitsKey), checked and
// raised by one script, so that while Redis answers the limit is exact
// across instances: the Nth visit is granted once, the N+1st never. A
// counter Redis does not have (a link just given a limit, a Redis that
// lost its data) starts from the clicks MySQL holds for the link (Counter);
// clicks still in an instance's journal are not among them, so a limit set
// on a link being clicked at that moment may allow those few more.
//
// While Redis cannot be reached (its breaker open, a call failing), an
// instance grants on its own at most Budget visits per link, and only
// while the count it last saw plus its own grants stay below the limit:
// it never ends a link early (a link answers 410 only once Redis's count,
// or that last sighting plus its own grants, has reached the limit), and
// each instance serves at most Budget more than the limit. Past its
// budget it answers ErrUnavailable (503, retry) until Redis is back. Its
// grants are added to Redis's counter when Redis answers again; an
// instance killed before that loses them (at most Budget per link).
// A failover can also forget the last increments the old master had not
// yet replicated (a few milliseconds' worth).
package visits

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/redis/go-redis/v9"

	"shortener"
	"shortener/sentinel"
)

// Budget is how many visits per link an instance grants on its own while
// Redis is out of reach.
const Budget = 3

// ErrExhausted means the link has had its maximum visits.
var ErrExhausted = shortener.ErrExhausted

// Counter gives a link's stored click count: store.Store.
type Counter interface {
	ClickTotal(ctx context.Context, linkID int64) (int64, error)
}

// takeScript grants one visit of KEYS[1] if fewer than ARGV[1] were
// granted: 1 granted, 0 exhausted, -1 no counter yet. The count is
// returned as the second value.
var takeScript = redis.NewScript(`
local n = redis.call('GET', KEYS[1])
if not n then return {-1, 0} end
n = tonumber(n)
if n >= tonumber(ARGV[1]) then return {0, n} end
return {1, redis.call('INCR', KEYS[1])}
`)

// addScript adds ARGV[1] to KEYS[1] if it exists: 1 added, -1 no counter.
var addScript = redis.NewScript(`
if redis.call('EXISTS', KEYS[1]) == 0 then return -1 end
redis.call('INCRBY', KEYS[1], ARGV[1])
return 1
`)

// visitsKey is the counter of a link's visits.
func visitsKey(code string) string { return "visits:" + code }

// Limiter grants visits of links with a maximum.
type Limiter struct {
	redis   *sentinel.Client
	counter Counter
	log     *slog.Logger
	m       *metrics

	mu     sync.Mutex
	seen   map[string]int64 // code -> Redis's count when last read
	owed   map[string]int64 // code -> visits granted without Redis, not yet added
	budget map[string]int64 // code -> visits granted without Redis in this outage
}

// New returns a Limiter on Redis through cfg (with a breaker of its own,
// shortener_visits_breaker) and counter for the counters Redis lacks.
func New(cfg sentinel.Config, counter Counter, log *slog.Logger, reg prometheus.Registerer) (*Limiter, error) {
	if err := cfg.Validate(); err != nil {
		return nil, fmt.Errorf("new visits limiter: %w", err)
	}
	m, err := newMetrics(reg)
	if err != nil {
		return nil, fmt.Errorf("new visits limiter: %w", err)
	}
	b := sentinel.NewBreaker(cfg, "visits", m.breaker, log)
	return &Limiter{
		redis: sentinel.NewClient(cfg, sentinel.Master, b), counter: counter, log: log, m: m,
		seen: map[string]int64{}, owed: map[string]int64{}, budget: map[string]int64{},
	}, nil
}

// Close closes the Limiter's Redis connections.
func (l *Limiter) Close() error { return l.redis.Close() }

// Take grants one visit of link: nil, ErrExhausted once it has had its
// MaxVisits, or an error wrapping shortener.ErrUnavailable when neither
// Redis nor this instance's budget can grant it. A link without a
// maximum is always granted.
func (l *Limiter) Take(ctx context.Context, link shortener.Link) error {
	if link.MaxVisits <= 0 {
		return nil
	}
	if l.redis.Breaker().Allow() {
		granted, err := l.takeRedis(ctx, link)
		if err == nil {
			l.m.take("redis", granted)
			if !granted {
				return ErrExhausted
			}
			return nil
		}
		l.log.Debug("visits: Redis unavailable; granting from the local budget", "code", link.Code, "err", err)
	}
	return l.takeLocal(link)
}

// takeRedis runs the take script, starting the counter from MySQL's
// count if Redis has none, after adding what this instance owes it.
func (l *Limiter) takeRedis(ctx context.Context, link shortener.Link) (bool, error) {
	if err := l.settle(ctx, link); err != nil {
		return false, err
	}
	for range 2 {
		res, err := sentinel.Run(ctx, l.redis, func(ctx context.Context, r *redis.Client) ([]int64, error) {
			return takeScript.Run(ctx, r, []string{visitsKey(link.Code)}, link.MaxVisits).Int64Slice()
		})
		if err != nil {
			return false, err
		}
		if res[0] >= 0 {
			l.mu.Lock()
			l.seen[link.Code] = res[1]
			delete(l.budget, link.Code) // Redis answers: the outage is over
			l.mu.Unlock()
			return res[0] == 1, nil
		}
		if err := l.seed(ctx, link); err != nil {
			return false, err
		}
	}
	return false, fmt.Errorf("visits of %s: the counter vanished twice", link.Code)
}

// seed starts link's counter from MySQL's click count, unless another
// instance started it first.
func (l *Limiter) seed(ctx context.Context, link shortener.Link) error {
	n, err := l.counter.ClickTotal(ctx, link.ID)
	if err != nil {
		return err
	}
	_, err = sentinel.Run(ctx, l.redis, func(ctx context.Context, r *redis.Client) (bool, error) {
		return r.SetNX(ctx, visitsKey(link.Code), n, 0).Result()
	})
	l.m.seeds.Inc()
	return err
}

// settle adds to link's counter the visits this instance granted while
// Redis was away.
func (l *Limiter) settle(ctx context.Context, link shortener.Link) error {
	l.mu.Lock()
	owed := l.owed[link.Code]
	delete(l.owed, link.Code) // taken out, so no other call adds them too
	l.mu.Unlock()
	if owed == 0 {
		return nil
	}
	giveBack := func() {
		l.mu.Lock()
		l.owed[link.Code] += owed
		l.mu.Unlock()
	}
	for range 2 {
		res, err := sentinel.Run(ctx, l.redis, func(ctx context.Context, r *redis.Client) (int64, error) {
			return addScript.Run(ctx, r, []string{visitsKey(link.Code)}, owed).Int64()
		})
		if err != nil {
			// Whether it was added is unknown. Owing it still may add it
			// twice (the link ends up to Budget visits early); dropping it
			// may lose it (up to Budget late). Early ends break the
			// promise that a link is never ended early: drop it, and
			// count the loss.
			l.m.lost.Add(float64(owed))
			return err
		}
		if res == 1 {
			return nil
		}
		if err := l.seed(ctx, link); err != nil {
			giveBack()
			return err
		}
	}
	giveBack()
	return fmt.Errorf("visits of %s: the counter vanished twice", link.Code)
}

// takeLocal grants a visit without Redis, within the budget.
func (l *Limiter) takeLocal(link shortener.Link) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	code := link.Code
	switch {
	case l.seen[code]+l.owed[code] >= link.MaxVisits:
		l.m.take("local", false)
		return ErrExhausted
	case l.budget[code] >= Budget:
		l.m.refused.Inc()
		return fmt.Errorf("visits of %s: Redis is unreachable and this instance's budget of %d is spent: %w", code, Budget, shortener.ErrUnavailable)
	}
	l.budget[code]++
	l.owed[code]++
	l.m.take("local", true)
	return nil
}

// metrics are the limiter's.
type metrics struct {
	takes   *prometheus.CounterVec
	seeds   prometheus.Counter
	refused prometheus.Counter
	lost    prometheus.Counter
	breaker *sentinel.Metrics
}

func newMetrics(reg prometheus.Registerer) (*metrics, error) {
	m := &metrics{
		takes: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "shortener_visits_takes_total",
			Help: "Visits of links with a maximum, by who decided (redis, local: this instance while Redis was away) and result (granted, exhausted).",
		}, []string{"by", "result"}),
		seeds: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "shortener_visits_seeds_total",
			Help: "Visit counters started in Redis from MySQL's click count.",
		}),
		refused: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "shortener_visits_refused_total",
			Help: "Visits refused (503) because Redis was unreachable and the instance's budget for the link was spent.",
		}),
	}
	m.lost = prometheus.NewCounter(prometheus.CounterOpts{
		Name: "shortener_visits_unsettled_total",
		Help: "Visits granted while Redis was away whose addition to Redis's counter failed midway: possibly not counted there (the link may allow that many more).",
	})
	var err error
	if m.breaker, err = sentinel.NewMetrics(reg, "shortener_visits_breaker", "the visit counters' Redis breaker"); err != nil {
		return nil, err
	}
	for _, by := range []string{"redis", "local"} {
		for _, r := range []string{"granted", "exhausted"} {
			m.takes.WithLabelValues(by, r)
		}
	}
	return m, errors.Join(reg.Register(m.takes), reg.Register(m.seeds), reg.Register(m.refused), reg.Register(m.lost))
}

func (m *metrics) take(by string, granted bool) {
	r := "exhausted"
	if granted {
		r = "granted"
	}
	m.takes.WithLabelValues(by, r).Inc()
}
