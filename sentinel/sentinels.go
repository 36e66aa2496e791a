package sentinel

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"
)

// sentinelDeadline is how many Redis deadlines a question to a sentinel
// may take: a sentinel answers from memory, but several may be asked in
// turn, and a slow answer costs no lookup anything.
const sentinelDeadline = 4

// watchBuffer is how many events a sentinel's subscription holds for a
// slow receiver; events come a few per failover.
const watchBuffer = 64

// Sentinels asks the sentinels themselves about the master, and hears
// their events. It is safe for concurrent use.
type Sentinels struct {
	cfg     Config
	clients []*redis.SentinelClient // one per address, for questions
}

// NewSentinels returns clients of cfg's sentinels; they connect lazily.
func NewSentinels(cfg Config) *Sentinels {
	s := &Sentinels{cfg: cfg}
	d := cfg.Timeout * sentinelDeadline
	for _, addr := range cfg.SentinelAddrs {
		s.clients = append(s.clients, redis.NewSentinelClient(&redis.Options{
			Addr: addr, Password: cfg.SentinelPassword, DialTimeout: d,
			ReadTimeout: d, WriteTimeout: d, MaxRetries: -1, PoolSize: 2,
			ConnMaxIdleTime: time.Minute,
		}))
	}
	return s
}

// Close closes the clients' connections.
func (s *Sentinels) Close() error {
	var errs []error
	for _, sc := range s.clients {
		errs = append(errs, sc.Close())
	}
	return errors.Join(errs...)
}

// KnownReplicas asks the sentinels, one after another until one answers,
// how many replicas the master has, counting those that are down (which
// is where a partitioned old master is listed).
func (s *Sentinels) KnownReplicas(ctx context.Context) (int, error) {
	var errs []error
	for _, sc := range s.clients {
		ctx, cancel := context.WithTimeout(ctx, s.cfg.Timeout*sentinelDeadline)
		replicas, err := sc.Replicas(ctx, s.cfg.MasterName).Result()
		cancel()
		if err == nil {
			return len(replicas), nil
		}
		errs = append(errs, err)
	}
	return 0, fmt.Errorf("known replicas: %w", errors.Join(errs...))
}

// Watch subscribes to channels ("+switch-master", "+odown", ...) on every
// sentinel and hands each message to fn, until ctx ends. One sentinel
// would do, but any one may be down; so fn hears an event once per
// sentinel that saw it, and must be safe to call concurrently and more
// than once per event.
func (s *Sentinels) Watch(ctx context.Context, fn func(ctx context.Context, channel, payload string), channels ...string) {
	var wg sync.WaitGroup
	for _, addr := range s.cfg.SentinelAddrs {
		wg.Go(func() { s.watch(ctx, addr, fn, channels) })
	}
	wg.Wait()
}

// watch is Watch on the sentinel at addr, on a client of its own: a
// subscription holds its connection for good.
func (s *Sentinels) watch(ctx context.Context, addr string, fn func(context.Context, string, string), channels []string) {
	sc := redis.NewSentinelClient(&redis.Options{
		Addr:        addr,
		Password:    s.cfg.SentinelPassword,
		DialTimeout: s.cfg.Timeout * sentinelDeadline,
		MaxRetries:  -1,
	})
	defer sc.Close()
	ps := sc.Subscribe(ctx, channels...)
	defer ps.Close()
	// Events missed while a sentinel was out of reach are not replayed:
	// the breakers, not the events, are the final judge.
	receive(ctx, ps, watchBuffer, func(channel, payload string) { fn(ctx, channel, payload) }, nil)
}

// Ping sends a PING to the Redis node at addr directly (not through the
// sentinels), on a connection of its own, under one Redis deadline: it
// tells whether a node the sentinels named answers.
func (c Config) Ping(ctx context.Context, addr string) error {
	rdb := redis.NewClient(&redis.Options{
		Addr: addr, Password: c.Password, MaxRetries: -1,
		DialTimeout: c.Timeout, ReadTimeout: c.Timeout, WriteTimeout: c.Timeout,
		ContextTimeoutEnabled: true,
	})
	defer rdb.Close()
	ctx, cancel := context.WithTimeout(ctx, c.Timeout)
	defer cancel()
	return rdb.Ping(ctx).Err()
}
