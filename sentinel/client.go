package sentinel

import (
	"context"
	"errors"
	"time"

	"github.com/redis/go-redis/v9"
)

// Route is which nodes of the Sentinel group a Client sends commands to.
type Route int

const (
	// Master takes writes, and reads that must see them (replicas lag).
	Master Route = iota
	// Replicas takes reads: a random replica the sentinels consider
	// healthy, or the master when they list none.
	Replicas
)

// minIdle is how many connections each client keeps open while idle
// (never more than its pool), so the first calls after a quiet spell do
// not pay a dial.
const minIdle = 2

// Client is one route into the Sentinel group with its own breaker: a
// dead master must not stop reads that the replicas can answer, and one
// consumer's sick traffic must not open another's breaker. It is safe for
// concurrent use; Redis is connected lazily.
type Client struct {
	rdb     *redis.Client
	breaker *Breaker
	timeout time.Duration
}

// NewClient returns a client of route, its calls judged by breaker.
// go-redis asks the sentinels for the node's address at every dial, so it
// follows a failover on the next connection it makes.
func NewClient(cfg Config, route Route, breaker *Breaker) *Client {
	rdb := redis.NewFailoverClient(&redis.FailoverOptions{
		MasterName:       cfg.MasterName,
		SentinelAddrs:    cfg.SentinelAddrs,
		Password:         cfg.Password,
		SentinelPassword: cfg.SentinelPassword,
		ReplicaOnly:      route == Replicas,
		// One deadline per call, enforced on the socket: a breaker or a
		// timeout wrapper alone cannot unblock a read on a frozen master.
		ContextTimeoutEnabled: true,
		DialTimeout:           cfg.Timeout,
		ReadTimeout:           cfg.Timeout,
		WriteTimeout:          cfg.Timeout,
		PoolTimeout:           cfg.Timeout,
		// No retries: a retry would make one call wait several deadlines.
		MaxRetries:    -1,
		DialerRetries: 1,
		PoolSize:      cfg.PoolSize,
		MinIdleConns:  minIdle,
	})
	return &Client{rdb: rdb, breaker: breaker, timeout: cfg.Timeout}
}

// Breaker is the client's breaker.
func (c *Client) Breaker() *Breaker { return c.breaker }

// Redis is the go-redis client, for what does not go through the breaker:
// a subscription, a dedicated connection, a probe. It must not leave the
// package that asked for it.
func (c *Client) Redis() *redis.Client { return c.rdb }

// Close closes the client's connections.
func (c *Client) Close() error { return c.rdb.Close() }

// Run executes fn under the client's deadline, detached from the caller's
// cancellation (a client that hangs up must not count against Redis), and
// records the outcome in the breaker: a success, or a miss (redis.Nil, an
// answer), or a refusal for want of memory (an answer too: Full), or a
// failure. fn's error is returned as it is. The caller must hold a permit
// from c.Breaker().Allow.
func Run[T any](ctx context.Context, c *Client, fn func(context.Context, *redis.Client) (T, error)) (T, error) {
	return RunN(ctx, c, 1, time.Time{}, fn)
}

// RunN is Run for a call that stands for n callers' calls (an MGET of n
// lookups' keys), due by deadline if that is before the client's own
// deadline from now (the zero time: no earlier): while the breaker is
// closed its outcome counts n times, so the breaker opens after as many
// failed lookups as it would if each had made its own call; half-open,
// it counts once, as the trial call its permit allowed.
func RunN[T any](ctx context.Context, c *Client, n int, deadline time.Time, fn func(context.Context, *redis.Client) (T, error)) (T, error) {
	due := time.Now().Add(c.timeout)
	if !deadline.IsZero() && deadline.Before(due) {
		due = deadline
	}
	ctx, cancel := context.WithDeadline(context.WithoutCancel(ctx), due)
	defer cancel()
	v, err := fn(ctx, c.rdb)
	outcome := err
	if err != nil && (errors.Is(err, redis.Nil) || Full(err)) {
		outcome = nil
	}
	c.breaker.record(outcome)
	for range n - 1 {
		if !c.breaker.IsClosed() {
			break
		}
		c.breaker.record(outcome)
	}
	return v, err
}

// Full reports whether err is Redis refusing a write for want of memory
// (maxmemory under noeviction): OOM, or EXECABORT for a transaction one of
// whose commands it refused, as it refuses every command queued in a
// transaction then. The server answered, at once, and still takes what
// needs no memory outside a transaction (a DEL, a PUBLISH), so it is not a
// failure for the breaker: the breaker stops waiting on a master that does
// not answer, and an open one would stop those too.
func Full(err error) bool {
	return redis.HasErrorPrefix(err, "OOM") || redis.HasErrorPrefix(err, "EXECABORT")
}
