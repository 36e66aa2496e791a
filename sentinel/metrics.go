package sentinel

import (
	"fmt"

	"github.com/failsafe-go/failsafe-go/circuitbreaker"
	"github.com/prometheus/client_golang/prometheus"
)

// Metrics are one family of breakers' state gauge and transition counter:
// <name>_state (0 closed, 1 open, 2 half-open) and
// <name>_transitions_total{from,to}. A family of several breakers labels
// both by breaker; a family of one has no breaker label. The chaos runs,
// the dashboards and the alerts read them by these names and labels.
type Metrics struct {
	labelled    bool
	state       *prometheus.GaugeVec   // [breaker]
	transitions *prometheus.CounterVec // [breaker,] from, to
}

// changes are the state changes a breaker makes; each starts at zero
// so that dashboards and alerts over them have a series before the first
// failover.
var changes = [][2]string{{"closed", "open"}, {"open", "half-open"}, {"half-open", "closed"}, {"half-open", "open"}}

// NewMetrics registers on reg the metrics of the breakers named breakers,
// labelled {breaker="<name>"}, or, when none are named, of a single
// breaker with no label. what says in the help text whose breakers they
// are.
func NewMetrics(reg prometheus.Registerer, name, what string, breakers ...string) (*Metrics, error) {
	var labels []string
	if len(breakers) > 0 {
		labels = []string{"breaker"}
	}
	m := &Metrics{
		labelled: len(breakers) > 0,
		state: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: name + "_state",
			Help: "State of " + what + ": 0 closed, 1 open, 2 half-open.",
		}, labels),
		transitions: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: name + "_transitions_total",
			Help: "State changes of " + what + ".",
		}, append(labels, "from", "to")),
	}
	for _, c := range []prometheus.Collector{m.state, m.transitions} {
		if err := reg.Register(c); err != nil {
			return nil, fmt.Errorf("register %s metrics: %w", name, err)
		}
	}
	if !m.labelled {
		breakers = []string{""}
	}
	for _, b := range breakers {
		m.state.WithLabelValues(m.labels(b)...)
		for _, t := range changes {
			m.transitions.WithLabelValues(m.labels(b, t[0], t[1])...)
		}
	}
	return m, nil
}

// labels are the label values of breaker's series, then rest.
func (m *Metrics) labels(breaker string, rest ...string) []string {
	if !m.labelled {
		return rest
	}
	return append([]string{breaker}, rest...)
}

// changed records that breaker went from one state to another.
func (m *Metrics) changed(breaker string, from, to circuitbreaker.State) {
	m.transitions.WithLabelValues(m.labels(breaker, from.String(), to.String())...).Inc()
	m.state.WithLabelValues(m.labels(breaker)...).Set(float64(to))
}
