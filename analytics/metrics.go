package analytics

import (
	"github.com/prometheus/client_golang/prometheus"
)

// The Enricher is a prometheus.Collector: the program registers it
// (reg.MustRegister(e)), and a scrape reads its state as it is then. New
// keeps the signature the handler's wiring was written against, and
// nothing on the redirect path updates a metric.
var (
	descEnabled = prometheus.NewDesc("shortener_analytics_enabled",
		"1 while clicks get analytics dimensions (country, agent, visitor), 0 when the privacy switch has them off.", nil, nil)
	descKeyLocal = prometheus.NewDesc("shortener_analytics_visitor_key_local",
		"1 while the visitor key of the current UTC day is this instance's own rather than the shared one (MySQL has not answered): that day's unique visitors may be over-counted across instances.", nil, nil)
	descKeyErrors = prometheus.NewDesc("shortener_analytics_visitor_key_errors_total",
		"Failed fetches of a day's shared visitor key (each retried, a local key in use meanwhile).", nil, nil)
	descParses = prometheus.NewDesc("shortener_analytics_agent_parses_total",
		"User-Agent headers parsed: the agent cache's misses.", nil, nil)
	descGeoBuilt = prometheus.NewDesc("shortener_analytics_geo_build_timestamp_seconds",
		"When the country database in use was built (Unix seconds); absent without one. DB-IP's Lite database is updated monthly.", nil, nil)
)

// Describe sends the descriptions of the Enricher's metrics.
func (e *Enricher) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{descEnabled, descKeyLocal, descKeyErrors, descParses, descGeoBuilt} {
		ch <- d
	}
}

// Collect sends the Enricher's metrics as they are now.
func (e *Enricher) Collect(ch chan<- prometheus.Metric) {
	ch <- prometheus.MustNewConstMetric(descEnabled, prometheus.GaugeValue, b2f(e.cfg.Enabled))
	ch <- prometheus.MustNewConstMetric(descKeyLocal, prometheus.GaugeValue, b2f(e.cfg.Enabled && e.localKey()))
	ch <- prometheus.MustNewConstMetric(descKeyErrors, prometheus.CounterValue, float64(e.fetchErrors.Load()))
	var parses uint64
	if e.agents != nil {
		parses = e.agents.parses.Load()
	}
	ch <- prometheus.MustNewConstMetric(descParses, prometheus.CounterValue, float64(parses))
	if e.geo != nil {
		ch <- prometheus.MustNewConstMetric(descGeoBuilt, prometheus.GaugeValue, float64(e.geo.built.Unix()))
	}
}

var _ prometheus.Collector = (*Enricher)(nil)

func b2f(b bool) float64 {
	if b {
		return 1
	}
	return 0
}
