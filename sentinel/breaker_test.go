package sentinel

import (
	"errors"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
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
	for deadline := time.Now().Add(10 * time.Second); !b.Allow(); time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			tb.Fatalf("breaker still %s 10 s after a delay of 1 ms", b.State())
		}
	}
	b.record(err)
}

func countOf(m *Metrics, from, to string) float64 {
	return testutil.ToFloat64(m.transitions.WithLabelValues("b", from, to))
}

// TestBreakerStaysOpen: failures open the breaker, and while its delay
// lasts it refuses every call.
func TestBreakerStaysOpen(t *testing.T) {
	b, m := newTestBreaker(t, time.Hour)
	call(t, b, nil)
	call(t, b, errDown)
	if got := b.State(); got != "closed" {
		t.Fatalf("after 1 failure of 2 calls: got %s, want closed", got)
	}
	call(t, b, errDown)
	if got := b.State(); got != "open" {
		t.Fatalf("after 2 failures of 3 calls: got %s, want open", got)
	}
	for range 10 {
		if b.Allow() {
			t.Fatal("an open breaker let a call through before its delay")
		}
	}
	if got := testutil.ToFloat64(m.state.WithLabelValues("b")); got != 1 {
		t.Errorf("state gauge: got %v, want 1 (open)", got)
	}
	if got := countOf(m, "closed", "open"); got != 1 {
		t.Errorf("closed→open transitions: got %v, want 1", got)
	}
}

// TestBreakerHalfOpens walks a breaker through each state with a delay of
// a millisecond: open, half-open after the delay, open again on a failed
// trial, then closed after enough good ones. Each step is counted.
func TestBreakerHalfOpens(t *testing.T) {
	b, m := newTestBreaker(t, time.Millisecond)
	call(t, b, errDown)
	call(t, b, errDown)
	if got := b.State(); got != "open" {
		t.Fatalf("after 2 failures: got %s, want open", got)
	}
	// A failed trial opens it again at once.
	halfOpen(t, b, errDown)
	if got := b.State(); got != "open" {
		t.Fatalf("after a failed trial: got %s, want open", got)
	}
	// One good trial is not enough to close it; two are.
	halfOpen(t, b, nil)
	if got := b.State(); got != "half-open" {
		t.Fatalf("after 1 good trial of 2: got %s, want half-open", got)
	}
	call(t, b, nil)
	if got := b.State(); got != "closed" || !b.IsClosed() {
		t.Fatalf("after 2 good trials: got %s, want closed", got)
	}
	for _, tt := range []struct {
		from, to string
		want     float64
	}{
		{"closed", "open", 1}, {"open", "half-open", 2}, {"half-open", "open", 1}, {"half-open", "closed", 1},
	} {
		if got := countOf(m, tt.from, tt.to); got != tt.want {
			t.Errorf("%s→%s transitions: got %v, want %v", tt.from, tt.to, got, tt.want)
		}
	}
	if got := testutil.ToFloat64(m.state.WithLabelValues("b")); got != 0 {
		t.Errorf("state gauge: got %v, want 0 (closed)", got)
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
