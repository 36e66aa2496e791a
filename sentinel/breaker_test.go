package sentinel

import (
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"shortener/internal/poll"
)

var errDown = errors.New("down")

// newTestBreaker is a breaker that opens on 2 failures of the last 3
// calls and closes after 2 good trial calls, waiting delay in between,
// with its metrics.
func newTestBreaker(tb testing.TB, delay time.Duration) (*Breaker, *Metrics) {
	tb.Helper()
	m, err := NewMetrics(prometheus.NewRegistry(), "test_breaker", "the test's breaker", "b")
	if err != nil {
		tb.Fatal(err)
	}
	cfg := testConfig(func(c *Config) {
		c.BreakerFailures, c.BreakerWindow, c.BreakerSuccesses, c.BreakerDelay = 2, 3, 2, delay
	})
	return NewBreaker(cfg, "b", m, quietLog()), m
}

// call takes a permit and records err for it, failing the test when the
// breaker refuses.
func call(tb testing.TB, b *Breaker, err error) {
	tb.Helper()
	if !b.Allow() {
		tb.Fatalf("breaker %s refused a call, want it let through", b.State())
	}
	b.record(err)
}

// halfOpen waits, polling with a deadline, until the open breaker lets a
// trial call through, and records err for it.
func halfOpen(tb testing.TB, b *Breaker, err error) {
	tb.Helper()
	poll.Until(tb, "the open breaker to let a trial call through", func() error {
		if !b.Allow() {
			return fmt.Errorf("breaker %s", b.State())
		}
		return nil
	})
	b.record(err)
}

func countOf(m *Metrics, from, to string) float64 {
	return testutil.ToFloat64(m.transitions.WithLabelValues("b", from, to))
}

// step is one thing done to a breaker, and the state it must be in after.
type step struct {
	do   string // ok, fail: a call; trial ok, trial fail: once the delay is over; refused: a call it must refuse
	want string
}

// TestBreakerStates walks breakers that open on 2 failures of the last 3
// calls and close after 2 good trials through their states. With a delay
// of an hour an open breaker refuses every call; with a millisecond it
// turns half-open, a failed trial opens it again and two good ones close
// it. Each change is counted under its from and to.
func TestBreakerStates(t *testing.T) {
	tests := []struct {
		name  string
		delay time.Duration
		steps []step
		// transitions counted at the end, as from→to.
		want map[[2]string]float64
		// the state gauge at the end: 0 closed, 1 open, 2 half-open.
		gauge float64
	}{
		{
			name: "stays open through its delay", delay: time.Hour,
			steps: []step{{"ok", "closed"}, {"fail", "closed"}, {"fail", "open"}, {"refused", "open"}, {"refused", "open"}},
			want:  map[[2]string]float64{{"closed", "open"}: 1, {"open", "half-open"}: 0},
			gauge: 1,
		},
		{
			name: "half-opens after its delay", delay: time.Millisecond,
			steps: []step{
				{"fail", "closed"}, {"fail", "open"},
				{"trial fail", "open"},
				{"trial ok", "half-open"}, {"ok", "closed"},
			},
			want: map[[2]string]float64{
				{"closed", "open"}: 1, {"open", "half-open"}: 2, {"half-open", "open"}: 1, {"half-open", "closed"}: 1,
			},
			gauge: 0,
		},
	}
	for _, tt := range tests {
		b, m := newTestBreaker(t, tt.delay)
		for i, st := range tt.steps {
			switch st.do {
			case "ok":
				call(t, b, nil)
			case "fail":
				call(t, b, errDown)
			case "trial ok":
				halfOpen(t, b, nil)
			case "trial fail":
				halfOpen(t, b, errDown)
			case "refused":
				if b.Allow() {
					t.Fatalf("%s: step %d: an open breaker let a call through before its delay", tt.name, i)
				}
			}
			if got := b.State(); got != st.want {
				t.Fatalf("%s: step %d (%s): got %s, want %s", tt.name, i, st.do, got, st.want)
			}
		}
		for tr, want := range tt.want {
			if got := countOf(m, tr[0], tr[1]); got != want {
				t.Errorf("%s: %s→%s transitions: got %v, want %v", tt.name, tr[0], tr[1], got, want)
			}
		}
		if got := testutil.ToFloat64(m.state.WithLabelValues("b")); got != tt.gauge {
			t.Errorf("%s: state gauge: got %v, want %v", tt.name, got, tt.gauge)
		}
	}
}

// TestBreakerOpenAndClose: a Sentinel event may open or close a breaker
// ahead of what calls would show.
func TestBreakerOpenAndClose(t *testing.T) {
	b, m := newTestBreaker(t, time.Hour)
	b.Open()
	if b.Allow() || b.State() != "open" {
		t.Fatalf("after Open: got %s, want open and refusing", b.State())
	}
	b.Close()
	if !b.IsClosed() || !b.Allow() {
		t.Fatalf("after Close: got %s, want closed and letting calls through", b.State())
	}
	if got := countOf(m, "open", "closed"); got != 1 {
		t.Errorf("open→closed transitions: got %v, want 1", got)
	}
}
