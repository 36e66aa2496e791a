package sentinel

import (
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
)

// TestMetricsNamesAndLabels pins what the dashboards, the alerts and the
// chaos runs read: the lookup path's two breakers labelled by breaker,
// trending's one without a label, every series present from the start.
func TestMetricsNamesAndLabels(t *testing.T) {
	tests := []struct {
		name, prefix, what string
		breakers           []string
		want               string
	}{
		{
			name: "a family of two", prefix: "shortener_breaker", what: "the lookup path's breakers",
			breakers: []string{"read", "write"},
			want: `
# HELP shortener_breaker_state State of the lookup path's breakers: 0 closed, 1 open, 2 half-open.
# TYPE shortener_breaker_state gauge
shortener_breaker_state{breaker="read"} 0
shortener_breaker_state{breaker="write"} 0
# HELP shortener_breaker_transitions_total State changes of the lookup path's breakers.
# TYPE shortener_breaker_transitions_total counter
shortener_breaker_transitions_total{breaker="read",from="closed",to="open"} 0
shortener_breaker_transitions_total{breaker="read",from="half-open",to="closed"} 0
shortener_breaker_transitions_total{breaker="read",from="half-open",to="open"} 0
shortener_breaker_transitions_total{breaker="read",from="open",to="half-open"} 0
shortener_breaker_transitions_total{breaker="write",from="closed",to="open"} 0
shortener_breaker_transitions_total{breaker="write",from="half-open",to="closed"} 0
shortener_breaker_transitions_total{breaker="write",from="half-open",to="open"} 0
shortener_breaker_transitions_total{breaker="write",from="open",to="half-open"} 0
`,
		},
		{
			name: "a family of one", prefix: "shortener_trending_breaker", what: "trending's breaker",
			want: `
# HELP shortener_trending_breaker_state State of trending's breaker: 0 closed, 1 open, 2 half-open.
# TYPE shortener_trending_breaker_state gauge
shortener_trending_breaker_state 0
# HELP shortener_trending_breaker_transitions_total State changes of trending's breaker.
# TYPE shortener_trending_breaker_transitions_total counter
shortener_trending_breaker_transitions_total{from="closed",to="open"} 0
shortener_trending_breaker_transitions_total{from="half-open",to="closed"} 0
shortener_trending_breaker_transitions_total{from="half-open",to="open"} 0
shortener_trending_breaker_transitions_total{from="open",to="half-open"} 0
`,
		},
	}
	for _, tt := range tests {
		reg := prometheus.NewRegistry()
		if _, err := NewMetrics(reg, tt.prefix, tt.what, tt.breakers...); err != nil {
			t.Fatalf("%s: %v", tt.name, err)
		}
		if err := testutil.GatherAndCompare(reg, strings.NewReader(tt.want)); err != nil {
			t.Errorf("%s: %v", tt.name, err)
		}
		// A second family of the same name on the same registry is a
		// wiring mistake, reported rather than panicked on.
		if _, err := NewMetrics(reg, tt.prefix, tt.what, tt.breakers...); err == nil {
			t.Errorf("%s: registered twice, want an error", tt.name)
		}
	}
}
