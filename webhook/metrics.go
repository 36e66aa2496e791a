package webhook

import (
	"errors"
	"fmt"

	"github.com/prometheus/client_golang/prometheus"
)

// Why an attempt failed, the failed attempts' reason label.
const (
	reasonStatus  = "status"  // the receiver answered, not 2xx (a 3xx included)
	reasonTimeout = "timeout" // no answer within the timeout
	reasonRefused = "refused" // the receiver's address is not allowed (Targets)
	reasonError   = "error"   // no connection, TLS, a reset: the request failed
)

// metrics are the sender's, registered on the registry New is given.
type metrics struct {
	delivered prometheus.Counter
	failed    *prometheus.CounterVec // by reason
	givenUp   prometheus.Counter
	pending   prometheus.Gauge
	attempt   prometheus.Histogram // an attempt's time
	delay     prometheus.Histogram // from the event's record to its delivery
}

func newMetrics(reg prometheus.Registerer) (*metrics, error) {
	m := &metrics{
		delivered: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "shortener_webhook_delivered_total",
			Help: "Webhook deliveries this instance made: answered 2xx by the receiver.",
		}),
		failed: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "shortener_webhook_failed_attempts_total",
			Help: "Webhook attempts that failed, each retried later, by reason: status (answered, not 2xx), timeout, refused (a receiver address not allowed), error (no connection, TLS).",
		}, []string{"reason"}),
		givenUp: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "shortener_webhook_given_up_total",
			Help: "Webhook deliveries given up: still failing when their event was older than the retry period (24 h by default).",
		}),
		pending: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "shortener_webhook_pending",
			Help: "Webhook deliveries owed, of every instance: recorded, not yet delivered or given up (read from MySQL every 10 s).",
		}),
		attempt: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "shortener_webhook_attempt_duration_seconds",
			Help:    "Time of one webhook attempt, from the request's start to the answer or the failure.",
			Buckets: []float64{.005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30},
		}),
		delay: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "shortener_webhook_delivery_delay_seconds",
			Help:    "Time from a webhook event's record to its delivery, retries included.",
			Buckets: []float64{.1, .25, .5, 1, 2.5, 5, 10, 30, 60, 300, 1800, 3600, 6 * 3600, 24 * 3600},
		}),
	}
	for _, r := range []string{reasonStatus, reasonTimeout, reasonRefused, reasonError} {
		m.failed.WithLabelValues(r)
	}
	if err := errors.Join(reg.Register(m.delivered), reg.Register(m.failed), reg.Register(m.givenUp),
		reg.Register(m.pending), reg.Register(m.attempt), reg.Register(m.delay)); err != nil {
		return nil, fmt.Errorf("webhook metrics: %w", err)
	}
	return m, nil
}
