package cache

import (
	"context"
	"errors"
	"log/slog"
	"time"

	"github.com/failsafe-go/failsafe-go/circuitbreaker"
	"github.com/redis/go-redis/v9"
)

// Breaker and role names, used in metrics and logs.
const (
	breakerRead  = "read"  // lookups, served by the replicas
	breakerWrite = "write" // fills, deletes and messages, sent to the master
	roleReplica  = "replica"
	roleMaster   = "master"
)

// node is one route into the Sentinel group (the master, or the replicas)
// with its own breaker: a dead master must not stop lookups that the
// replicas can answer, and a dead replica must not stop fills.
type node struct {
	name    string
	rdb     *redis.Client
	breaker circuitbreaker.CircuitBreaker[any]
	timeout time.Duration
}

// newNode builds a failover client for the master, or for the replicas when
// replicas is set. go-redis asks the sentinels for the address at every
// dial; for replicas it picks a random one the sentinels consider healthy
// and falls back to the master when they list none.
func newNode(name string, cfg Config, replicas bool, m *metrics, log *slog.Logger) *node {
	n := &node{name: name, timeout: cfg.Timeout}
	n.rdb = redis.NewFailoverClient(&redis.FailoverOptions{
		MasterName:    cfg.MasterName,
		SentinelAddrs: cfg.SentinelAddrs,
		Password:      cfg.Password,
		ReplicaOnly:   replicas,
		// One deadline per call, enforced on the socket: a breaker or a
		// timeout wrapper alone cannot unblock a read on a frozen master.
		ContextTimeoutEnabled: true,
		DialTimeout:           cfg.Timeout,
		ReadTimeout:           cfg.Timeout,
		WriteTimeout:          cfg.Timeout,
		PoolTimeout:           cfg.Timeout,
		// No retries: a retry would make one lookup wait several deadlines.
		MaxRetries:    -1,
		DialerRetries: 1,
		PoolSize:      cfg.PoolSize,
		MinIdleConns:  2,
	})
	n.breaker = circuitbreaker.NewBuilder[any]().
		WithFailureThresholdRatio(cfg.BreakerFailures, cfg.BreakerWindow).
		WithDelay(cfg.BreakerDelay).
		WithSuccessThreshold(cfg.BreakerSuccesses).
		OnStateChanged(func(e circuitbreaker.StateChangedEvent) {
			m.transitions.WithLabelValues(name, e.OldState.String(), e.NewState.String()).Inc()
			m.state.WithLabelValues(name).Set(float64(e.NewState))
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
	return n
}

// allow reports whether the breaker lets a call through now; a true
// answer must be followed by exactly one call to run.
func (n *node) allow() bool { return n.breaker.TryAcquirePermit() }

// run executes one command under its own deadline and records the outcome
// in the breaker. The deadline is detached from the caller's cancellation:
// a client that hangs up must not count against Redis.
func run[T any](ctx context.Context, n *node, fn func(context.Context, *redis.Client) (T, error)) (T, error) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), n.timeout)
	defer cancel()
	v, err := fn(ctx, n.rdb)
	if err == nil || errors.Is(err, redis.Nil) {
		n.breaker.RecordSuccess()
	} else {
		n.breaker.RecordFailure()
	}
	return v, err
}

// state names the breaker's state: closed, open or half-open.
func (n *node) state() string { return n.breaker.State().String() }
