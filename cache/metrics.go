package cache

import "github.com/prometheus/client_golang/prometheus"

// metrics counts what each tier of the lookup path did. They are the
// evidence the chaos runs and tests read: "lookups went back to Redis" is
// a counter moving, not a sleep.
type metrics struct {
	redis       *prometheus.CounterVec // result: hit, miss, error, skipped
	origin      *prometheus.CounterVec // result: found, not_found, error
	fills       *prometheus.CounterVec // result: ok, error, skipped
	transitions *prometheus.CounterVec // from, to
	state       prometheus.Gauge       // 0 closed, 1 open, 2 half-open
}

func newMetrics(reg prometheus.Registerer) (*metrics, error) {
	m := &metrics{
		redis: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "shortener_redis_lookups_total",
			Help: "Redis lookups by result: hit, miss, error, or skipped because the breaker was not closed.",
		}, []string{"result"}),
		origin: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "shortener_mysql_lookups_total",
			Help: "Lookups that reached MySQL, by result.",
		}, []string{"result"}),
		fills: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "shortener_redis_fills_total",
			Help: "Writes of a link into Redis after a miss or a create, by result.",
		}, []string{"result"}),
		transitions: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "shortener_breaker_transitions_total",
			Help: "Redis circuit breaker state changes.",
		}, []string{"from", "to"}),
		state: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "shortener_breaker_state",
			Help: "Redis circuit breaker state: 0 closed, 1 open, 2 half-open.",
		}),
	}
	for _, c := range []prometheus.Collector{m.redis, m.origin, m.fills, m.transitions, m.state} {
		if err := reg.Register(c); err != nil {
			return nil, err
		}
	}
	// Start every series at zero so a scrape shows them before they move.
	for _, r := range []string{"hit", "miss", "error", "skipped"} {
		m.redis.WithLabelValues(r)
	}
	for _, r := range []string{"found", "not_found", "error"} {
		m.origin.WithLabelValues(r)
	}
	for _, r := range []string{"ok", "error", "skipped"} {
		m.fills.WithLabelValues(r)
	}
	return m, nil
}
