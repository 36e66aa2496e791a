package sentinel

import (
	"context"
	"log/slog"

	"github.com/failsafe-go/failsafe-go/circuitbreaker"
)

// Breaker is a circuit breaker in front of one route into Redis. It is
// safe for concurrent use. A caller asks Allow before a call and records
// the call's outcome exactly once (Run does both halves' bookkeeping).
type Breaker struct {
	cb circuitbreaker.CircuitBreaker[any]
}

// NewBreaker returns a closed breaker tuned by cfg's Breaker fields. Its
// state changes are counted on m under name, and logged: a warning when
// it stops calls, information when it lets them through again.
func NewBreaker(cfg Config, name string, m *Metrics, log *slog.Logger) *Breaker {
	cb := circuitbreaker.NewBuilder[any]().
		WithFailureThresholdRatio(cfg.BreakerFailures, cfg.BreakerWindow).
		WithDelay(cfg.BreakerDelay).
		WithSuccessThreshold(cfg.BreakerSuccesses).
		OnStateChanged(func(e circuitbreaker.StateChangedEvent) {
			m.changed(name, e.OldState, e.NewState)
			level := slog.LevelWarn
			if e.NewState == circuitbreaker.ClosedState {
				level = slog.LevelInfo
			}
			// e.Metrics() is not read here: failsafe-go v0.9.8 hands the
			// listener stats that other goroutines keep writing (the race
			// detector reports it), so the log names the states only.
			log.Log(context.Background(), level, "redis breaker state changed", "breaker", name,
				"from", e.OldState.String(), "to", e.NewState.String())
		}).
		Build()
	return &Breaker{cb: cb}
}

// Allow reports whether the breaker lets a call through now. A true
// answer is a permit: exactly one outcome must be recorded for it (Run
// records it). While open, it refuses until BreakerDelay has passed, then
// turns half-open and lets BreakerSuccesses trial calls through.
func (b *Breaker) Allow() bool { return b.cb.TryAcquirePermit() }

// IsClosed reports whether the breaker is closed: every call goes through.
func (b *Breaker) IsClosed() bool { return b.cb.IsClosed() }

// Open stops calls now, ahead of what failures would show (a Sentinel
// event said the node is down).
func (b *Breaker) Open() { b.cb.Open() }

// Close lets every call through again now (a Sentinel event said a
// healthy node took over).
func (b *Breaker) Close() { b.cb.Close() }

// State names the breaker's state: closed, open or half-open.
func (b *Breaker) State() string { return b.cb.State().String() }

// record counts one permitted call's outcome: err nil is a success.
func (b *Breaker) record(err error) {
	if err == nil {
		b.cb.RecordSuccess()
		return
	}
	b.cb.RecordFailure()
}
