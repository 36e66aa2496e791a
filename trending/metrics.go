package trending

import (
	"errors"

	"github.com/prometheus/client_golang/prometheus"

	"shortener/sentinel"
)

// metrics are what the chaos runs and tests read to see trending's state.
type metrics struct {
	breaker  *sentinel.Metrics
	batches  *prometheus.CounterVec // result: applied, duplicate, error
	queued   prometheus.Gauge
	dropped  prometheus.Counter
	local    prometheus.Gauge
	removed  prometheus.Counter
	setAside prometheus.Counter
	ignored  *prometheus.CounterVec // reason: bot, repeat, overflow
}

func newMetrics(reg prometheus.Registerer) (*metrics, error) {
	m := &metrics{
		batches: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "shortener_trending_batches_total",
			Help: "Click batches sent to Redis's trending sets, by result: applied, duplicate (already applied: a replay), error.",
		}, []string{"result"}),
		queued: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "shortener_trending_queued_slots",
			Help: "Link-minutes counted locally and not yet merged into Redis.",
		}),
		dropped: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "shortener_trending_dropped_clicks_total",
			Help: "Clicks left out of the merge-back because the local queue was full.",
		}),
		local: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "shortener_trending_local",
			Help: "1 while trending answers come from the local top-K, 0 while from Redis.",
		}),
		removed: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "shortener_trending_removed_total",
			Help: "Deleted or expired links removed from Redis's trending sets.",
		}),
		// The file label is a constant label so that another package may
		// register the same name for its own state file (with the same
		// help text), and so that the series reads 0 from the start.
		setAside: prometheus.NewCounter(prometheus.CounterOpts{
			Name:        "shortener_state_files_set_aside_total",
			Help:        "State files found unreadable or invalid at start and not used (moved to <file>.corrupt-<UTC time> where possible); the log says why.",
			ConstLabels: prometheus.Labels{"file": "trending_spool"},
		}),
		ignored: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "shortener_trending_clicks_ignored_total",
			Help: "Clicks not counted for trending, by reason: bot (the agent is a bot), repeat (the same client on the same link in the same minute). overflow counts clicks counted without the repeat check (the minute's set of pairs was full).",
		}, []string{"reason"}),
	}
	for _, r := range []string{"bot", "repeat", "overflow"} {
		m.ignored.WithLabelValues(r)
	}
	for _, c := range []prometheus.Collector{m.batches, m.queued, m.dropped, m.local, m.removed, m.setAside, m.ignored} {
		if err := reg.Register(c); err != nil {
			return nil, errors.Join(errors.New("register trending metrics"), err)
		}
	}
	// One breaker, so no breaker label: shortener_trending_breaker_state
	// and shortener_trending_breaker_transitions_total{from,to}.
	var err error
	if m.breaker, err = sentinel.NewMetrics(reg, "shortener_trending_breaker", "trending's Redis breaker"); err != nil {
		return nil, err
	}
	return m, nil
}
